package rmsnorm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// LayerNorm (Norm.Center, Norm.Bias, Rows.Mean): the generic kernel against the contract's
// reference (layernorm_ref_test.go), and every kernel, entry point and Workers count against the
// generic kernel, bit for bit, inside guards.

var layerFormats = []format{formatF32, formatBF16, formatF16, formatToBF16, formatToF16}

// layerForms are the LayerNorm settings: Center with and without a bias, and a bias alone.
var layerForms = []struct{ center, bias bool }{{true, false}, {true, true}, {false, true}}

// lcase is one LayerNorm call: format, weight form, Center, Bias, and the layout and outputs.
type lcase struct {
	f                        format
	mode                     weightMode
	center, bias, rn         bool
	residual, inv, mean      bool
	inPlace                  bool
	gap, dgap                int // Stride - d and DstStride - d
	workers                  int
	strided                  bool // pass N (always with a gap)
	wclass, bclass, resClass valueClass
}

func (c lcase) String() string {
	return fmt.Sprintf("%s mode=%d center=%v bias=%v rn=%v res=%v inv=%v mean=%v inplace=%v gap=%d dgap=%d workers=%d",
		fnameAll(c.f), c.mode, c.center, c.bias, c.rn, c.residual, c.inv, c.mean, c.inPlace, c.gap, c.dgap, c.workers)
}

func fnameAll(f format) string {
	return [...]string{"float32", "bfloat16", "float16", "float32->bfloat16", "float32->float16"}[f]
}

// layerOut is what one call wrote: the rows of Dst, Residual (widened from 16 bits), Inv, Mean.
type layerOut struct{ dst, res, inv, mean []float32 }

// runLayer runs c with kernel k on rows rows of the values x (and res), widened or narrowed to the
// format, with weight w and bias b, placed off elements past a 64-byte boundary inside guards,
// checks the guards and the gaps, and returns the outputs.
func runLayer(t *testing.T, k kernelID, c lcase, d, rows int, x, res, w, b []float32, eps float32, off int) layerOut {
	t.Helper()
	switch c.f {
	case formatF32:
		return runLayerOf[float32, float32](t, k, c, d, rows, x, res, w, b, eps, off)
	case formatBF16, formatF16:
		return runLayerOf[uint16, uint16](t, k, c, d, rows, x, res, w, b, eps, off)
	}
	return runLayerOf[uint16, float32](t, k, c, d, rows, x, res, w, b, eps, off)
}

// toElem stores v in format f's storage of x (16-bit: rounded to the format).
func toElem[T elem](f format, v float32) T {
	var z T
	switch p := any(&z).(type) {
	case *float32:
		*p = v
	case *uint16:
		*p = f.narrow(v)
	}
	return z
}

// fromElem widens an element of format f to float32.
func fromElem[T elem](f format, v T) float32 {
	switch x := any(v).(type) {
	case float32:
		return x
	case uint16:
		return f.widen(x)
	}
	panic("unreachable")
}

func runLayerOf[D, T elem](t *testing.T, k kernelID, c lcase, d, rows int, x, res, w, b []float32, eps float32, off int) layerOut {
	t.Helper()
	stride, dstStride := d+c.gap, d+c.dgap
	span, dspan := (rows-1)*stride+d, (rows-1)*dstStride+d
	xg := newGuarded[T]("X", span, off)
	for r := range rows {
		for i := range d {
			xg.s[r*stride+i] = toElem[T](c.f, x[r*d+i])
		}
	}
	var rg *guarded[T]
	if c.residual {
		rg = newGuarded[T]("Residual", span, (off*3+2)%16)
		for r := range rows {
			for i := range d {
				rg.s[r*stride+i] = toElem[T](c.f, res[r*d+i])
			}
		}
	}
	var dst []D
	var dg *guarded[D]
	if c.inPlace {
		dst = any(xg.s).([]D)
	} else {
		dg = newGuarded[D]("Dst", dspan, (off*7)%16)
		dst = dg.s
	}
	n := Norm{Dim: d, Eps: eps, Center: c.center, RoundNormalized: c.rn, Workers: c.workers}
	var wg, bg *guarded[float32]
	if c.mode != unweighted {
		wg = newGuarded[float32]("Weight", d, (off*11+5)%16)
		copy(wg.s, w)
		n.Weight, n.Dim, n.UnitOffset = wg.s, 0, c.mode == offset
	}
	if c.bias {
		bg = newGuarded[float32]("Bias", d, (off*13+1)%16)
		copy(bg.s, b)
		n.Bias = bg.s
	}
	var ig, mg *guarded[float32]
	r := rowsOf[D, T]{Dst: dst, X: xg.s}
	if c.strided || c.gap > 0 || c.dgap > 0 {
		r.N, r.Stride, r.DstStride = rows, stride, dstStride
	}
	if rg != nil {
		r.Residual = rg.s
	}
	if c.inv {
		ig = newGuarded[float32]("Inv", rows, (off*5+3)%16)
		r.Inv = ig.s
	}
	if c.mean {
		mg = newGuarded[float32]("Mean", rows, (off*9+7)%16)
		r.Mean = mg.s
	}
	nm := &names{"LayerNorm test", "Dst", "X", "Weight", "Eps"}
	if !applyRows(&n, &r, c.f, k) {
		panic(explainApply(&n, nm, &r))
	}
	ctx := fmt.Sprintf("%s: %s d=%d rows=%d", k, c, d, rows)
	var out layerOut
	for _, g := range []*guarded[float32]{wg, bg, ig, mg} {
		if g != nil {
			g.check(t, ctx)
		}
	}
	xg.check(t, ctx)
	if dg != nil {
		dg.check(t, ctx)
	}
	if rg != nil {
		rg.check(t, ctx)
	}
	// The gaps between rows keep their guards: X's and Residual's are never written; Dst's gaps
	// (or, in place, X's) neither.
	gapsOK := func(name string, s []T, stride int) {
		for r := 0; r+1 < rows; r++ {
			for i := r*stride + d; i < (r+1)*stride; i++ {
				if bitsOf(s[i]) != bitsOf(guardOf[T]()) {
					t.Fatalf("%s: %s[%d], between rows, was written", ctx, name, i)
				}
			}
		}
	}
	if c.gap > 0 {
		gapsOK("X", xg.s, stride)
		if rg != nil {
			gapsOK("Residual", rg.s, stride)
		}
	}
	if dg != nil && c.dgap > 0 {
		for r := 0; r+1 < rows; r++ {
			for i := r*dstStride + d; i < (r+1)*dstStride; i++ {
				if bitsOf(dg.s[i]) != bitsOf(guardOf[D]()) {
					t.Fatalf("%s: Dst[%d], between rows, was written", ctx, i)
				}
			}
		}
	}
	for row := range rows {
		for i := range d {
			out.dst = append(out.dst, fromElem(c.f, dst[row*dstStride+i]))
			if rg != nil {
				out.res = append(out.res, fromElem(c.f, rg.s[row*stride+i]))
			}
		}
	}
	if ig != nil {
		out.inv = append([]float32(nil), ig.s...)
	}
	if mg != nil {
		out.mean = append([]float32(nil), mg.s...)
	}
	return out
}

// sameOut compares two calls' outputs bit for bit (NaNs alike) and reports the first difference.
func sameOut(t *testing.T, ctx string, got, want layerOut) {
	t.Helper()
	for _, p := range []struct {
		name      string
		got, want []float32
	}{{"Dst", got.dst, want.dst}, {"Residual", got.res, want.res}, {"Inv", got.inv, want.inv}, {"Mean", got.mean, want.mean}} {
		if len(p.got) != len(p.want) {
			t.Fatalf("%s: %s has %d elements, want %d", ctx, p.name, len(p.got), len(p.want))
		}
		if i := firstDiff(p.got, p.want); i >= 0 {
			t.Fatalf("%s: %s[%d] = %v (%#x), want %v (%#x)", ctx, p.name, i, p.got[i], math.Float32bits(p.got[i]),
				p.want[i], math.Float32bits(p.want[i]))
		}
	}
}

// layerInputs draws x, the residual, the weight and the bias of a call.
func layerInputs(r *rand.Rand, c lcase, d, rows int, xc valueClass) (x, res, w, b []float32) {
	x, res = make([]float32, rows*d), make([]float32, rows*d)
	w, b = make([]float32, d), make([]float32, d)
	fill(x, xc, r)
	fill(res, c.resClass, r)
	fill(w, c.wclass, r)
	fill(b, c.bclass, r)
	return
}

// The generic kernel computes the contract: against layerRef, every format, weight form, layer
// form, RoundNormalized and residual, over the value classes (both paths, special values).
func TestLayerNormContract(t *testing.T) {
	dims := []int{1, 2, 3, 7, 16, 63, 64, 65, 127, 256, 257, 300, 768, 1024}
	for _, f := range layerFormats {
		out := f.out()
		for _, lf := range layerForms {
			for _, mode := range []weightMode{weighted, offset, unweighted} {
				for _, rn := range []bool{false, true} {
					if rn && (out == formatF32 || mode == unweighted) {
						continue
					}
					for _, residual := range []bool{false, true} {
						for ci, xc := range valueClasses {
							for _, d := range dims {
								const rows = 3
								c := lcase{f: f, mode: mode, center: lf.center, bias: lf.bias, rn: rn, residual: residual,
									inv: true, mean: lf.center, wclass: weightClasses[(d+ci)%len(weightClasses)],
									bclass: valueClasses[(d+ci+3)%len(valueClasses)], resClass: classNormal}
								eps := testEps[(d+ci)%len(testEps)]
								x, res, w, b := layerInputs(seedFor(d, ci, int(f), 27), c, d, rows, xc)
								got := runLayer(t, kernelGeneric, c, d, rows, x, res, w, b, eps, d%16)
								want := layerWant(c, d, rows, x, res, w, b, eps)
								sameOut(t, fmt.Sprintf("generic %s %s d=%d eps=%g", c, xc.name, d, eps), got, want)
							}
						}
					}
				}
			}
		}
	}
}

// layerWant is what c must write by the contract, from layerRef (rows back to back).
func layerWant(c lcase, d, rows int, x, res, w, b []float32, eps float32) layerOut {
	l := layerRef{eps: eps, center: c.center, rn: c.rn, out: c.f.out(), mode: c.mode}
	if c.mode != unweighted {
		l.w = w
	}
	if c.bias {
		l.b = b
	}
	in16 := c.f.in() != formatF32
	var out layerOut
	for row := range rows {
		h := make([]float32, d)
		for i := range d {
			v := x[row*d+i]
			if in16 {
				v = c.f.round(v)
			}
			if c.residual {
				rv := res[row*d+i]
				if in16 {
					rv = c.f.round(rv)
				}
				v = v + rv
				if in16 {
					v = c.f.round(v)
				}
				out.res = append(out.res, v)
			}
			h[i] = v
		}
		y, inv, m, _ := l.row(h)
		for _, v := range y {
			if c.f.out() != formatF32 {
				v = c.f.round(v)
			}
			out.dst = append(out.dst, v)
		}
		if c.inv {
			out.inv = append(out.inv, inv)
		}
		if c.mean {
			out.mean = append(out.mean, m)
		}
	}
	return out
}

// Every SIMD kernel gives the generic kernel's bits on the core matrix, for every format, layer
// form and weight form, each row length and class meeting a combination of residual, Inv, Mean,
// strides (X's and Dst's), in place and RoundNormalized in turn.
func TestLayerNormKernelsMatchGeneric(t *testing.T) {
	forEachCase(t, layerFormats, func(t *testing.T, c matrixCase) {
		i := c.d + 3*c.rows + 7*c.ci
		for fi, f := range layerFormats {
			if c.repeats(f) {
				continue
			}
			lf := layerForms[(i+fi)%len(layerForms)]
			mode := weightMode((i / 3) % 3)
			lc := lcase{f: f, mode: mode, center: lf.center, bias: lf.bias,
				rn: i%2 == 0 && f.out() != formatF32, residual: (i/2)%2 == 0, inv: (i/4)%2 == 0,
				mean: lf.center && (i/8)%2 == 0, gap: [3]int{0, 0, 5}[(i+fi)%3], dgap: [3]int{0, 3, 0}[(i/3+fi)%3],
				wclass: c.weightClass(), bclass: valueClasses[(c.ci+fi)%len(valueClasses)],
				resClass: valueClasses[(c.ci+1)%len(valueClasses)]}
			lc.inPlace = f.in() == f.out() && lc.gap == lc.dgap && (i/16)%2 == 0
			lc.strided = c.rows%2 == 1
			x, res, w, b := layerInputs(c.rand(27, fi), lc, c.d, c.rows, c.class)
			off := c.offsets[(i+fi)%len(c.offsets)]
			want := runLayer(t, kernelGeneric, lc, c.d, c.rows, x, res, w, b, c.eps, off)
			got := runLayer(t, c.k, lc, c.d, c.rows, x, res, w, b, c.eps, off)
			sameOut(t, fmt.Sprintf("%s %s", c, lc), got, want)
		}
	})
}

// Every combination of format, layer form, weight form, residual, Inv, Mean, strides and in place
// on every kernel (generic included: its guards and gaps), at a few lengths, with a row in the
// middle sent to the float64 path.
func TestLayerNormVariants(t *testing.T) {
	for _, k := range testKernels() {
		for _, d := range []int{1, 5, 16, 67, 130, 513} {
			for _, rows := range []int{1, 4} {
				n := 0
				for _, f := range layerFormats {
					for _, lf := range layerForms {
						for _, mode := range []weightMode{weighted, offset, unweighted} {
							for _, o := range []struct {
								residual, inv, mean bool
								gap, dgap           int
								inPlace             bool
							}{{false, false, false, 0, 0, false}, {true, true, true, 0, 0, false}, {false, true, true, 5, 0, false},
								{true, false, true, 0, 3, false}, {false, true, false, 2, 2, true}, {true, true, true, 0, 0, true}} {
								n++
								lc := lcase{f: f, mode: mode, center: lf.center, bias: lf.bias, rn: n%2 == 0 && f.out() != formatF32,
									residual: o.residual, inv: o.inv, mean: o.mean && lf.center, gap: o.gap, dgap: o.dgap,
									inPlace: o.inPlace && f.in() == f.out(), strided: rows == 4,
									wclass: classNormal, bclass: classNormal, resClass: classNormal}
								x, res, w, b := layerInputs(seedFor(d, rows, n, 28), lc, d, rows, classNormal)
								x[(rows/2)*d] = 3e38 // the float64 path (s or ss overflows)
								want := runLayer(t, kernelGeneric, lc, d, rows, x, res, w, b, 1e-5, (d+n)%16)
								got := runLayer(t, k, lc, d, rows, x, res, w, b, 1e-5, (d+n)%16)
								sameOut(t, fmt.Sprintf("%s %s d=%d rows=%d", k, lc, d, rows), got, want)
							}
						}
					}
				}
			}
		}
	}
}

// Workers splits the rows anywhere: the same bits for 1, 2, 3, 7 and 64 workers, on every kernel,
// with a residual and without one (short rows without a residual go four at a time on AVX2, so a
// worker's share can start or end inside what one call would have taken as a group).
func TestLayerNormWorkers(t *testing.T) {
	splitAll(t)
	const d, rows = 96, 70
	for _, k := range testKernels() {
		for _, f := range layerFormats {
			for _, residual := range []bool{true, false} {
				lc := lcase{f: f, mode: weighted, center: true, bias: true, residual: residual, inv: true, mean: true,
					wclass: classNormal, bclass: classNormal, resClass: classNormal}
				x, res, w, b := layerInputs(seedFor(d, rows, int(f), 29), lc, d, rows, classNormal)
				x[37*d+5] = 3e38 // one row on the float64 path
				want := runLayer(t, kernelGeneric, lc, d, rows, x, res, w, b, 1e-12, 0)
				for _, workers := range []int{1, 2, 3, 7, 64} {
					lc.workers = workers
					got := runLayer(t, k, lc, d, rows, x, res, w, b, 1e-12, 0)
					sameOut(t, fmt.Sprintf("%s %s", k, lc), got, want)
				}
			}
		}
	}
}

// The entry points (Forward, ForwardBF16, ForwardF16, Apply, ApplyBF16, ApplyF16, ApplyToBF16,
// ApplyToF16) run LayerNorm Norms with the active kernel, on packedRows through packedLayer when
// they have a weight and on the general path when not: never on forwardRows, RMSNorm's path,
// which knows neither Center nor Bias.
func TestLayerNormEntryPoints(t *testing.T) {
	defer active.Store(active.Load())
	const d, rows = 64, 3
	x := normalRows(d, rows, 30)
	for i := range x {
		x[i] += 3 // a mean to subtract
	}
	w, b := normalRows(d, 1, 31), normalRows(d, 1, 32)
	for _, k := range testKernels() {
		active.Store(uint32(k)) // SetKernel("avx512") would pick kernelAVX512BF16 where it stands for avx512
		for _, lf := range layerForms {
			for _, mode := range []weightMode{weighted, offset, unweighted} {
				n := Norm{Dim: d, Eps: 1e-5, Center: lf.center}
				if mode != unweighted {
					n.Weight, n.Dim, n.UnitOffset = w, 0, mode == offset
				}
				if lf.bias {
					n.Bias = b
				}
				ctx := fmt.Sprintf("%s center=%v bias=%v mode=%d", k, lf.center, lf.bias, mode)
				for _, f := range layerFormats {
					lc := lcase{f: f, mode: mode, center: lf.center, bias: lf.bias}
					want := runLayer(t, kernelGeneric, lc, d, rows, x, nil, w, b, 1e-5, 0).dst
					var got []float32
					switch f {
					case formatF32:
						y := make([]float32, len(x))
						n.Forward(y, x)
						y2 := make([]float32, len(x))
						n.Apply(Rows{Dst: y2, X: x})
						if i := firstDiff(y2, y); i >= 0 {
							t.Fatalf("%s: Apply and Forward differ at %d", ctx, i)
						}
						got = y
					case formatBF16, formatF16:
						x16 := make([]uint16, len(x))
						for i, v := range x {
							x16[i] = f.narrow(v)
						}
						y, y2 := make([]uint16, len(x)), make([]uint16, len(x))
						if f == formatBF16 {
							n.ForwardBF16(y, x16)
							n.ApplyBF16(Rows16{Dst: y2, X: x16})
						} else {
							n.ForwardF16(y, x16)
							n.ApplyF16(Rows16{Dst: y2, X: x16})
						}
						for i := range y {
							if y[i] != y2[i] {
								t.Fatalf("%s %s: Apply and Forward differ at %d", ctx, fnameAll(f), i)
							}
							got = append(got, f.widen(y[i]))
						}
					default:
						y := make([]uint16, len(x))
						if f == formatToBF16 {
							n.ApplyToBF16(RowsTo16{Dst: y, X: x})
						} else {
							n.ApplyToF16(RowsTo16{Dst: y, X: x})
						}
						for _, v := range y {
							got = append(got, f.widen(v))
						}
					}
					if i := firstDiff(got, want); i >= 0 {
						t.Fatalf("%s %s: y[%d] = %v, generic gives %v", ctx, fnameAll(f), i, got[i], want[i])
					}
				}
			}
		}
	}
}

// A LayerNorm call on rows back to back (here with a residual and RoundNormalized) writes what it
// writes for the same rows given by N and Stride, output and residual alike, on every kernel,
// format and weight form: the layouts reach the kernels as the same job.
func TestLayerNormPackedMatchesStrided(t *testing.T) {
	defer active.Store(active.Load())
	const d, rows = 96, 3
	x, res := normalRows(d, rows, 40), normalRows(d, rows, 41)
	for i := range x {
		x[i] += 2
	}
	w, b := normalRows(d, 1, 42), normalRows(d, 1, 43)
	for _, k := range testKernels() {
		active.Store(uint32(k))
		for _, lf := range layerForms {
			for _, uo := range []bool{false, true} {
				n := Norm{Weight: w, Eps: 1e-5, Center: lf.center, UnitOffset: uo, RoundNormalized: true}
				if lf.bias {
					n.Bias = b
				}
				ctx := fmt.Sprintf("%s center=%v bias=%v unitOffset=%v", k, lf.center, lf.bias, uo)
				// Each runs one call on fresh copies of x and res, packed or through N and Stride, and
				// returns the output and the residual as float32 values.
				var calls = map[format]func(packed bool) ([]float32, []float32){
					formatF32: func(packed bool) ([]float32, []float32) {
						r := Rows{Dst: make([]float32, len(x)), X: slices.Clone(x), Residual: slices.Clone(res)}
						if !packed {
							r.N, r.Stride = rows, d
						}
						n.Apply(r)
						return r.Dst, r.Residual
					},
				}
				for _, f := range []format{formatBF16, formatF16} {
					calls[f] = func(packed bool) ([]float32, []float32) {
						r := Rows16{Dst: make([]uint16, len(x)), X: narrowAll(x, f), Residual: narrowAll(res, f)}
						if !packed {
							r.N, r.Stride = rows, d
						}
						if f == formatBF16 {
							n.ApplyBF16(r)
						} else {
							n.ApplyF16(r)
						}
						return widenAll(r.Dst, f), widenAll(r.Residual, f)
					}
				}
				for _, f := range []format{formatToBF16, formatToF16} {
					calls[f] = func(packed bool) ([]float32, []float32) {
						r := RowsTo16{Dst: make([]uint16, len(x)), X: slices.Clone(x), Residual: slices.Clone(res)}
						if !packed {
							r.N, r.Stride = rows, d
						}
						if f == formatToBF16 {
							n.ApplyToBF16(r)
						} else {
							n.ApplyToF16(r)
						}
						return widenAll(r.Dst, f), r.Residual
					}
				}
				for _, f := range layerFormats {
					y, h := calls[f](true)
					y2, h2 := calls[f](false)
					if i := firstDiff(y, y2); i >= 0 {
						t.Fatalf("%s %s: y[%d] = %v back to back, %v with N and Stride", ctx, fnameAll(f), i, y[i], y2[i])
					}
					if i := firstDiff(h, h2); i >= 0 {
						t.Fatalf("%s %s: residual[%d] = %v back to back, %v with N and Stride", ctx, fnameAll(f), i, h[i], h2[i])
					}
				}
			}
		}
	}
}

// RowsTo16 is Apply then one rounding, for LayerNorm as for RMSNorm: ApplyToBF16 and ApplyToF16
// give the rounding of Apply's float32 output (without RoundNormalized).
func TestLayerNormApplyTo16IsApplyRounded(t *testing.T) {
	const d, rows = 200, 4
	for ci, xc := range valueClasses {
		for _, lf := range layerForms {
			for _, f := range []format{formatToBF16, formatToF16} {
				lc := lcase{f: f, mode: weighted, center: lf.center, bias: lf.bias, inv: true, mean: lf.center,
					wclass: classNormal, bclass: classNormal, resClass: classNormal}
				x, res, w, b := layerInputs(seedFor(ci, int(f), 33), lc, d, rows, xc)
				got := runLayer(t, kernelGeneric, lc, d, rows, x, res, w, b, 1e-6, 3)
				lc32 := lc
				lc32.f = formatF32
				want := runLayer(t, kernelGeneric, lc32, d, rows, x, res, w, b, 1e-6, 3)
				for i, v := range want.dst {
					want.dst[i] = f.round(v)
				}
				sameOut(t, fmt.Sprintf("%s %s", xc.name, lc), got, want)
			}
		}
	}
}
