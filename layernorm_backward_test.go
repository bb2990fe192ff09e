package rmsnorm

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// The LayerNorm backward pass (Center, DB, Grad.Mean): the generic kernel against the contract's
// reference, every kernel and Workers count against the generic kernel, and the gradient against
// a float64 backward pass and finite differences.

// layerGradCase is one LayerNorm backward call.
type layerGradCase struct {
	mode              weightMode
	center, bias      bool // Center; Bias set (and DB asked for)
	withInv, withMean bool
	withDX, inPlace   bool
	noDW              bool // a weight, but no DW asked for
	stride, workers   int
}

func (c layerGradCase) String() string {
	return fmt.Sprintf("mode=%d center=%v db=%v inv=%v mean=%v dx=%v inplace=%v nodw=%v stride=%d workers=%d",
		c.mode, c.center, c.bias, c.withInv, c.withMean, c.withDX, c.inPlace, c.noDW, c.stride, c.workers)
}

// runLayerGrad runs c with kernel k on rows of d from x and dy (rows back to back, placed at the
// case's stride), DW and DB starting from dw0 and db0, and returns DX (the rows only), DW and DB.
func runLayerGrad(k kernelID, c layerGradCase, d, rows int, x, dy, w, b, dw0, db0 []float32, eps float32) (dx, dw, db []float32) {
	stride := max(c.stride, d)
	span := (rows-1)*stride + d
	sx, sdy := sentinels(span), sentinels(span)
	for r := range rows {
		copy(sx[r*stride:], x[r*d:(r+1)*d])
		copy(sdy[r*stride:], dy[r*d:(r+1)*d])
	}
	n := Norm{Dim: d, Eps: eps, Center: c.center, Workers: c.workers}
	if c.mode != unweighted {
		n.Weight, n.Dim, n.UnitOffset = w, 0, c.mode == offset
	}
	g := Grad{X: sx, DY: sdy}
	if c.stride != 0 {
		g.N, g.Stride = rows, stride
	}
	if c.withInv || c.withMean {
		// The forward's Inv and Mean, as a training step would pass them.
		f := n
		inv, mean := make([]float32, rows), make([]float32, rows)
		r := rowsOf[float32, float32]{Dst: make([]float32, span), X: sx, N: g.N, Stride: g.Stride, Inv: inv}
		if c.center {
			r.Mean = mean
		}
		if !applyRows(&f, &r, formatF32, kernelGeneric) {
			panic("forward rejected")
		}
		if c.withInv {
			g.Inv = inv
		}
		if c.withMean && c.center {
			g.Mean = mean
		}
	}
	if c.withDX {
		g.DX = sentinels(span)
		if c.inPlace {
			g.DX = g.DY
		}
	}
	if c.mode != unweighted && !c.noDW {
		g.DW = append([]float32(nil), dw0...)
	}
	if c.bias {
		n.Bias = b
		g.DB = append([]float32(nil), db0...)
	}
	backwardRows(&n, &g, k)
	if g.DX != nil {
		for r := range rows {
			dx = append(dx, g.DX[r*stride:r*stride+d]...)
		}
		for r := 0; r+1 < rows; r++ { // the gaps keep their sentinels (or DY's, in place)
			for i := r*stride + d; i < (r+1)*stride; i++ {
				if g.DX[i] != sentinel {
					panic(fmt.Sprintf("DX[%d], between rows, was written", i))
				}
			}
		}
	}
	return dx, g.DW, g.DB
}

// The generic kernel computes the contract: DX from layerRef.backward with the given or the
// recomputed inv and mean, DW and DB summed in blocks of 32 rows.
func TestLayerNormBackwardContract(t *testing.T) {
	for _, d := range []int{1, 3, 64, 65, 300, 1024} {
		const rows = 70 // three blocks
		for _, mode := range []weightMode{weighted, offset, unweighted} {
			for _, withInv := range []bool{false, true} {
				c := layerGradCase{mode: mode, center: true, bias: true, withInv: withInv, withMean: withInv, withDX: true}
				x, dy := normalRows(d, rows, 60), normalRows(d, rows, 61)
				for i := range x {
					x[i] = x[i]*2 + 5
				}
				w, b := normalRows(d, 1, 62), normalRows(d, 1, 63)
				dw0, db0 := normalRows(d, 1, 64), normalRows(d, 1, 65)
				eps := float32(1e-5)
				dx, dw, db := runLayerGrad(kernelGeneric, c, d, rows, x, dy, w, b, dw0, db0, eps)
				l := layerRef{eps: eps, center: true, mode: mode, w: w, b: b}
				var wantDX []float32
				wantDW, wantDB := append([]float32(nil), dw0...), append([]float32(nil), db0...)
				pw, pb := make([]float32, d), make([]float32, d)
				for r := range rows {
					xs, dys := x[r*d:(r+1)*d], dy[r*d:(r+1)*d]
					_, inv, m, f64 := l.row(xs) // the forward's inv and mean: what Inv and Mean hold
					if f64 {
						t.Fatalf("d=%d row %d: normal data on the float64 path", d, r)
					}
					rdx, q := l.backward(xs, dys, inv, m)
					wantDX = append(wantDX, rdx...)
					for i := range d {
						if r%gradBlock == 0 {
							pw[i], pb[i] = q[i], dys[i]
						} else {
							pw[i], pb[i] = pw[i]+q[i], pb[i]+dys[i]
						}
					}
					if r%gradBlock == gradBlock-1 || r == rows-1 {
						for i := range d {
							wantDW[i] = wantDW[i] + pw[i]
							wantDB[i] = wantDB[i] + pb[i]
						}
					}
				}
				ctx := fmt.Sprintf("generic d=%d %s", d, c)
				if i := firstDiff(dx, wantDX); i >= 0 {
					t.Fatalf("%s: DX[%d] = %v, the contract gives %v", ctx, i, dx[i], wantDX[i])
				}
				if mode != unweighted {
					if i := firstDiff(dw, wantDW); i >= 0 {
						t.Fatalf("%s: DW[%d] = %v, the contract gives %v", ctx, i, dw[i], wantDW[i])
					}
				}
				if i := firstDiff(db, wantDB); i >= 0 {
					t.Fatalf("%s: DB[%d] = %v, the contract gives %v", ctx, i, db[i], wantDB[i])
				}
			}
		}
	}
	// Grad.Inv and Grad.Mean are used as given on float32-path rows: other values give the
	// reference's dx for those values.
	const d = 48
	x, dy, w := normalRows(d, 2, 66), normalRows(d, 2, 67), normalRows(d, 1, 68)
	inv, mean := []float32{0.75, 1.5}, []float32{0.25, -0.5}
	dx := make([]float32, len(x))
	Norm{Weight: w, Eps: 1e-6, Center: true}.Backward(Grad{DX: dx, X: x, DY: dy, Inv: inv, Mean: mean})
	l := layerRef{eps: 1e-6, center: true, mode: weighted, w: w}
	for r := range 2 {
		want, _ := l.backward(x[r*d:(r+1)*d], dy[r*d:(r+1)*d], inv[r], mean[r])
		if i := firstDiff(dx[r*d:(r+1)*d], want); i >= 0 {
			t.Fatalf("given Inv and Mean, row %d: DX[%d] = %v, want %v", r, i, dx[r*d+i], want[i])
		}
	}
}

// Every SIMD kernel gives the generic kernel's DX, DW and DB on the core matrix.
func TestLayerNormBackwardKernelsMatchGeneric(t *testing.T) {
	forEachCase(t, []format{formatF32}, func(t *testing.T, c matrixCase) {
		i := c.d + 3*c.rows + 7*c.ci
		lf := layerForms[i%len(layerForms)]
		bc := layerGradCase{mode: weightMode((i / 3) % 3), center: lf.center, bias: lf.bias,
			withInv: (i/2)%2 == 0, withMean: (i/4)%2 == 0, withDX: (i/8)%4 != 0, inPlace: (i/8)%4 == 2,
			noDW: (i/32)%3 == 0}
		if (i/5)%2 == 0 {
			bc.stride = c.d + 3
		}
		r := c.rand(61)
		x, dy := make([]float32, c.rows*c.d), make([]float32, c.rows*c.d)
		fill(x, c.class, r)
		fill(dy, classNormal, r)
		w, b, dw0, db0 := make([]float32, c.d), make([]float32, c.d), make([]float32, c.d), make([]float32, c.d)
		fill(w, c.weightClass(), r)
		fill(dw0, classNormal, r)
		fill(db0, classNormal, r)
		wdx, wdw, wdb := runLayerGrad(kernelGeneric, bc, c.d, c.rows, x, dy, w, b, dw0, db0, c.eps)
		// Non-temporal stores of dx (the kernels' streaming loops) on every other case that has
		// a DX of its own.
		var gdx, gdw, gdb []float32
		withStreaming((i/64)%2 == 0 && bc.withDX && !bc.inPlace, func() {
			gdx, gdw, gdb = runLayerGrad(c.k, bc, c.d, c.rows, x, dy, w, b, dw0, db0, c.eps)
		})
		for _, p := range []struct {
			name      string
			got, want []float32
		}{{"DX", gdx, wdx}, {"DW", gdw, wdw}, {"DB", gdb, wdb}} {
			if i := firstDiff(p.got, p.want); i >= 0 {
				t.Fatalf("%s %s: %s[%d] = %v, generic gives %v", c, bc, p.name, i, p.got[i], p.want[i])
			}
		}
	})
}

// DW and DB are the same bits for any Workers, with and without DX, on every kernel: the blocks
// of 32 rows fix the sums.
func TestLayerNormBackwardWorkers(t *testing.T) {
	splitAll(t)
	const rows = 200
	// d = 80 ends rows on a whole vector of both ISAs, 83 on a partial one; each with a weight form.
	for _, d := range []int{80, 83} {
		t.Run(fmt.Sprint(d), func(t *testing.T) { layerBackwardWorkers(t, d, rows, []weightMode{weighted, offset}[d%2]) })
	}
}

// layerBackwardWorkers is TestLayerNormBackwardWorkers for rows of d in weight form mode.
func layerBackwardWorkers(t *testing.T, d, rows int, mode weightMode) {
	x, dy := normalRows(d, rows, 70), normalRows(d, rows, 71)
	x[100*d+3] = 3e38 // a row on the float64 path, inside a block
	w, b, dw0, db0 := normalRows(d, 1, 72), normalRows(d, 1, 73), normalRows(d, 1, 74), normalRows(d, 1, 75)
	for _, center := range []bool{true, false} {
		base := layerGradCase{mode: mode, center: center, bias: true, withInv: true, withMean: true, withDX: true, workers: 1}
		wdx, wdw, wdb := runLayerGrad(kernelGeneric, base, d, rows, x, dy, w, b, dw0, db0, 1e-5)
		for _, k := range testKernels() {
			for _, workers := range []int{1, 2, 3, 7, 64} {
				// Without DW, DB is still summed: a split call adds its blocks' partial
				// sums of DB on their own.
				for _, noDW := range []bool{false, true} {
					for _, withDX := range []bool{true, false} {
						c := base
						c.workers, c.withDX, c.noDW = workers, withDX, noDW
						gdx, gdw, gdb := runLayerGrad(k, c, d, rows, x, dy, w, b, dw0, db0, 1e-5)
						ctx := fmt.Sprintf("%s %s", k, c)
						if withDX {
							if i := firstDiff(gdx, wdx); i >= 0 {
								t.Fatalf("%s: DX[%d] = %v, want %v", ctx, i, gdx[i], wdx[i])
							}
						}
						if !noDW {
							if i := firstDiff(gdw, wdw); i >= 0 {
								t.Fatalf("%s: DW[%d] = %v, want %v", ctx, i, gdw[i], wdw[i])
							}
						}
						if i := firstDiff(gdb, wdb); i >= 0 {
							t.Fatalf("%s: DB[%d] = %v, want %v", ctx, i, gdb[i], wdb[i])
						}
					}
				}
			}
		}
	}
}

// layerLoss64 is L = sum over rows of dy*y for LayerNorm in float64 (Center; w' by mode; bias b),
// the loss whose gradient Backward computes when DY = dy.
func layerLoss64(x, dy, w, b []float64, mode weightMode, eps float64) float64 {
	d := len(w)
	var l float64
	for r := 0; r < len(x); r += d {
		var s float64
		for _, v := range x[r : r+d] {
			s += v
		}
		m := s / float64(d)
		var ss float64
		for _, v := range x[r : r+d] {
			ss += (v - m) * (v - m)
		}
		inv := 1 / math.Sqrt(ss/float64(d)+eps)
		for i, v := range x[r : r+d] {
			wf := 1.0
			switch mode {
			case weighted:
				wf = w[i]
			case offset:
				wf = 1 + w[i]
			}
			l += dy[r+i] * ((v-m)*inv*wf + b[i])
		}
	}
	return l
}

// layerBackward64 is the textbook LayerNorm gradient in float64 for one row:
// dx = inv*(g - mean(g) - n*mean(g*n)), dw = dy*n (db = dy), and scale = max|inv*g|, the size of
// the terms whose difference dx is.
func layerBackward64(x, dy, w []float32, mode weightMode, eps float64) (dx, dw []float64, scale float64) {
	d := len(x)
	var s float64
	for _, v := range x {
		s += float64(v)
	}
	m := s / float64(d)
	var ss float64
	for _, v := range x {
		ss += (float64(v) - m) * (float64(v) - m)
	}
	inv := 1 / math.Sqrt(ss/float64(d)+eps)
	n, g := make([]float64, d), make([]float64, d)
	var sg, sgn float64
	for i, v := range x {
		n[i] = (float64(v) - m) * inv
		g[i] = float64(dy[i]) * weightForm64(mode, w, i)
		sg += g[i]
		sgn += g[i] * n[i]
	}
	dx, dw = make([]float64, d), make([]float64, d)
	for i := range x {
		dx[i] = inv * (g[i] - sg/float64(d) - n[i]*sgn/float64(d))
		dw[i] = float64(dy[i]) * n[i]
		scale = max(scale, math.Abs(inv*g[i]))
	}
	return dx, dw, scale
}

// Backward with Center against the float64 gradient, on normal rows and on rows far from zero
// (100 + N(0,1)), and the float64 gradient against central differences of the float64 loss, so
// that both the formula and its float32 evaluation are checked.
func TestLayerNormBackwardAccuracy(t *testing.T) {
	const target = 1e-6 // RMSNorm's bound (TestBackwardAccuracy), on normal rows
	for _, k := range testKernels() {
		for _, mode := range []weightMode{weighted, offset, unweighted} {
			for _, d := range []int{2, 7, 64, 1000, 4096} {
				for _, shift := range []float32{0, 100} {
					rows := 8
					x, dy, w := normalRows(d, rows, 76), normalRows(d, rows, 77), normalRows(d, 1, 78)
					for i := range x {
						x[i] += shift
					}
					n := Norm{Weight: w, Eps: 1e-5, Center: true, UnitOffset: mode == offset}
					if mode == unweighted {
						n = Norm{Dim: d, Eps: 1e-5, Center: true}
					}
					dx := make([]float32, len(x))
					backwardWith(k, n, Grad{DX: dx, X: x, DY: dy})
					worst := 0.0
					for r := range rows {
						ref, _, scale := layerBackward64(x[r*d:(r+1)*d], dy[r*d:(r+1)*d], w, mode, 1e-5)
						e, m := maxAbsErr(dx[r*d:(r+1)*d], ref)
						// A centered row of two is ±1 whatever x: its gradient is about eps/var
						// of the terms the contract subtracts, and is measured against those (as
						// TestBackwardAccuracy does a row of one).
						if d == 2 {
							m = scale
						}
						worst = max(worst, e/m)
					}
					t.Logf("%s mode=%d d=%4d offset %g: DX max|err|/max|ref| per row %.3g", k, mode, d, shift, worst)
					// Far from zero, the float32 mean leaves an error in every centered value
					// of up to half an ulp of the offset (2^-18 at 100) against a spread of 1,
					// so the bound grows by up to that ratio: measured 1e-5 at d = 7, 9e-7 at
					// 64 and 2e-7 at 1000 and 4096 (the errors average out over longer rows).
					bound := target
					if shift != 0 {
						bound = 1e-4
					}
					if worst > bound {
						t.Errorf("%s mode=%d d=%d offset %g: DX max|err|/max|ref| = %.3g exceeds %.0e", k, mode, d, shift, worst, bound)
					}
				}
			}
		}
	}
	// The float64 gradient is the derivative: central differences of L, for DX, DW and DB.
	to64 := func(s []float32) []float64 {
		f := make([]float64, len(s))
		for i, v := range s {
			f[i] = float64(v)
		}
		return f
	}
	for _, mode := range []weightMode{weighted, offset, unweighted} {
		for _, d := range []int{2, 3, 8, 33} {
			const rows, eps = 3, 1e-5
			x, dy, w, b := normalRows(d, rows, 79), normalRows(d, rows, 80), normalRows(d, 1, 81), normalRows(d, 1, 82)
			x64, dy64, w64, b64 := to64(x), to64(dy), to64(w), to64(b)
			loss := func() float64 { return layerLoss64(x64, dy64, w64, b64, mode, eps) }
			diff := func(p *float64) float64 {
				v := *p
				h := 1e-5 * max(1, math.Abs(v))
				*p = v + h
				lp := loss()
				*p = v - h
				lm := loss()
				*p = v
				return (lp - lm) / (2 * h)
			}
			n := Norm{Weight: w, Bias: b, Eps: eps, Center: true, UnitOffset: mode == offset}
			if mode == unweighted {
				n = Norm{Dim: d, Bias: b, Eps: eps, Center: true}
			}
			g := Grad{DX: make([]float32, len(x)), X: x, DY: dy, DB: make([]float32, d)}
			if mode != unweighted {
				g.DW = make([]float32, d)
			}
			n.Backward(g)
			ctx := fmt.Sprintf("mode=%d d=%d", mode, d)
			for r := range rows {
				ref, _, scale := layerBackward64(x[r*d:(r+1)*d], dy[r*d:(r+1)*d], w, mode, eps)
				for i := range d {
					if fd := diff(&x64[r*d+i]); math.Abs(fd-ref[i]) > 1e-6*max(1, math.Abs(ref[i])) {
						t.Errorf("%s: dL/dx[%d][%d]: float64 gradient %v, central difference %v", ctx, r, i, ref[i], fd)
					}
				}
				e, m := maxAbsErr(g.DX[r*d:(r+1)*d], ref)
				if d == 2 { // see above
					m = scale
				}
				if e > 1e-5*m {
					t.Errorf("%s: DX row %d max|err| %.3g against max|ref| %.3g", ctx, r, e, m)
				}
			}
			for i := range d {
				if g.DW != nil {
					if fd := diff(&w64[i]); math.Abs(float64(g.DW[i])-fd) > 1e-5*max(1, math.Abs(fd)) {
						t.Errorf("%s: DW[%d] = %v, central difference %v", ctx, i, g.DW[i], fd)
					}
				}
				if fd := diff(&b64[i]); math.Abs(float64(g.DB[i])-fd) > 1e-5*max(1, math.Abs(fd)) {
					t.Errorf("%s: DB[%d] = %v, central difference %v", ctx, i, g.DB[i], fd)
				}
			}
		}
	}
}

// A row whose Inv the caller gives as infinite, or so large that n overflows, runs the kernels'
// usual path (its own t is in range). The lanes past the end of such a row must add nothing to
// the sum of g*n, where (0 - m)*inv would be infinite and times g = 0 NaN: a NaN there would turn
// row 0's dx, infinite by the contract, into NaN. Row 1, with an ordinary Inv and Mean, follows
// in the same call.
func TestLayerNormBackwardInfiniteInv(t *testing.T) {
	for _, d := range []int{1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 63, 65, 79} {
		x, dy, w := make([]float32, 2*d), make([]float32, 2*d), make([]float32, d)
		for i := range x {
			x[i] = float32(1 + i%d)
			dy[i] = 0.5 + float32(i%3)
		}
		for i := range w {
			w[i] = 1 + 0.25*float32(i%5)
		}
		for _, mode := range []weightMode{weighted, offset, unweighted} {
			n := Norm{Weight: w, Center: true, Eps: 1e-5, UnitOffset: mode == offset}
			if mode == unweighted {
				n = Norm{Dim: d, Center: true, Eps: 1e-5}
			}
			for _, inv0 := range []float32{float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32} {
				run := func(k kernelID) []float32 {
					g := Grad{DX: make([]float32, 2*d), X: x, DY: dy, Inv: []float32{inv0, 1}, Mean: []float32{0, -1}}
					backwardWith(k, n, g)
					return g.DX
				}
				want := run(kernelGeneric)
				if !slices.ContainsFunc(want[:d], func(v float32) bool { return math.IsInf(float64(v), 0) }) {
					t.Fatalf("d=%d mode=%d Inv[0]=%v: generic's row 0 has no infinite dx (%v): the case tests nothing", d, mode, inv0, want[:d])
				}
				for _, k := range testKernels() {
					if i := firstDiff(run(k), want); i >= 0 {
						t.Fatalf("%s d=%d mode=%d Inv[0]=%v: DX[%d] = %v, generic gives %v", k, d, mode, inv0, i, run(k)[i], want[i])
					}
				}
			}
		}
	}
}
