package rmsnorm

import (
	"math"
	"slices"
	"testing"
)

// Validation of Norm.Backward (backward.go): a call that breaks a rule of Norm or Grad panics,
// before writing anything, with a message that starts "rmsnorm: Norm.Backward: " and names the
// rule and the values at fault; calls at the edge of the rules run and give the same bits as
// their plain equivalents.

// sentinel fills slices the bad calls could write to: a value no gradient of these inputs is.
const sentinel float32 = -1234.5

// sentinels returns n sentinel values.
func sentinels(n int) []float32 { return slices.Repeat([]float32{sentinel}, n) }

func TestBackwardBadInput(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	// buf holds the slices that overlap on purpose. Its values are inputs (X, DY) for some cases
	// and outputs (DX, DW) for others: any write shows as a change.
	buf := make([]float32, 256)
	for i := range buf {
		buf[i] = float32(i%17) - 8.5
	}
	w4 := []float32{1, 2, 3, 4}
	s := sentinels
	type tc struct {
		name string
		n    Norm
		g    Grad
		want []string
	}
	nw := Norm{Weight: w4, Eps: 1e-6}
	cases := []tc{
		// Lengths and shapes.
		{"not a multiple", nw, Grad{DX: s(10), X: buf[:10], DY: s(10)}, []string{"len(X) = 10", "not a multiple", "= 4"}},
		{"not a multiple, no weight", Norm{Dim: 4, Eps: 1e-6}, Grad{DX: s(10), X: buf[:10], DY: s(10)}, []string{"len(X) = 10", "not a multiple", "= 4"}},
		{"DX short", nw, Grad{DX: s(7), X: buf[:8], DY: s(8)}, []string{"len(DX) = 7", "len(X) = 8"}},
		{"DX long", nw, Grad{DX: s(12), X: buf[:8], DY: s(8)}, []string{"len(DX) = 12", "len(X) = 8"}},
		{"DX empty, not nil", nw, Grad{DX: s(0), X: buf[:8], DY: s(8)}, []string{"len(DX) = 0", "len(X) = 8"}}, // nil asks for DW alone
		{"DY short", nw, Grad{DX: s(8), X: buf[:8], DY: s(4)}, []string{"len(DY) = 4", "len(X) = 8"}},
		{"DY long", nw, Grad{DX: s(8), X: buf[:8], DY: s(9)}, []string{"len(DY) = 9", "len(X) = 8"}},
		{"DX with empty X", nw, Grad{DX: s(4), DY: s(0)}, []string{"len(DX) = 4", "len(X) = 0"}},
		{"X short for N rows", nw, Grad{DX: s(14), X: buf[:13], DY: s(14), N: 3, Stride: 5}, []string{"len(X) = 13", "at least 14", "N = 3", "Stride = 5"}},
		{"DX short for N rows", nw, Grad{DX: s(13), X: buf[:14], DY: s(14), N: 3, Stride: 5}, []string{"len(DX) = 13", "at least 14", "N = 3"}},
		{"DY short for N rows", nw, Grad{DX: s(14), X: buf[:14], DY: s(13), N: 3, Stride: 5}, []string{"len(DY) = 13", "at least 14", "N = 3"}},
		{"DX short for N rows back to back", nw, Grad{DX: s(11), X: buf[:12], DY: s(12), N: 3}, []string{"len(DX) = 11", "at least 12", "N = 3"}},
		{"nil X with N rows", nw, Grad{DX: s(8), DY: s(8), N: 2}, []string{"len(X) = 0", "at least 8", "N = 2"}},
		{"X short for one row", nw, Grad{DX: s(4), X: buf[:3], DY: s(4), N: 1}, []string{"len(X) = 3", "at least 4", "N = 1 row of 4 with Stride = 0 (meaning 4)"}},
		{"Stride shorter than d", nw, Grad{DX: s(8), X: buf[:8], DY: s(8), N: 2, Stride: 3}, []string{"Stride = 3", "row length 4"}},
		{"Stride without N", nw, Grad{DX: s(12), X: buf[:12], DY: s(12), Stride: 6}, []string{"Stride = 6", "needs N"}},
		{"negative N", nw, Grad{DX: s(8), X: buf[:8], DY: s(8), N: -1}, []string{"N = -1", "negative"}},
		{"negative Stride", nw, Grad{DX: s(8), X: buf[:8], DY: s(8), N: 2, Stride: -4}, []string{"Stride = -4", "negative"}},
		{"negative Stride without N", nw, Grad{DX: s(8), X: buf[:8], DY: s(8), Stride: -4}, []string{"Stride = -4", "negative"}},
		{"Inv too short", nw, Grad{DX: s(12), X: buf[:12], DY: s(12), Inv: s(2)}, []string{"len(Inv) = 2", "3 rows"}},
		{"Inv too short for N rows", nw, Grad{DX: s(16), X: buf[:16], DY: s(16), N: 2, Stride: 8, Inv: s(1)}, []string{"len(Inv) = 1", "2 rows"}},
		{"Inv empty", nw, Grad{DX: s(4), X: buf[:4], DY: s(4), Inv: s(0)}, []string{"len(Inv) = 0", "the call's 1 row"}},
		{"DW short", nw, Grad{DX: s(8), X: buf[:8], DY: s(8), DW: s(3)}, []string{"len(DW) = 3", "= 4"}},
		{"DW long", nw, Grad{DX: s(8), X: buf[:8], DY: s(8), DW: s(8)}, []string{"len(DW) = 8", "= 4"}},
		{"DW empty", nw, Grad{DX: s(8), X: buf[:8], DY: s(8), DW: s(0)}, []string{"len(DW) = 0", "= 4"}},
		{"DW without a weight", Norm{Dim: 4, Eps: 1e-6}, Grad{DX: s(8), X: buf[:8], DY: s(8), DW: s(4)}, []string{"DW is set", "no weight", "len(DW) = 4"}},

		// The Norm.
		{"negative Eps", Norm{Weight: w4, Eps: -1e-6}, Grad{DX: s(8), X: buf[:8], DY: s(8)}, []string{"Eps = -1e-06", ">= 0"}},
		{"NaN Eps", Norm{Weight: w4, Eps: nan}, Grad{DX: s(8), X: buf[:8], DY: s(8)}, []string{"Eps = NaN"}},
		{"Inf Eps", Norm{Weight: w4, Eps: inf}, Grad{DX: s(8), X: buf[:8], DY: s(8)}, []string{"Eps = +Inf"}},
		{"NaN Eps with no rows", Norm{Weight: w4, Eps: nan}, Grad{}, []string{"Eps = NaN"}},
		{"UnitOffset without a weight", Norm{Dim: 4, Eps: 1e-6, UnitOffset: true}, Grad{DX: s(8), X: buf[:8], DY: s(8)}, []string{"UnitOffset", "Weight is nil"}},
		{"Dim disagrees with Weight", Norm{Weight: w4, Dim: 5, Eps: 1e-6}, Grad{DX: s(8), X: buf[:8], DY: s(8)}, []string{"Dim = 5", "len(Weight) = 4"}},
		{"Dim with an empty Weight", Norm{Weight: w4[:0], Dim: 4, Eps: 1e-6}, Grad{DX: s(8), X: buf[:8], DY: s(8)}, []string{"Dim = 4", "Weight is empty and not nil"}},
		{"negative Dim", Norm{Dim: -4, Eps: 1e-6}, Grad{DX: s(8), X: buf[:8], DY: s(8)}, []string{"Dim = -4"}},
		{"no row length", Norm{Eps: 1e-6}, Grad{DX: s(8), X: buf[:8], DY: s(8)}, []string{"row length is 0", "Weight is nil", "len(X) = 8"}},
		{"no row length, an empty weight", Norm{Weight: []float32{}, Eps: 1e-6}, Grad{DX: s(8), X: buf[:8], DY: s(8)}, []string{"row length is 0", "Weight is empty", "len(X) = 8"}},

		// Overlaps. DW is written (accumulated), DX is written; X, DY, Weight and Inv are read.
		{"DW overlaps X", nw, Grad{DX: s(8), X: buf[0:8], DY: s(8), DW: buf[4:8]}, []string{"DW overlaps X"}},
		{"DW overlaps DY", nw, Grad{DX: s(8), X: buf[0:8], DY: buf[16:24], DW: buf[22:26]}, []string{"DW overlaps DY"}},
		{"DW is Weight", Norm{Weight: buf[100:104], Eps: 1e-6}, Grad{DX: s(8), X: buf[0:8], DY: s(8), DW: buf[100:104]}, []string{"DW overlaps Weight"}},
		{"DW overlaps Inv", nw, Grad{DX: s(8), X: buf[0:8], DY: s(8), Inv: buf[40:42], DW: buf[38:42]}, []string{"DW overlaps Inv"}},
		{"DX is X", nw, Grad{DX: buf[0:8], X: buf[0:8], DY: s(8)}, []string{"DX overlaps X"}},
		{"DX shifted over X", nw, Grad{DX: buf[2:10], X: buf[0:8], DY: s(8)}, []string{"DX overlaps X"}},
		{"DX is X, in place with DY too", nw, Grad{DX: buf[0:8], X: buf[0:8], DY: buf[0:8]}, []string{"DX overlaps X"}},
		{"DX shifted over DY", nw, Grad{DX: buf[18:26], X: buf[0:8], DY: buf[16:24]}, []string{"DX overlaps DY", "without starting at the same element"}},
		{"DX starts before DY", nw, Grad{DX: buf[14:22], X: buf[0:8], DY: buf[16:24]}, []string{"DX overlaps DY", "without starting at the same element"}},
		{"strided DX inside DY", nw, Grad{DX: buf[20:32], X: buf[0:12], DY: buf[16:28], N: 2, Stride: 8}, []string{"DX overlaps DY", "without starting at the same element"}},
		{"DX overlaps Weight", Norm{Weight: buf[100:104], Eps: 1e-6}, Grad{DX: buf[98:106], X: buf[0:8], DY: s(8)}, []string{"DX overlaps Weight"}},
		{"DX overlaps Weight, unit offset", Norm{Weight: buf[100:104], Eps: 1e-6, UnitOffset: true}, Grad{DX: buf[102:110], X: buf[0:8], DY: s(8)}, []string{"DX overlaps Weight"}},
		{"DX overlaps Inv", nw, Grad{DX: buf[36:44], X: buf[0:8], DY: s(8), Inv: buf[40:42]}, []string{"DX overlaps Inv"}},
		{"DX overlaps DW", nw, Grad{DX: buf[56:64], X: buf[0:8], DY: s(8), DW: buf[60:64]}, []string{"DX overlaps DW"}},
		{"DX overlaps DW, in place", nw, Grad{DX: buf[56:64], X: buf[0:8], DY: buf[56:64], DW: buf[60:64]}, []string{"overlaps"}},
		{"no DX, DY short", nw, Grad{X: buf[:8], DY: s(4), DW: s(4)}, []string{"len(DY) = 4", "len(X) = 8"}},
		{"no DX, DW overlaps DY", nw, Grad{X: buf[0:8], DY: buf[16:24], DW: buf[20:24]}, []string{"DW overlaps DY"}},
	}
	// Validation comes before any split of the rows: the same calls with Workers.
	for _, c := range cases[len(cases)-8:] {
		c.name += ", Workers 4"
		c.n.Workers = 4
		cases = append(cases, c)
	}
	splitAll(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := slices.Clone(buf)
			saved := [][]float32{slices.Clone(c.g.DX), slices.Clone(c.g.DY), slices.Clone(c.g.DW), slices.Clone(c.g.Inv)}
			mustPanic(t, c.name, append([]string{"rmsnorm: Norm.Backward: "}, c.want...), func() { c.n.Backward(c.g) })
			if i := firstDiff(buf, before); i >= 0 {
				t.Fatalf("%s: buf[%d] changed from %v to %v before the panic", c.name, i, before[i], buf[i])
			}
			for i, now := range [][]float32{c.g.DX, c.g.DY, c.g.DW, c.g.Inv} {
				if j := firstDiff(now, saved[i]); j >= 0 {
					t.Fatalf("%s: %s[%d] changed from %v to %v before the panic", c.name, []string{"DX", "DY", "DW", "Inv"}[i], j, saved[i][j], now[j])
				}
			}
		})
	}
}

// Calls at the edge of the rules run, and give the bits of their plain equivalents.
func TestBackwardLegalEdges(t *testing.T) {
	w := []float32{0.5, -1, 2, 0.25}
	n := Norm{Weight: w, Eps: 1e-6}

	// No rows: nothing to do, DW unchanged.
	Norm{}.Backward(Grad{})
	Norm{Dim: 4}.Backward(Grad{DX: []float32{}, X: []float32{}, DY: []float32{}})
	dw := []float32{1, 2, 3, 4}
	n.Backward(Grad{DW: dw})
	n.Backward(Grad{DW: dw, Inv: []float32{}, N: 0})
	if !slices.Equal(dw, []float32{1, 2, 3, 4}) {
		t.Fatalf("Backward with no rows changed DW to %v", dw)
	}

	x := normalRows(4, 3, 60)
	dy := normalRows(4, 3, 61)
	inv := make([]float32, 3)
	n.Apply(Rows{Dst: make([]float32, len(x)), X: x, Inv: inv})
	// The plain call: DX of its own, contiguous rows.
	wantDX, wantDW := make([]float32, len(x)), []float32{1, 2, 3, 4}
	n.Backward(Grad{DX: wantDX, X: x, DY: dy, Inv: inv, DW: wantDW})
	if firstDiff(wantDX, make([]float32, len(x))) < 0 {
		t.Fatalf("the plain call left DX zero: %v", wantDX)
	}
	check := func(name string, dx []float32, dw []float32) {
		t.Helper()
		if i := firstDiff(dx, wantDX); i >= 0 {
			t.Fatalf("%s: DX[%d] = %v, the plain call gives %v", name, i, dx[i], wantDX[i])
		}
		if i := firstDiff(dw, wantDW); i >= 0 {
			t.Fatalf("%s: DW[%d] = %v, the plain call gives %v", name, i, dw[i], wantDW[i])
		}
	}

	// In place: DX is DY.
	g := slices.Clone(dy)
	dw = []float32{1, 2, 3, 4}
	n.Backward(Grad{DX: g, X: x, DY: g, Inv: inv, DW: dw})
	check("DX = DY", g, dw)

	// DY is X (both are only read); DX separate.
	xdy := slices.Clone(x)
	dx := make([]float32, len(x))
	n.Backward(Grad{DX: dx, X: xdy, DY: xdy, Inv: inv})
	dx2 := make([]float32, len(x))
	n.Backward(Grad{DX: dx2, X: x, DY: slices.Clone(x), Inv: inv})
	if i := firstDiff(dx, dx2); i >= 0 {
		t.Fatalf("DY = X: DX[%d] = %v, with a copy of X as DY %v", i, dx[i], dx2[i])
	}

	// The weight inside X and Inv inside DY: only read, so allowed.
	{
		xw := append(slices.Clone(x), w...)
		dyi := append(slices.Clone(dy), inv...)
		dx := make([]float32, len(x))
		dw := []float32{1, 2, 3, 4}
		Norm{Weight: xw[len(x):], Eps: 1e-6}.Backward(Grad{DX: dx, X: xw[:len(x)], DY: dyi[:len(x)], Inv: dyi[len(x):], DW: dw})
		check("Weight in X's array, Inv in DY's", dx, dw)
	}

	// N rows a stride apart, in slices longer than needed, Inv longer than N; the elements between
	// rows are neither read (they hold NaN) nor written.
	const stride, d = 7, 4
	span := 2*stride + d + 5
	sx, sdy, sdx := sentinels(span), sentinels(span), sentinels(span)
	for i := range sx {
		sx[i], sdy[i] = float32(math.NaN()), float32(math.NaN())
	}
	for r := range 3 {
		copy(sx[r*stride:], x[r*d:(r+1)*d])
		copy(sdy[r*stride:], dy[r*d:(r+1)*d])
	}
	dw = []float32{1, 2, 3, 4}
	n.Backward(Grad{DX: sdx, X: sx, DY: sdy, N: 3, Stride: stride, Inv: append(slices.Clone(inv), 99, 99), DW: dw})
	got := make([]float32, 0, len(x))
	for r := range 3 {
		got = append(got, sdx[r*stride:r*stride+d]...)
		if r < 2 {
			for i := r*stride + d; i < (r+1)*stride; i++ {
				if sdx[i] != sentinel {
					t.Fatalf("strided: DX[%d], between rows %d and %d, was written: %v", i, r, r+1, sdx[i])
				}
			}
		}
	}
	for i := 2*stride + d; i < span; i++ {
		if sdx[i] != sentinel {
			t.Fatalf("strided: DX[%d], past the last row, was written: %v", i, sdx[i])
		}
	}
	check("N rows with Stride", got, dw)

	// Strided and in place together.
	dw = []float32{1, 2, 3, 4}
	n.Backward(Grad{DX: sdy, X: sx, DY: sdy, N: 3, Stride: stride, Inv: inv, DW: dw})
	got = got[:0]
	for r := range 3 {
		got = append(got, sdy[r*stride:r*stride+d]...)
	}
	check("N rows with Stride, in place", got, dw)
}
