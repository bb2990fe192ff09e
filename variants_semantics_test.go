package rmsnorm

import (
	"math"
	"slices"
	"testing"
)

// What each variant of Norm and Rows means, checked through the public API (with the active
// kernel) against relations that must hold exactly, and against float64 references: no weight is
// weight one, UnitOffset is weight 1+w, the residual add, strided rows, 1/rms out. The variants'
// accuracy is in accuracy_test.go, their bits on every kernel in variants_test.go.

func TestUnweightedIsWeightOne(t *testing.T) {
	for _, d := range []int{1, 3, 64, 100, 128, 4097} {
		x := normalRows(d, 5, 1)
		want := make([]float32, len(x))
		Forward(want, x, ones(d), 1e-6)
		got := make([]float32, len(x))
		n := Norm{Dim: d, Eps: 1e-6}
		n.Forward(got, x)
		if i := firstDiff(got, want); i >= 0 {
			t.Fatalf("d=%d: y[%d] = %v without weight, %v with weight 1", d, i, got[i], want[i])
		}
	}
}

func TestUnitOffsetIsOnePlusWeight(t *testing.T) {
	for _, d := range []int{1, 3, 64, 100, 128, 4097} {
		x := normalRows(d, 5, 2)
		w := normalRows(d, 1, 3)
		w1 := make([]float32, d)
		for i := range w {
			w1[i] = 1 + w[i]
		}
		want := make([]float32, len(x))
		Forward(want, x, w1, 1e-6)
		got := make([]float32, len(x))
		n := Norm{Weight: w, Eps: 1e-6, UnitOffset: true}
		n.Forward(got, x)
		if i := firstDiff(got, want); i >= 0 {
			t.Fatalf("d=%d: y[%d] = %v with UnitOffset, %v with weight 1+w", d, i, got[i], want[i])
		}
	}
}

// Gemma's zero-centred weights: 1 + 2^-8 is kept in float32, where bfloat16 would round it to 1.
func TestUnitOffsetKeepsSmallWeights(t *testing.T) {
	const small = 0.00390625 // 2^-8
	d := 64
	x := normalRows(d, 1, 4)
	w := make([]float32, d)
	for i := range w {
		w[i] = small
	}
	plain := make([]float32, d)
	(&Norm{Dim: d, Eps: 1e-6}).Forward(plain, x)
	y := make([]float32, d)
	(&Norm{Weight: w, Eps: 1e-6, UnitOffset: true}).Forward(y, x)
	for i := range y {
		if plain[i] == 0 {
			continue
		}
		ratio := float64(y[i]) / float64(plain[i])
		if math.Abs(ratio-(1+small)) > 2e-7 {
			t.Fatalf("y[%d]/x_norm[%d] = %.9f, want 1 + 2^-8 = %.9f", i, i, ratio, 1+small)
		}
	}
}

func TestResidualSemantics(t *testing.T) {
	for _, d := range []int{1, 7, 128, 300, 4096} {
		const rows = 6
		x := normalRows(d, rows, 5)
		res := normalRows(d, rows, 6)
		w := normalRows(d, 1, 7)
		h := make([]float32, len(x))
		for i := range h {
			h[i] = x[i] + res[i]
		}
		want := make([]float32, len(x))
		Forward(want, h, w, 1e-5)

		got := make([]float32, len(x))
		n := Norm{Weight: w, Eps: 1e-5}
		n.Apply(Rows{Dst: got, X: x, Residual: res})
		if i := firstDiff(res, h); i >= 0 {
			t.Fatalf("d=%d: Residual[%d] = %v, want x + residual = %v", d, i, res[i], h[i])
		}
		if i := firstDiff(got, want); i >= 0 {
			t.Fatalf("d=%d: y[%d] = %v, want RMSNorm(x + residual) = %v", d, i, got[i], want[i])
		}
	}
}

// The pre-norm block in place: x holds the block output, res the residual stream; afterwards res
// is the new stream and x its normalized form, ready for the next block.
func TestResidualInPlace(t *testing.T) {
	d, rows := 256, 3
	x := normalRows(d, rows, 8)
	res := normalRows(d, rows, 9)
	w := normalRows(d, 1, 10)
	x2, res2 := slices.Clone(x), slices.Clone(res)
	n := Norm{Weight: w, Eps: 1e-6}
	want := make([]float32, len(x))
	n.Apply(Rows{Dst: want, X: x2, Residual: res2})
	n.Apply(Rows{Dst: x, X: x, Residual: res})
	if i := firstDiff(x, want); i >= 0 {
		t.Fatalf("in place y[%d] = %v, out of place %v", i, x[i], want[i])
	}
	if i := firstDiff(res, res2); i >= 0 {
		t.Fatalf("in place residual[%d] = %v, out of place %v", i, res[i], res2[i])
	}
}

func TestStridedEqualsContiguous(t *testing.T) {
	for _, d := range []int{1, 5, 128, 200} {
		for _, gap := range []int{1, 3, 128} {
			const rows = 7
			stride := d + gap
			x := normalRows(d, rows, 11)
			w := normalRows(d, 1, 12)
			want := make([]float32, len(x))
			Forward(want, x, w, 1e-6)
			buf := make([]float32, (rows-1)*stride+d)
			for i := range buf {
				buf[i] = -7
			}
			for r := 0; r < rows; r++ {
				copy(buf[r*stride:], x[r*d:(r+1)*d])
			}
			n := Norm{Weight: w, Eps: 1e-6}
			n.Apply(Rows{Dst: buf, X: buf, N: rows, Stride: stride})
			for r := 0; r < rows; r++ {
				if i := firstDiff(buf[r*stride:r*stride+d], want[r*d:(r+1)*d]); i >= 0 {
					t.Fatalf("d=%d stride=%d: row %d y[%d] = %v, contiguous gives %v", d, stride, r, i, buf[r*stride+i], want[r*d+i])
				}
				for i := r*stride + d; r+1 < rows && i < (r+1)*stride; i++ {
					if buf[i] != -7 {
						t.Fatalf("d=%d stride=%d: element %d between rows was written", d, stride, i)
					}
				}
			}
		}
	}
}

// Inv[r] is the inv each row was scaled with: with no weight, y[i] = x[i]*Inv[r] exactly.
func TestInvOut(t *testing.T) {
	for _, d := range []int{1, 9, 128, 1000} {
		const rows = 9
		x := normalRows(d, rows, 13)
		for i := 0; i < d; i++ {
			x[4*d+i] *= 1e30 // row 4 takes the float64 path
		}
		y := make([]float32, len(x))
		inv := make([]float32, rows)
		n := Norm{Dim: d, Eps: 1e-6}
		n.Apply(Rows{Dst: y, X: x, Inv: inv})
		for r := 0; r < rows; r++ {
			ref := ref64(x[r*d:(r+1)*d], ones(d), 1e-6)
			if e := math.Abs(float64(inv[r])*float64(x[r*d])-ref[0]) / math.Abs(ref[0]); e > 3e-7 {
				t.Fatalf("d=%d row %d: inv = %v is off by %.3g relative", d, r, inv[r], e)
			}
			if r == 4 {
				continue // the float64 path rounds x*inv once, in float64
			}
			for i := 0; i < d; i++ {
				if y[r*d+i] != x[r*d+i]*inv[r] {
					t.Fatalf("d=%d row %d: y[%d] = %v but x*Inv = %v", d, r, i, y[r*d+i], x[r*d+i]*inv[r])
				}
			}
		}
	}
}
