//go:build linux || darwin

package rmsnorm

import (
	"fmt"
	"testing"
)

// TestGuardPagesStreamed16 runs RMSNorm's 16-bit rows through the kernels' non-temporal scale
// loops (withStreaming) with x, the residual, the weight and dst against a guard page at their end
// and, a few elements in, at their start: in every weight form, with and without RoundNormalized
// and a residual, in place and not. The AVX-512 scale loops widen x one iteration ahead
// (convertsAhead in the generator) and the non-temporal one serves every weight form; rows whose
// dst does not start on a vector boundary enter it after a head of ordinary stores, at an element
// other than 0. A read ahead past the row, or before it, faults; the bits are generic's.
func TestGuardPagesStreamed16(t *testing.T) {
	const rows = 2
	dims := []int{1, 63, 64, 65, 127, 128, 129, 191, 192, 200, 255, 256, 257, 300, 4095, 4096, 4097}
	if matrixSize() == "tiny" { // emulators (Bochs): one short and one long block past each edge
		dims = []int{1, 64, 65, 129, 200, 257}
	}
	const shift = 3 // elements between the start guard and a slice placed against it
	maxElems := rows*dims[len(dims)-1] + shift
	rx, rr, rw, rd := newGuardedRegion(t, maxElems), newGuardedRegion(t, maxElems), newGuardedRegion(t, maxElems), newGuardedRegion(t, maxElems)
	// place returns n elements against the end guard, or shift elements after the start guard.
	place := func(g *guardedRegion, n int, atEnd bool) []uint16 {
		if atEnd {
			return regionSlice[uint16](g, n, true)
		}
		return regionSlice[uint16](g, n+shift, false)[shift:]
	}
	forms := []struct {
		name   string
		weight bool
		offset bool
		rn     bool
	}{{"weight", true, false, false}, {"offset", true, true, false}, {"none", false, false, false}, {"weight+RN", true, false, true}, {"offset+RN", true, true, true}}
	runs := 0
	for _, k := range testKernels() {
		for _, f := range formats16 {
			for _, d := range dims {
				x := rowsIn[uint16](f, normalRows(d, rows, 41))
				res := rowsIn[uint16](f, normalRows(d, rows, 42))
				w := normalRows(d, 1, 43)
				for _, form := range forms {
					n := Norm{Eps: 1e-6, UnitOffset: form.offset, RoundNormalized: form.rn}
					if form.weight {
						n.Weight = w
					} else {
						n.Dim = d
					}
					for _, residual := range []bool{false, true} {
						for _, inPlace := range []bool{false, true} {
							// generic's bits: dst, and with a residual the updated stream.
							wantX, wantRes := append([]uint16(nil), x...), append([]uint16(nil), res...)
							want := make([]uint16, len(x))
							wr := rowsOf[uint16, uint16]{Dst: want, X: wantX}
							if inPlace {
								wr.Dst = wantX
							}
							if residual {
								wr.Residual = wantRes
							}
							applyKernel(kernelGeneric, &n, f, &wr)
							want = wr.Dst
							for _, atEnd := range []bool{true, false} {
								ctx := fmt.Sprintf("%s %s d=%d %s residual=%v inPlace=%v atEnd=%v", k.name(), fname(f), d, form.name, residual, inPlace, atEnd)
								gx, gd := place(rx, len(x), atEnd), place(rd, len(x), atEnd)
								copy(gx, x)
								if inPlace {
									gd = gx
								}
								gn := n
								if form.weight {
									gw := regionSlice[float32](rw, d, atEnd)
									copy(gw, w)
									gn.Weight = gw
								}
								r := rowsOf[uint16, uint16]{Dst: gd, X: gx}
								ends := append(ends16(gx, 1, len(gx), len(gx)), ends16(gd, 1, len(gd), len(gd))...)
								if residual {
									r.Residual = place(rr, len(res), atEnd)
									copy(r.Residual, res)
									ends = append(ends, ends16(r.Residual, 1, len(res), len(res))...)
								}
								var faulted, excused bool
								withStreaming(true, func() {
									faulted, excused = bochsFault(k, func() { applyKernel(k, &gn, f, &r) }, ends...)
								})
								if excused {
									continue
								}
								if faulted {
									t.Fatalf("%s: the kernel touched a guard page", ctx)
								}
								runs++
								if bochsChains(k, f, residual, form.rn && form.weight) {
									continue // ran under its guards; Bochs's float16 rounding reaches every later result
								}
								check16(t, ctx, f, gd, want)
								if residual {
									check16(t, ctx+" (the residual stream)", f, r.Residual, wantRes)
								}
							}
						}
					}
				}
			}
		}
	}
	if runs == 0 {
		t.Fatal("no call ran")
	}
}
