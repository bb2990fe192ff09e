package rmsnorm

import (
	"fmt"
	"slices"
	"testing"
)

// Backward without DX (Grad.DX nil): the weight gradient alone. Each kernel must add to DW the
// same bits as the call with DX, which the core matrix compares with the generic kernel, and write
// nothing else.

func TestBackwardWithoutDX(t *testing.T) {
	splitAll(t)
	for _, k := range testKernels() {
		for ci, c := range valueClasses {
			for _, d := range []int{1, 7, 64, 129, 1000} {
				for _, rows := range []int{1, 5, 33, 70} {
					for _, stride := range []int{0, d + 3} {
						for _, workers := range []int{1, 3} {
							ctx := fmt.Sprintf("%v %s d=%d rows=%d stride=%d workers=%d", k, c.name, d, rows, stride, workers)
							checkWithoutDX(t, ctx, k, c, d, rows, stride, workers, ci%2 == 0, ci%3 == 0)
						}
					}
				}
			}
		}
	}
}

// checkWithoutDX runs one backward call with DX and the same without, and compares DW; X, DY and
// Inv must be left as they were.
func checkWithoutDX(t *testing.T, ctx string, k kernelID, c valueClass, d, rows, stride, workers int, unitOffset, withInv bool) {
	t.Helper()
	n, span := rows, rows*d
	if stride == 0 {
		n = 0
	} else {
		span = (rows-1)*stride + d
	}
	r := seedFor(d, rows, stride, workers)
	x, dy, w, dw0 := make([]float32, span), make([]float32, span), make([]float32, d), make([]float32, d)
	fill(x, c, r)
	fill(dy, classNormal, r)
	fill(w, classNormal, r)
	fill(dw0, classNormal, r)
	norm := Norm{Weight: w, Eps: 1e-6, UnitOffset: unitOffset, Workers: workers}
	var inv []float32
	if withInv {
		inv = make([]float32, rows)
		applyRowsWith(kernelGeneric, &norm, formatF32, make([]float32, span), x, nil, inv, n, stride)
	}
	want := slices.Clone(dw0)
	backwardWith(k, norm, Grad{DX: make([]float32, span), X: x, DY: dy, N: n, Stride: stride, Inv: inv, DW: want})
	got := slices.Clone(dw0)
	x0, dy0, inv0 := slices.Clone(x), slices.Clone(dy), slices.Clone(inv)
	backwardWith(k, norm, Grad{X: x, DY: dy, N: n, Stride: stride, Inv: inv, DW: got})
	if i := firstDiff(got, want); i >= 0 {
		t.Fatalf("%s: DW[%d] = %v without DX, %v with it", ctx, i, got[i], want[i])
	}
	for _, b := range []struct {
		name      string
		now, then []float32
	}{{"X", x, x0}, {"DY", dy, dy0}, {"Inv", inv, inv0}} {
		if i := firstDiff(b.now, b.then); i >= 0 {
			t.Fatalf("%s: %s[%d] changed from %v to %v", ctx, b.name, i, b.then[i], b.now[i])
		}
	}
}

// TestBackwardWithoutDXOrDW: with neither DX nor DW there is nothing to write; the inputs stay
// as they were (the validation table has the misuse without DX).
func TestBackwardWithoutDXOrDW(t *testing.T) {
	x, dy, inv := normalRows(4, 3, 1), normalRows(4, 3, 2), normalRows(3, 1, 3)
	x0, dy0, inv0 := slices.Clone(x), slices.Clone(dy), slices.Clone(inv)
	Norm{Weight: ones(4), Eps: 1e-6}.Backward(Grad{X: x, DY: dy, Inv: inv})
	for i, b := range [][2][]float32{{x, x0}, {dy, dy0}, {inv, inv0}} {
		if j := firstDiff(b[0], b[1]); j >= 0 {
			t.Fatalf("buffer %d changed at %d", i, j)
		}
	}
}
