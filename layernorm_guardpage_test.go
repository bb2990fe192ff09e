//go:build linux || darwin

package rmsnorm

import (
	"fmt"
	"testing"
)

// LayerNorm under guard pages (guardpage_test.go): every buffer of a Layer call (X, Dst, Residual,
// Weight, Bias, Inv, Mean) flush against an inaccessible page, for every format, layer form and
// weight form, rows back to back or a stride apart, with the memory flags of rows from memory on
// or off (flagPF's prefetching loops run for rows a stride apart or from memory), so that a
// kernel reading or writing one element outside its slices faults; and the results are the
// generic kernel's.

const lgRows = 3 // rows of a call

// layerGuardCase is one call of TestLayerNormGuardPages: the Norm's settings, the layout, and
// the values of X and Residual (span elements, rows Stride = d + gap apart), Weight and Bias.
type layerGuardCase struct {
	f                format
	mode             weightMode
	center, bias, rn bool
	d, gap, rows     int
	residual         bool
	atEnd, stream    bool
	xs, res, w, b    []float32
}

func (c *layerGuardCase) span() int { return (c.rows-1)*(c.d+c.gap) + c.d }

func (c *layerGuardCase) String() string {
	return fmt.Sprintf("%s d=%d gap=%d rows=%d residual=%v center=%v bias=%v mode=%d rn=%v atEnd=%v stream=%v",
		fnameAll(c.f), c.d, c.gap, c.rows, c.residual, c.center, c.bias, c.mode, c.rn, c.atEnd, c.stream)
}

// runLayerGuarded runs c with kernel k in the regions, D and T the element types of Dst and X,
// and returns what it wrote (Dst and Residual whole spans, widened). It fails the test on a
// fault.
func runLayerGuarded[D, T elem](t *testing.T, regions []*guardedRegion, k kernelID, c *layerGuardCase) layerOut {
	t.Helper()
	span := c.span()
	gx := regionSlice[T](regions[0], span, c.atEnd)
	gd := regionSlice[D](regions[1], span, c.atEnd)
	gr := regionSlice[T](regions[2], span, c.atEnd)
	gw := regionSlice[float32](regions[3], c.d, c.atEnd)
	gb := regionSlice[float32](regions[4], c.d, c.atEnd)
	gi := regionSlice[float32](regions[5], c.rows, c.atEnd)
	gm := regionSlice[float32](regions[6], c.rows, c.atEnd)
	for i := range span {
		gx[i] = toElem[T](c.f, c.xs[i])
		gr[i] = toElem[T](c.f, c.res[i])
		gd[i] = toElem[D](c.f, 0)
	}
	copy(gw, c.w)
	copy(gb, c.b)
	n := Norm{Weight: gw, Eps: 1e-5, UnitOffset: c.mode == offset, RoundNormalized: c.rn, Center: c.center}
	if c.mode == unweighted {
		n.Weight, n.Dim = nil, c.d
	}
	if c.bias {
		n.Bias = gb
	}
	r := rowsOf[D, T]{Dst: gd, X: gx, N: c.rows, Stride: c.d + c.gap, Inv: gi}
	if c.residual {
		r.Residual = gr
	}
	if c.center {
		r.Mean = gm
	}
	var faulted bool
	withStreaming(c.stream, func() { faulted = faults(func() { applyKernel(k, &n, c.f, &r) }) })
	if faulted {
		t.Fatalf("%s %s: the kernel touched a guard page", k, c)
	}
	var out layerOut
	for i := range span {
		out.dst = append(out.dst, fromElem(c.f, gd[i]))
		out.res = append(out.res, fromElem(c.f, gr[i]))
	}
	out.inv, out.mean = append([]float32(nil), gi...), append([]float32(nil), gm...)
	return out
}

// layerGuardRegions returns the seven guarded regions of runLayerGuarded (X, Dst, Residual,
// Weight, Bias, Inv, Mean), each of n float32s.
func layerGuardRegions(t *testing.T, n int) []*guardedRegion {
	regions := make([]*guardedRegion, 7)
	for i := range regions {
		regions[i] = newGuardedRegion(t, n)
	}
	return regions
}

// run is runLayerGuarded for c's format.
func (c *layerGuardCase) run(t *testing.T, regions []*guardedRegion, k kernelID) layerOut {
	t.Helper()
	switch c.f {
	case formatF32:
		return runLayerGuarded[float32, float32](t, regions, k, c)
	case formatBF16, formatF16:
		return runLayerGuarded[uint16, uint16](t, regions, k, c)
	}
	return runLayerGuarded[uint16, float32](t, regions, k, c)
}

func TestLayerNormGuardPages(t *testing.T) {
	const maxD, maxGap = 4097, 3
	regions := layerGuardRegions(t, (lgRows-1)*(maxD+maxGap)+maxD)
	runs := 0
	for _, k := range testKernels() {
		if k == kernelGeneric {
			continue // the reference
		}
		for _, f := range layerFormats {
			for _, d := range []int{1, 3, 5, 16, 17, 48, 63, 64, 65, 120, 129, 300, 513, maxD} {
				r := seedFor(d, int(f), 33)
				xs, res := make([]float32, (lgRows-1)*(d+maxGap)+d), make([]float32, (lgRows-1)*(d+maxGap)+d)
				fill(xs, classNormal, r)
				for i := range xs {
					xs[i] += 3 // a mean to subtract
				}
				fill(res, classUniform, r)
				w, b := normalRows(d, 1, 34), normalRows(d, 1, 35)
				for _, lf := range layerForms {
					for _, mode := range []weightMode{weighted, offset, unweighted} {
						for _, atEnd := range []bool{true, false} {
							// Without flagPF (back to back), with it from the size, with it from the stride.
							for _, l := range []struct {
								gap    int
								stream bool
							}{{0, false}, {0, true}, {maxGap, false}} {
								c := &layerGuardCase{f: f, mode: mode, center: lf.center, bias: lf.bias, rows: lgRows, residual: true,
									rn: f.out() != formatF32 && mode != unweighted && d%2 == 1, d: d, gap: l.gap,
									atEnd: atEnd, stream: l.stream, xs: xs, res: res, w: w, b: b}
								want := c.run(t, regions, kernelGeneric)
								got := c.run(t, regions, k)
								sameOut(t, fmt.Sprintf("%s %s", k, c), got, want)
								runs++
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d LayerNorm calls under guard pages (kernels %v)", runs, testKernels())
}

// TestLayerNormGroupsGuardPages runs the calls that the AVX2 Layer functions take four rows at a
// time (short rows, no residual: layerGroups), and the AVX-512 ones with flagGroups (forced on
// for every length up to longGroupMax; in cache: streamed rows longer than groupMax go alone),
// under guard pages: counts of rows that are whole groups and ones that leave
// a tail, rows back to back or a stride apart, with the memory flags on and off, every format,
// layer form and weight form, and one row on the float64 path.
func TestLayerNormGroupsGuardPages(t *testing.T) {
	const maxRows, maxD, maxGap = 9, longGroupMax, 3
	defer func(from int) { avx512LayerGroups = from }(avx512LayerGroups)
	avx512LayerGroups = 1
	regions := layerGuardRegions(t, (maxRows-1)*(maxD+maxGap)+maxD)
	runs := 0
	for _, k := range testKernels() {
		if k == kernelGeneric {
			continue // the reference
		}
		for _, f := range layerFormats {
			for _, d := range []int{1, 5, 64, 96, 100, 112, 128, 300, groupMax, 700, longGroupMax} {
				for _, rows := range []int{4, 5, 8, 9} {
					r := seedFor(d, rows, int(f), 36)
					span := (rows-1)*(d+maxGap) + d
					xs := make([]float32, span)
					fill(xs, classNormal, r)
					for i := range xs {
						xs[i] += 3 // a mean to subtract
					}
					xs[(rows/2)*(d+maxGap)] = 3e38 // a row that takes the float64 path, with or without the gap
					w, b := normalRows(d, 1, 37), normalRows(d, 1, 38)
					for _, lf := range layerForms {
						for _, mode := range []weightMode{weighted, offset, unweighted} {
							for _, atEnd := range []bool{true, false} {
								for _, l := range []struct {
									gap    int
									stream bool
								}{{0, false}, {0, true}, {maxGap, false}, {maxGap, true}} {
									c := &layerGuardCase{f: f, mode: mode, center: lf.center, bias: lf.bias,
										rn: f.out() != formatF32 && mode != unweighted && (d+rows)%2 == 1, d: d, gap: l.gap,
										rows: rows, atEnd: atEnd, stream: l.stream, xs: xs, res: xs, w: w, b: b}
									// The kernel first, as in TestLayerNormGroups: a call without
									// Center must not read the means a call before it left on the stack.
									got := c.run(t, regions, k)
									want := c.run(t, regions, kernelGeneric)
									sameOut(t, fmt.Sprintf("%s %s", k, c), got, want)
									runs++
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d grouped LayerNorm calls under guard pages (kernels %v)", runs, testKernels())
}
