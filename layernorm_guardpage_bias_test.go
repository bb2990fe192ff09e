//go:build linux || darwin

package rmsnorm

import (
	"fmt"
	"testing"
)

// LayerNorm under guard pages (guardpage_test.go): every buffer of the call, the bias and Mean
// included, flush against an inaccessible page, so that a kernel reading or writing one element
// outside them faults; and the bits of the generic kernel.

func TestGuardPagesLayerNorm(t *testing.T) {
	const rows, gap = 3, 3
	dims := []int{1, 2, 3, 5, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 255, 256, 257, 300, 511, 512, 513, 4097}
	maxFloats := (rows-1)*(4097+gap) + 4097
	regions := make([]*guardedRegion, 7) // x, dst, residual, weight, bias, inv, mean
	for i := range regions {
		regions[i] = newGuardedRegion(t, maxFloats)
	}
	runs := 0
	for _, k := range testKernels() {
		for di, d := range dims {
			for fi, f := range layerFormats {
				for _, atEnd := range []bool{true, false} {
					i := di + fi
					lc := lcase{f: f, mode: weightMode(i % 3), center: layerForms[i%3].center, bias: layerForms[i%3].bias,
						residual: (i/3)%2 == 0, inv: true, mean: layerForms[i%3].center, strided: atEnd,
						rn: i%2 == 0 && f.out() != formatF32 && i%3 != 2, wclass: classNormal, bclass: classNormal, resClass: classNormal}
					if atEnd {
						lc.gap, lc.dgap = gap, gap+i%2
					}
					x, res, w, b := layerInputs(seedFor(d, i, 35), lc, d, rows, classNormal)
					want := runLayer(t, kernelGeneric, lc, d, rows, x, res, w, b, 1e-5, 0)
					var got layerOut
					var faulted, excused bool
					var ends []uintptr // the guards after the 16-bit buffers, X and Residual, or Dst
					if lc.f.in() != formatF32 {
						ends = append(ends, regions[0].endGuard(), regions[2].endGuard())
					}
					if lc.f.out() != formatF32 {
						ends = append(ends, regions[1].endGuard())
					}
					withStreaming((d+i)%2 == 0, func() {
						faulted, excused = bochsFault(k, func() { got = runLayerPaged(k, lc, d, rows, x, res, w, b, regions, atEnd) }, ends...)
					})
					ctx := fmt.Sprintf("%s %s d=%d atEnd=%v", k, lc, d, atEnd)
					if faulted && !excused {
						t.Fatalf("%s: the kernel touched a guard page", ctx)
					}
					if excused || bochsChains(k, lc.f, lc.residual, lc.rn && lc.mode != unweighted) {
						continue // the call ran under the guards; its values carry Bochs's rounding
					}
					sameOut(t, ctx, bochsOut(lc.f, got, want), want)
					runs++
				}
			}
		}
	}
	t.Logf("%d LayerNorm runs under guard pages", runs)
}

// runLayerPaged runs c with kernel k, every buffer in its own region flush against a guard
// (after its end with atEnd, else before its start), and returns the outputs as runLayer does.
func runLayerPaged(k kernelID, c lcase, d, rows int, x, res, w, b []float32, regions []*guardedRegion, atEnd bool) layerOut {
	switch c.f {
	case formatF32:
		return runLayerPagedOf[float32, float32](k, c, d, rows, x, res, w, b, regions, atEnd)
	case formatBF16, formatF16:
		return runLayerPagedOf[uint16, uint16](k, c, d, rows, x, res, w, b, regions, atEnd)
	}
	return runLayerPagedOf[uint16, float32](k, c, d, rows, x, res, w, b, regions, atEnd)
}

func runLayerPagedOf[D, T elem](k kernelID, c lcase, d, rows int, x, res, w, b []float32, regions []*guardedRegion, atEnd bool) layerOut {
	stride, dstStride := d+c.gap, d+c.dgap
	span, dspan := (rows-1)*stride+d, (rows-1)*dstStride+d
	xs := regionSlice[T](regions[0], span, atEnd)
	dst := regionSlice[D](regions[1], dspan, atEnd)
	for r := range rows {
		for i := range d {
			xs[r*stride+i] = toElem[T](c.f, x[r*d+i])
		}
	}
	rr := rowsOf[D, T]{Dst: dst, X: xs}
	if c.strided {
		rr.N, rr.Stride, rr.DstStride = rows, stride, dstStride
	}
	var rs []T
	if c.residual {
		rs = regionSlice[T](regions[2], span, atEnd)
		for r := range rows {
			for i := range d {
				rs[r*stride+i] = toElem[T](c.f, res[r*d+i])
			}
		}
		rr.Residual = rs
	}
	n := Norm{Dim: d, Eps: 1e-5, Center: c.center, RoundNormalized: c.rn}
	if c.mode != unweighted {
		n.Weight, n.Dim, n.UnitOffset = regionSlice[float32](regions[3], d, atEnd), 0, c.mode == offset
		copy(n.Weight, w)
	}
	if c.bias {
		n.Bias = regionSlice[float32](regions[4], d, atEnd)
		copy(n.Bias, b)
	}
	if c.inv {
		rr.Inv = regionSlice[float32](regions[5], rows, atEnd)
	}
	if c.mean {
		rr.Mean = regionSlice[float32](regions[6], rows, atEnd)
	}
	if !applyRows(&n, &rr, c.f, k) {
		panic(explainApply(&n, &names{"LayerNorm guard test", "Dst", "X", "Weight", "Eps"}, &rr))
	}
	var out layerOut
	for r := range rows {
		for i := range d {
			out.dst = append(out.dst, fromElem(c.f, dst[r*dstStride+i]))
			if rs != nil {
				out.res = append(out.res, fromElem(c.f, rs[r*stride+i]))
			}
		}
	}
	if c.inv {
		out.inv = append([]float32(nil), rr.Inv...)
	}
	if c.mean {
		out.mean = append([]float32(nil), rr.Mean...)
	}
	return out
}
