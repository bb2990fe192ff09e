package rmsnorm

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// The float64 path (step 5 of the contract, step 6 of the backward) is one shared Go routine that
// every kernel hands its rows to, so the tests that compare kernels with one another cannot see a
// mistake in it. These tests hold it to the package documentation's arithmetic, written out here
// in float64 on their own: rows of tiny values with eps 0, whose t = ss/d lies below 2^-100.

// tinyRow returns a row of d values around 1e-20 (ss/d about 1e-40, far below 2^-100) and, for
// the weight and dy, values of ordinary size whose 1+w is not a float32.
func tinyRow(d int) (x, w, dy []float32) {
	x, w, dy = make([]float32, d), make([]float32, d), make([]float32, d)
	for i := range d {
		x[i] = float32(i%7-3) * 1.25e-20 // zeros and both signs among them
		w[i] = float32(0.013*float64(i+1)) + 1e-5
		dy[i] = float32(1 - 0.37*float64(i%5))
	}
	return x, w, dy
}

// The references below are the float64 path's arithmetic: refInv64 (exact squares summed in
// increasing i, 1/sqrt(ss/d + eps), every operation in float64), weightForm64 (w' = w,
// 1 + float64(w) with UnitOffset, or 1) and normFor, from backward_accuracy_test.go.

// Forward: y[i] = float32((x[i]*inv)*w'[i]), one rounding, for every weight form; and for
// bfloat16 rows with RoundNormalized, n = round16(float32(x[i]*inv)), then
// round16(float32(n*w'[i])).
func TestFloat64PathReference(t *testing.T) {
	for _, d := range []int{1, 8, 67, 130} {
		x, w, _ := tinyRow(d)
		inv := refInv64(x, 0)
		for _, mode := range []weightMode{weighted, offset, unweighted} {
			n := normFor(mode, w, 0)
			for _, k := range testKernels() {
				y := make([]float32, d)
				applyRowsWith(k, &n, formatF32, y, x, nil, nil, 0, 0)
				for i := range d {
					want := float32(float64(x[i]) * inv * weightForm64(mode, w, i))
					if math.Float32bits(y[i]) != math.Float32bits(want) {
						t.Fatalf("%s %v d=%d: y[%d] = %#08x, want %#08x", k, mode, d, i, math.Float32bits(y[i]), math.Float32bits(want))
					}
				}
			}
		}

		// The same row in bfloat16 (1.25e-20 times a small integer keeps its top bits), with
		// RoundNormalized.
		x16 := make([]uint16, d)
		for i, v := range x {
			x16[i] = float32ToBF16(v)
		}
		xw := make([]float32, d)
		for i, h := range x16 {
			xw[i] = bf16ToFloat32(h)
		}
		inv16 := refInv64(xw, 0)
		nv := make([]float32, d) // n = round16(float32(x[i]*inv))
		for i := range d {
			nv[i] = bf16ToFloat32(float32ToBF16(float32(float64(xw[i]) * inv16)))
		}
		for _, mode := range []weightMode{weighted, offset, unweighted} {
			wm := w
			if mode == offset {
				// 1+w rounded to float32 first gives the bits of 1 + float64(w) but near a
				// bfloat16 tie: one element gets a weight where the two part (a row of one
				// element has n = ±1, which parts nothing).
				wm = append([]float32(nil), w...)
				i := slices.IndexFunc(nv, func(v float32) bool { return math.Float32bits(v)&0x7f0000 != 0 })
				switch {
				case i >= 0:
					wm[i] = partingWeight(t, nv[i])
				case d > 1:
					t.Fatalf("d=%d: no n with bits below its leading one", d)
				}
			}
			n := normFor(mode, wm, 0)
			n.RoundNormalized = true
			for _, k := range kernelsFor(t, formatBF16) {
				y := make([]uint16, d)
				applyRowsWith(k, &n, formatBF16, y, x16, nil, nil, 0, 0)
				for i := range d {
					want := float32ToBF16(float32(float64(nv[i]) * weightForm64(mode, wm, i)))
					if y[i] != want {
						t.Fatalf("%s bf16 RoundNormalized %v d=%d: y[%d] = %#04x, want %#04x", k, mode, d, i, y[i], want)
					}
				}
			}
		}
	}
}

// On the float64 path a bfloat16 output takes x*inv*w' in float64 and rounds once: a product
// x*inv that float32 would flush to zero still gives a normal y when the weight is large. The
// row: one element near MaxFloat32 (its square overflows float32's t) and the others 1e-30, so
// x*inv is about 1e-68; with a weight of 1e32, y is about 1e-36. Without RoundNormalized, for
// bfloat16 rows and float32 rows into bfloat16.
func TestFloat64PathSmallProducts16(t *testing.T) {
	const d = 8
	x := make([]float32, d)
	w := make([]float32, d)
	x[0], w[0] = 3e38, 1
	for i := 1; i < d; i++ {
		x[i], w[i] = float32(-1e-30*float64(i)), 1e32
	}
	x16 := make([]uint16, d)
	xw := make([]float32, d) // x as bfloat16 holds it
	for i, v := range x {
		x16[i] = float32ToBF16(v)
		xw[i] = bf16ToFloat32(x16[i])
	}
	n := Norm{Weight: w}
	check := func(ctx string, y []uint16, x []float32) {
		inv := refInv64(x, 0)
		for i := range d {
			want := float32ToBF16(float32(float64(x[i]) * inv * float64(w[i])))
			if i > 0 && bf16ToFloat32(want) == 0 {
				t.Fatalf("%s: the reference's y[%d] is zero: the row does not test small products", ctx, i)
			}
			if y[i] != want {
				t.Fatalf("%s: y[%d] = %#04x, want %#04x", ctx, i, y[i], want)
			}
		}
	}
	for _, k := range kernelsFor(t, formatBF16, formatToBF16) {
		y := make([]uint16, d)
		applyRowsWith(k, &n, formatBF16, y, x16, nil, nil, 0, 0)
		check(fmt.Sprintf("%s bfloat16 rows", k), y, xw)
		y = make([]uint16, d)
		applyKernel(k, &n, formatToBF16, &rowsOf[uint16, float32]{Dst: y, X: x})
		check(fmt.Sprintf("%s float32 rows into bfloat16", k), y, x)
	}
}

// partingWeight returns a weight w for which n*(1 + float64(w)), rounded to float32 and then
// to bfloat16, differs from n*(1+w) with 1+w rounded to float32 first.
func partingWeight(t *testing.T, n float32) float32 {
	for b := uint32(0x3c000000); b < 0x3d000000; b += 7 {
		w := math.Float32frombits(b)
		exact := float32ToBF16(float32(float64(n) * (1 + float64(w))))
		if exact != float32ToBF16(float32(float64(n)*float64(1+w))) {
			return w
		}
	}
	t.Fatalf("no weight parts the two products for n = %v", n)
	return 0
}

// Backward: inv recomputed in float64 whatever Grad.Inv holds, g, c, s and dx in float64 with
// w' = 1 + float64(w) for UnitOffset, c summed from +0 in increasing i, dx rounded once; and
// q = float32(dy*(x*inv)) into DW.
func TestBackwardFloat64PathReference(t *testing.T) {
	const d = 67
	x, w, dy0 := tinyRow(d)
	inv := refInv64(x, 0)
	for _, mode := range []weightMode{weighted, offset, unweighted} {
		// A dy of the tiny row's own, and one that makes dy*w' about x, so that s is about 1 and
		// dx's difference cancels to a few units of x: there inv*(a-b) and inv*a - inv*b round
		// apart, and only the contract's order gives the reference's bits.
		cancel := make([]float32, d)
		for i := range d {
			cancel[i] = float32(float64(x[i]) / weightForm64(mode, w, i))
		}
		for _, dy := range [][]float32{dy0, cancel} {
			backwardFloat64Reference(t, mode, x, w, dy, inv)
		}
	}
}

// backwardFloat64Reference is TestBackwardFloat64PathReference for one weight form and dy.
func backwardFloat64Reference(t *testing.T, mode weightMode, x, w, dy []float32, inv float64) {
	t.Helper()
	d := len(x)
	n := normFor(mode, w, 0)
	// float64(...) around each product keeps Go from fusing it with the add (arm64 would),
	// as the contract rounds both.
	var c float64
	for i := range d {
		c += float64(float64(float64(dy[i])*weightForm64(mode, w, i)) * float64(x[i]))
	}
	s := float64(inv*inv) * c / float64(d)
	for _, k := range testKernels() {
		for _, given := range [][]float32{nil, {1}, {float32(inv)}} { // no Inv, a stale one, the forward's
			dx := make([]float32, d)
			g := Grad{DX: dx, X: x, DY: dy, Inv: given}
			var dw []float32
			if mode != unweighted {
				dw = make([]float32, d)
				g.DW = dw
			}
			backwardWith(k, n, g)
			for i := range d {
				want := float32(inv * (float64(float64(dy[i])*weightForm64(mode, w, i)) - float64(float64(x[i])*s)))
				if math.Float32bits(dx[i]) != math.Float32bits(want) {
					t.Fatalf("%s %v Inv %v: dx[%d] = %#08x, want %#08x", k, mode, given, i, math.Float32bits(dx[i]), math.Float32bits(want))
				}
				if dw != nil {
					var zero float32 // DW starts at +0: DW = +0 + P, P = q of the block's one row
					q := float32(float64(dy[i]) * (float64(x[i]) * inv))
					if want := zero + q; math.Float32bits(dw[i]) != math.Float32bits(want) {
						t.Fatalf("%s %v Inv %v: DW[%d] = %#08x, want %#08x", k, mode, given, i, math.Float32bits(dw[i]), math.Float32bits(want))
					}
				}
			}
		}
	}
}

// LayerNorm's backward on the float64 path recomputes m and inv whatever Grad.Mean and Grad.Inv
// hold: the same DX with them given (stale or not) as without.
func TestLayerNormBackwardFloat64PathIgnoresGiven(t *testing.T) {
	const d = 67
	x, w, dy := tinyRow(d)
	for i := range x {
		x[i] += 3e-20 // a mean of its own
	}
	n := Norm{Weight: w, Center: true, Bias: w}
	for _, k := range testKernels() {
		want := make([]float32, d)
		backwardWith(k, n, Grad{DX: want, X: x, DY: dy})
		for _, given := range []struct{ inv, mean []float32 }{{[]float32{1}, []float32{0.5}}, {[]float32{1}, nil}, {nil, []float32{0.5}}} {
			got := make([]float32, d)
			backwardWith(k, n, Grad{DX: got, X: x, DY: dy, Inv: given.inv, Mean: given.mean})
			for i := range d {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s Inv %v Mean %v: dx[%d] = %v, %v without them", k, given.inv, given.mean, i, got[i], want[i])
				}
			}
		}
	}
}
