package rmsnorm

import (
	"fmt"
	"math"
	"testing"
	"unsafe"
)

// Validation of DstStride in every Apply method, and of ApplyToBF16 and ApplyToF16 (RowsTo16): a
// call that breaks a rule panics, before writing anything, with a message that names the method,
// the rule and the values at fault; calls at the edge of the rules run.

// allApplyFormats are the formats of the five Apply methods.
var allApplyFormats = []format{formatF32, formatBF16, formatF16, formatToBF16, formatToF16}

// callApply calls the public Apply method of format f on r.
func callApply[D, T elem](n Norm, f format, r rowsOf[D, T]) {
	switch r := any(r).(type) {
	case rowsOf[float32, float32]:
		n.Apply(Rows(r))
	case rowsOf[uint16, uint16]:
		if f == formatBF16 {
			n.ApplyBF16(Rows16(r))
		} else {
			n.ApplyF16(Rows16(r))
		}
	case rowsOf[uint16, float32]:
		applyTo16(n, f, RowsTo16(r))
	}
}

// layoutCase is a call described by its layout and the lengths of its slices (-1: nil).
type layoutCase struct {
	name                         string
	n, stride, dstStride         int
	lenX, lenDst, lenRes, lenInv int
	want                         []string // what the message says after "rmsnorm: <method>: "
}

// rowsFor builds the rows of c: X holds non-zero values, the other slices zeros, so that any
// write shows.
func rowsFor[D, T elem](c layoutCase) rowsOf[D, T] {
	r := rowsOf[D, T]{N: c.n, Stride: c.stride, DstStride: c.dstStride, X: make([]T, c.lenX), Dst: make([]D, c.lenDst)}
	for i := range r.X {
		r.X[i] = T(i%7 + 1)
	}
	if c.lenRes >= 0 {
		r.Residual = make([]T, c.lenRes)
	}
	if c.lenInv >= 0 {
		r.Inv = make([]float32, c.lenInv)
	}
	return r
}

// mustPanicRows checks that the method of format f panics on r with want after its name, and
// writes nothing.
func mustPanicRows[D, T elem](t *testing.T, ctx string, n Norm, f format, r rowsOf[D, T], want []string) {
	t.Helper()
	want = append([]string{"rmsnorm: " + applyNamesOf[f].fn + ": "}, want...)
	call := func() { callApply(n, f, r) }
	mustPanicUnwritten(t, ctx, want, call, r.X, r.Residual)
	mustPanicUnwritten(t, ctx, want, call, r.Dst)
	mustPanicUnwritten(t, ctx, want, call, r.Inv)
}

func TestDstStrideBadInput(t *testing.T) {
	cases := []layoutCase{
		{"negative DstStride", 2, 0, -4, 8, 8, -1, -1, []string{"DstStride = -4 must not be negative"}},
		{"DstStride without N", 0, 0, 6, 8, 8, -1, -1, []string{"DstStride = 6 needs N", "fill Dst back to back"}},
		{"DstStride without N, Stride d", 0, 4, 8, 8, 16, -1, -1, []string{"DstStride = 8 needs N"}},
		{"DstStride shorter than d", 2, 0, 3, 8, 8, -1, -1, []string{"DstStride = 3 is shorter than the row length 4"}},
		{"DstStride shorter than d, Stride longer", 2, 9, 2, 13, 8, -1, -1, []string{"DstStride = 2 is shorter than the row length 4"}},
		{"Dst too short at DstStride", 3, 0, 6, 12, 15, -1, -1, []string{"len(Dst) = 15", "at least 16", "N = 3 rows of 4 with DstStride = 6"}},
		{"Dst long enough at Stride, short at DstStride", 3, 5, 7, 14, 16, -1, -1, []string{"len(Dst) = 16", "at least 18", "DstStride = 7"}},
		{"Dst at DstStride 0 takes Stride", 3, 6, 0, 16, 15, -1, -1, []string{"len(Dst) = 15", "at least 16", "DstStride = 0 (meaning 6)"}},
		{"X too short, Dst at its own DstStride", 3, 5, 4, 13, 64, -1, -1, []string{"len(X) = 13", "at least 14", "Stride = 5"}},
		{"Residual follows Stride, not DstStride", 3, 5, 4, 14, 12, 13, -1, []string{"len(Residual) = 13", "at least 14", "Stride = 5"}},
		{"Inv too short with DstStride", 3, 0, 6, 12, 16, -1, 2, []string{"len(Inv) = 2", "3 rows"}},
		{"Dst length with rows back to back", 0, 0, 0, 8, 7, -1, -1, []string{"len(Dst) = 7", "want len(X) = 8"}},
		{"Dst length with DstStride d back to back", 0, 0, 4, 8, 12, -1, -1, []string{"len(Dst) = 12", "want len(X) = 8"}},
		{"Residual length", 0, 0, 0, 8, 8, 4, -1, []string{"len(Residual) = 4", "want len(X) = 8"}},
		{"not a multiple", 0, 0, 0, 9, 9, -1, -1, []string{"len(X) = 9", "not a multiple", "len(Weight) = 4"}},
		{"X too short for N rows", 3, 5, 0, 13, 64, -1, -1, []string{"len(X) = 13", "at least 14"}},
		{"Inv too short", 0, 0, 0, 12, 12, -1, 2, []string{"len(Inv) = 2", "3 rows"}},
	}
	w4 := []float32{1, 2, 3, 4}
	for _, c := range cases {
		// Each mistake with every weight form and with and without a residual of its own, which
		// send the rows back to back down other paths (see Apply), must be told the same way.
		for _, n := range []Norm{{Weight: w4, Eps: 1e-6}, {Weight: w4, Eps: 1e-6, UnitOffset: true}, {Weight: w4, Eps: 1e-6, RoundNormalized: true}} {
			for _, withRes := range []bool{false, true} {
				c := c
				if withRes {
					if c.lenRes >= 0 {
						continue
					}
					c.lenRes = c.lenX
				}
				for _, f := range allApplyFormats {
					mustPanicCase(t, fmt.Sprintf("%s (%s, %+v, residual %v)", c.name, fname(f), n, c.lenRes >= 0), n, f, c)
				}
			}
		}
	}
	// Without a weight, the row length is Dim: the same rules.
	for _, c := range cases[:6] {
		for _, f := range allApplyFormats {
			mustPanicCase(t, fmt.Sprintf("%s (%s, no weight)", c.name, fname(f)), Norm{Dim: 4, Eps: 1e-6}, f, c)
		}
	}
}

// mustPanicCase runs mustPanicRows on the rows of c for the method of format f.
func mustPanicCase(t *testing.T, ctx string, n Norm, f format, c layoutCase) {
	t.Helper()
	switch f {
	case formatF32:
		mustPanicRows(t, ctx, n, f, rowsFor[float32, float32](c), c.want)
	case formatBF16, formatF16:
		mustPanicRows(t, ctx, n, f, rowsFor[uint16, uint16](c), c.want)
	default:
		mustPanicRows(t, ctx, n, f, rowsFor[uint16, float32](c), c.want)
	}
}

// In place needs DstStride equal to Stride, in the forms whose Dst can be X.
func TestDstStrideInPlace(t *testing.T) {
	w4 := []float32{1, 2, 3, 4}
	n := Norm{Weight: w4, Eps: 1e-6}
	for _, dstStride := range []int{12, 4, 5} {
		for _, f := range []format{formatF32, formatBF16, formatF16} {
			want := []string{fmt.Sprintf("Dst is X with DstStride = %d and Stride = 8", dstStride), "in place needs the same stride"}
			ctx := fmt.Sprintf("%s DstStride=%d", fname(f), dstStride)
			if f == formatF32 {
				x := make([]float32, 40)
				for i := range x {
					x[i] = float32(i + 1)
				}
				mustPanicRows(t, ctx, n, f, rowsOf[float32, float32]{Dst: x, X: x, N: 3, Stride: 8, DstStride: dstStride}, want)
			} else {
				x := make([]uint16, 40)
				for i := range x {
					x[i] = uint16(0x3c00 + i)
				}
				mustPanicRows(t, ctx, n, f, rowsOf[uint16, uint16]{Dst: x, X: x, N: 3, Stride: 8, DstStride: dstStride}, want)
			}
		}
	}
	// And with it equal (or 0), the call runs in place.
	for _, dstStride := range []int{0, 8} {
		x := make([]float32, 20)
		for i := range x {
			x[i] = float32(i%5 + 1)
		}
		n.Apply(Rows{Dst: x, X: x, N: 3, Stride: 8, DstStride: dstStride})
		if x[4] != 5 || x[0] == 1 || x[8] == 4 {
			t.Fatalf("in place with DstStride = %d: the rows were not normalized, or the gap was written: %v", dstStride, x)
		}
	}
}

// The mixed forms' Dst shares no memory with X, the residual, Inv or the weight: not even X's first
// element (the types differ, so there is no in place).
func TestApplyTo16Overlaps(t *testing.T) {
	buf := make([]float32, 128)
	for i := range buf {
		buf[i] = float32(i%13) - 6
	}
	// view returns the 16-bit elements over buf[i:j].
	view := func(i, j int) []uint16 { return unsafe.Slice((*uint16)(unsafe.Pointer(&buf[i])), 2*(j-i)) }
	w4 := []float32{1, 2, 3, 4}
	n := Norm{Weight: w4, Eps: 1e-6}
	type tc struct {
		name string
		n    Norm
		r    RowsTo16
		want []string
	}
	cases := []tc{
		{"Dst over X", n, RowsTo16{Dst: view(0, 4), X: buf[0:8]}, []string{"Dst overlaps X (the output is 16-bit, the input float32: they cannot share memory)"}},
		{"Dst over X, strided", n, RowsTo16{Dst: view(0, 10), X: buf[0:20], N: 2, Stride: 16, DstStride: 16}, []string{"Dst overlaps X", "cannot share memory"}},
		{"Dst inside X", n, RowsTo16{Dst: view(2, 6), X: buf[0:8]}, []string{"Dst overlaps X", "cannot share memory"}},
		{"Dst rows in the gaps of X", n, RowsTo16{Dst: view(4, 10), X: buf[0:20], N: 2, Stride: 16, DstStride: 8}, []string{"Dst overlaps X", "cannot share memory"}},
		{"Dst ends inside X", n, RowsTo16{Dst: unsafe.Slice((*uint16)(unsafe.Pointer(&buf[32])), 8), X: buf[33:41]}, []string{"Dst overlaps X", "cannot share memory"}},
		{"Dst over Residual", n, RowsTo16{Dst: view(32, 36), X: buf[0:8], Residual: buf[32:40]}, []string{"Residual overlaps Dst"}},
		{"Residual in the gaps of Dst", n, RowsTo16{Dst: view(32, 42), X: buf[0:20], N: 2, Stride: 16, DstStride: 16, Residual: buf[35:55]}, []string{"Residual overlaps Dst"}},
		{"Dst over Inv", n, RowsTo16{Dst: view(48, 52), X: buf[0:8], Inv: buf[50:52]}, []string{"Inv overlaps Dst"}},
		{"Dst over Weight", Norm{Weight: buf[60:64], Eps: 1e-6}, RowsTo16{Dst: view(62, 66), X: buf[0:8]}, []string{"Dst overlaps Weight"}},
		{"Residual is X", n, RowsTo16{Dst: make([]uint16, 8), X: buf[0:8], Residual: buf[0:8]}, []string{"Residual overlaps X"}},
		{"Inv over X", n, RowsTo16{Dst: make([]uint16, 8), X: buf[0:8], Inv: buf[6:8]}, []string{"Inv overlaps X"}},
		{"NaN Eps", Norm{Weight: w4, Eps: float32(math.NaN())}, RowsTo16{Dst: make([]uint16, 8), X: buf[:8]}, []string{"Eps = NaN"}},
		{"NaN Eps without rows", Norm{Weight: w4, Eps: float32(math.NaN())}, RowsTo16{}, []string{"Eps = NaN"}},
		{"negative Workers", Norm{Weight: w4, Eps: 1e-6, Workers: -1}, RowsTo16{Dst: make([]uint16, 8), X: buf[:8]}, []string{"Workers = -1 is negative"}},
		{"UnitOffset without Weight", Norm{Dim: 4, Eps: 1e-6, UnitOffset: true}, RowsTo16{Dst: make([]uint16, 8), X: buf[:8]}, []string{"UnitOffset", "Weight is nil"}},
	}
	for _, c := range cases {
		for _, m := range []Norm{c.n, func() Norm { u := c.n; u.UnitOffset = u.UnitOffset || u.Weight != nil; return u }()} {
			for _, f := range formatsTo16 {
				ctx := fmt.Sprintf("%s (%s, %+v)", c.name, fname(f), m)
				want := append([]string{"rmsnorm: " + applyNamesOf[f].fn + ": "}, c.want...)
				mustPanicUnwritten(t, ctx, want, func() { applyTo16(m, f, c.r) }, buf, c.r.Inv)
				mustPanicUnwritten(t, ctx, want, func() { applyTo16(m, f, c.r) }, c.r.Dst)
			}
		}
	}
}

// Calls at the edge of the rules that must run: DstStride d with rows back to back, DstStride
// with slices longer than needed, dst rows closer together than those of x and further apart.
func TestDstStrideLegalEdges(t *testing.T) {
	w := []float32{1, 2}
	n := Norm{Weight: w, Eps: 1e-6}
	x := []float32{3, 4, 9, 9, 9, 6, 8, 9}
	for _, f := range allApplyFormats {
		for _, c := range []struct {
			name                 string
			n, stride, dstStride int
			lenDst               int
			rows                 []int // where each row of dst starts
		}{
			{"DstStride d back to back", 0, 0, 2, 8, []int{0, 2, 4, 6}},
			{"DstStride smaller", 2, 5, 2, 4, []int{0, 2}},
			{"DstStride larger, Dst longer", 2, 5, 7, 12, []int{0, 7}},
		} {
			ctx := fmt.Sprintf("%s %s", fname(f), c.name)
			// Dst has room past its length, to show a write there without harming other memory.
			const room = 16
			var y []float32 // dst widened, to its capacity
			switch f {
			case formatF32:
				y = make([]float32, c.lenDst+room)
				callApply(n, f, rowsOf[float32, float32]{Dst: y[:c.lenDst], X: x, N: c.n, Stride: c.stride, DstStride: c.dstStride})
			case formatBF16, formatF16:
				d16 := make([]uint16, c.lenDst+room)
				callApply(n, f, rowsOf[uint16, uint16]{Dst: d16[:c.lenDst], X: narrowAll(x, f), N: c.n, Stride: c.stride, DstStride: c.dstStride})
				y = widenAll(d16, f)
			default:
				d16 := make([]uint16, c.lenDst+room)
				callApply(n, f, rowsOf[uint16, float32]{Dst: d16[:c.lenDst], X: x, N: c.n, Stride: c.stride, DstStride: c.dstStride})
				y = widenAll(d16, f)
			}
			// Every row written (non-zero: x and the weight hold no zero), nothing else, nothing
			// past the slice.
			written := make([]bool, len(y))
			for _, s := range c.rows {
				written[s], written[s+1] = true, true
			}
			for i, v := range y {
				if written[i] != (v != 0) {
					t.Fatalf("%s: dst = %v, want rows written at %v and zeros elsewhere", ctx, y, c.rows)
				}
			}
		}
	}
}

// A message gives a stride the call left at 0 as 0, with what it stands for.
func TestDstStrideMessageKeepsZeroStride(t *testing.T) {
	n := Norm{Weight: []float32{1, 2, 3, 4}, Eps: 1e-6}
	x := make([]float32, 12)
	mustPanic(t, "in place, Stride 0", []string{"Dst is X with DstStride = 6 and Stride = 0 (meaning 4)"},
		func() { n.Apply(Rows{Dst: x, X: x, N: 2, DstStride: 6}) })
	mustPanic(t, "Dst short, both 0", []string{"len(Dst) = 7, want at least 8 for N = 2 rows of 4 with DstStride = 0 (meaning 4)"},
		func() { n.Apply(Rows{Dst: make([]float32, 7), X: make([]float32, 8), N: 2}) })
}
