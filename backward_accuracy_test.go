package rmsnorm

import (
	"fmt"
	"math"
	"testing"
)

// Accuracy of Norm.Backward against the gradient of RMSNorm in float64, and against central
// finite differences of a float64 forward pass. The references here are derived from the
// forward formula by hand and share no code with the package: for y = n*w' with n = x*inv,
// inv = 1/sqrt(mean(x^2)+eps) and g = dy*w',
//
//	dL/dx = inv*(g - n*mean(g*n)),   dL/dw' = sum over rows of dy*n.
//
// The kernels give the generic kernel's bits (backward_test.go), but each test runs every kernel
// under test anyway, so that a kernel that breaks the contract also shows up as an accuracy loss.

// backwardModes are the three weight forms, with their names for the logs.
var backwardModes = []struct {
	name string
	mode weightMode
}{{"weighted", weighted}, {"unitoffset", offset}, {"noweight", unweighted}}

// normFor returns the Norm of weight form mode over w (Dim = len(w) without a weight).
func normFor(mode weightMode, w []float32, eps float32) Norm {
	switch mode {
	case weighted:
		return Norm{Weight: w, Eps: eps}
	case offset:
		return Norm{Weight: w, Eps: eps, UnitOffset: true}
	}
	return Norm{Dim: len(w), Eps: eps}
}

// weightForm64 returns w'[i] in float64: w[i], 1 + w[i] (in exact arithmetic) or 1.
func weightForm64(mode weightMode, w []float32, i int) float64 {
	switch mode {
	case weighted:
		return float64(w[i])
	case offset:
		return 1 + float64(w[i])
	}
	return 1
}

// refInv64 is 1/sqrt(mean(x^2) + eps) in float64.
func refInv64(x []float32, eps float32) float64 {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	return 1 / math.Sqrt(ss/float64(len(x))+float64(eps))
}

// refBackward64 returns, for one row, dL/dx and the row's contribution dy*n to dL/dw', and
// scale = max|inv*g|, the size of the terms dx is the difference of.
func refBackward64(x, dy, w []float32, mode weightMode, eps float32) (dx, dw []float64, scale float64) {
	d := len(x)
	inv := refInv64(x, eps)
	n := make([]float64, d)
	g := make([]float64, d)
	var gn float64
	for i := range x {
		n[i] = float64(x[i]) * inv
		g[i] = float64(dy[i]) * weightForm64(mode, w, i)
		gn += g[i] * n[i]
	}
	mean := gn / float64(d)
	dx = make([]float64, d)
	dw = make([]float64, d)
	for i := range x {
		dx[i] = inv * (g[i] - n[i]*mean)
		dw[i] = float64(dy[i]) * n[i]
		scale = max(scale, math.Abs(inv*g[i]))
	}
	return dx, dw, scale
}

// maxAbsErr returns max|got-want| and max|want|.
func maxAbsErr(got []float32, want []float64) (err, ref float64) {
	for i, v := range want {
		err = max(err, math.Abs(float64(got[i])-v))
		ref = max(ref, math.Abs(v))
	}
	return err, ref
}

func TestBackwardAccuracy(t *testing.T) {
	const target = 1e-6
	const eps = 1e-6
	dims := []int{1, 7, 64, 100, 1000, 4096, 16384}
	for _, k := range testKernels() {
		for _, bm := range backwardModes {
			for _, d := range dims {
				rows := min(16, max(2, 32768/d))
				x, dy := normalRows(d, rows, 40), normalRows(d, rows, 41)
				w := normalRows(d, 1, 42)
				n := normFor(bm.mode, w, eps)
				// The training call: Inv from the forward pass, on half the rows' calls; the
				// other half recomputes it.
				inv := make([]float32, rows)
				applyRowsWith(k, &n, formatF32, make([]float32, len(x)), x, nil, inv, 0, 0)
				worst := 0.0
				for _, withInv := range []bool{false, true} {
					dx := make([]float32, len(x))
					g := Grad{DX: dx, X: x, DY: dy}
					if withInv {
						g.Inv = inv
					}
					backwardWith(k, n, g)
					for r := range rows {
						xs, dys := x[r*d:(r+1)*d], dy[r*d:(r+1)*d]
						ref, _, scale := refBackward64(xs, dys, w, bm.mode, eps)
						e, m := maxAbsErr(dx[r*d:(r+1)*d], ref)
						// A row of one element is its own sign times |w'|: dx is inv*g*eps/(x^2+eps),
						// about 1e-6 of the terms whose difference step 4 of the contract
						// computes in float32. Measure it against those terms instead.
						if d == 1 {
							m = scale
						}
						if e/m > worst {
							worst = e / m
						}
					}
				}
				t.Logf("%s %s d=%5d: DX max|err|/max|ref| per row %.3g", k, bm.name, d, worst)
				if worst > target {
					t.Errorf("%s %s d=%d: DX max|err|/max|ref| = %.3g exceeds %.0e", k, bm.name, d, worst, target)
				}
			}
			// Rows on the float64 path: squares that overflow float32, and squares that underflow
			// it with eps = 0. dx is computed in float64 and rounded once.
			for _, c := range []struct {
				scale, eps float32
			}{{1e25, 1e-6}, {1e-22, 0}} {
				for _, d := range []int{64, 1000} {
					x, dy := normalRows(d, 4, 49), normalRows(d, 4, 50)
					for i := range x {
						x[i] *= c.scale
					}
					w := normalRows(d, 1, 51)
					n := normFor(bm.mode, w, c.eps)
					dx := make([]float32, len(x))
					backwardWith(k, n, Grad{DX: dx, X: x, DY: dy})
					worst := 0.0
					for r := range 4 {
						ref, _, _ := refBackward64(x[r*d:(r+1)*d], dy[r*d:(r+1)*d], w, bm.mode, c.eps)
						e, m := maxAbsErr(dx[r*d:(r+1)*d], ref)
						worst = max(worst, e/m)
					}
					t.Logf("%s %s d=%5d x*%g eps=%g (float64 path): DX max|err|/max|ref| per row %.3g", k, bm.name, d, c.scale, c.eps, worst)
					if worst > target {
						t.Errorf("%s %s d=%d x*%g: DX max|err|/max|ref| = %.3g exceeds %.0e", k, bm.name, d, c.scale, worst, target)
					}
				}
			}
		}
	}
}

// DW summed over many rows, the weight gradient of a training batch, against float64 sums.
func TestBackwardAccuracyDW(t *testing.T) {
	const target = 1e-6
	const eps = 1e-5
	rows := 4096
	if testing.Short() {
		rows = 1024
	}
	for _, k := range testKernels() {
		for _, bm := range backwardModes[:2] { // DW needs a weight
			for _, d := range []int{64, 1000} {
				x, dy := normalRows(d, rows, 43), normalRows(d, rows, 44)
				w := normalRows(d, 1, 45)
				n := normFor(bm.mode, w, eps)
				dw := make([]float32, d)
				backwardWith(k, n, Grad{DX: make([]float32, len(x)), X: x, DY: dy, DW: dw})
				ref := make([]float64, d)
				inv := make([]float64, rows)
				for r := range rows {
					inv[r] = refInv64(x[r*d:(r+1)*d], eps)
				}
				for i := range d { // column by column: each sum in row order
					var s float64
					for r := range rows {
						s += float64(dy[r*d+i]) * (float64(x[r*d+i]) * inv[r])
					}
					ref[i] = s
				}
				e, m := maxAbsErr(dw, ref)
				t.Logf("%s %s d=%4d rows=%d: DW max|err|/max|ref| %.3g", k, bm.name, d, rows, e/m)
				if e/m > target {
					t.Errorf("%s %s d=%d rows=%d: DW max|err|/max|ref| = %.3g exceeds %.0e", k, bm.name, d, rows, e/m, target)
				}
			}
		}
	}
}

// lossFD is L = sum over rows of dy*y for a float64 forward pass y = x*inv*w' of the rows of x
// (len(w) each), the loss whose gradient Backward computes when DY = dy.
func lossFD(x, dy []float64, w []float64, mode weightMode, eps float64) float64 {
	d := len(w)
	var l float64
	for r := 0; r < len(x); r += d {
		var ss float64
		for _, v := range x[r : r+d] {
			ss += v * v
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
			l += dy[r+i] * (v * inv * wf)
		}
	}
	return l
}

// Backward is the derivative of the forward pass: DX and DW against central differences of
// L = sum(dy*y) computed in float64, element by element.
func TestBackwardFiniteDifference(t *testing.T) {
	const target = 1e-3
	const rows = 3
	to64 := func(s []float32) []float64 {
		f := make([]float64, len(s))
		for i, v := range s {
			f[i] = float64(v)
		}
		return f
	}
	// diff is the central difference of L in the coordinate *p with step h = 1e-5 times the size
	// of the coordinate (at least 1e-5): truncation error O(h^2), rounding O(1e-16*|L|/h), both
	// far below the tolerance of a float32 gradient.
	diff := func(p *float64, l func() float64) float64 {
		v := *p
		h := 1e-5 * max(1, math.Abs(v))
		*p = v + h
		lp := l()
		*p = v - h
		lm := l()
		*p = v
		return (lp - lm) / (2 * h)
	}
	for _, k := range testKernels() {
		for _, bm := range backwardModes {
			for _, d := range []int{1, 2, 3, 8, 33} {
				// A one-element row is (nearly) constant in x when eps is small: its gradient is
				// about eps/x^2 of the terms the float32 contract subtracts, so it is checked
				// with eps = 0.25, where it is not.
				for _, eps := range []float32{1e-5, 0.25} {
					if d == 1 && eps < 0.1 {
						continue
					}
					ctx := fmt.Sprintf("%s %s d=%d eps=%g", k, bm.name, d, eps)
					x, dy := normalRows(d, rows, 46), normalRows(d, rows, 47)
					w := normalRows(d, 1, 48)
					n := normFor(bm.mode, w, eps)
					dx := make([]float32, len(x))
					g := Grad{DX: dx, X: x, DY: dy}
					var dw []float32
					if bm.mode != unweighted {
						dw = make([]float32, d)
						g.DW = dw
					}
					backwardWith(k, n, g)

					x64, dy64, w64 := to64(x), to64(dy), to64(w)
					loss := func() float64 { return lossFD(x64, dy64, w64, bm.mode, float64(eps)) }
					for r := range rows {
						fd := make([]float64, d)
						for i := range d {
							fd[i] = diff(&x64[r*d+i], loss)
						}
						e, m := maxAbsErr(dx[r*d:(r+1)*d], fd)
						if e > target*m {
							t.Errorf("%s row %d: DX max|err| %.3g is %.3g of max|fd| %.3g; DX %v, fd %v",
								ctx, r, e, e/m, m, dx[r*d:(r+1)*d], fd)
						}
					}
					if dw != nil {
						fd := make([]float64, d)
						for i := range d {
							fd[i] = diff(&w64[i], loss)
						}
						e, m := maxAbsErr(dw, fd)
						if e > target*m {
							t.Errorf("%s: DW max|err| %.3g is %.3g of max|fd| %.3g; DW %v, fd %v", ctx, e, e/m, m, dw, fd)
						}
					}
				}
			}
		}
	}
}
