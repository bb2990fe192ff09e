package rmsnorm

import (
	"fmt"
	"testing"
)

// Allocations: the calls a model makes for every token allocate nothing, on every kernel, through
// the public entry points, written as a caller writes them (a Rows literal at the call). An
// allocation there would come from the compiler moving a job, a Rows or a Norm to the heap, which
// happens on every call, so testing.AllocsPerRun (the average over the calls, rounded down) counts
// it. They run in this package to reach workerBytes; a caller in another package gets the same
// compiled functions. The race detector's sync.Pool drops items at random, so the calls that take
// a buffer from a pool are checked without it only (raceEnabled).

// allocCall is one call whose allocations are counted.
type allocCall struct {
	name   string
	pooled bool // takes a buffer from a pool (Backward's partial sums, a split call's state)
	f      func()
}

// checkNoAllocs runs each call once, for the pools and the runtime to fill, then fails for every
// call that allocates.
func checkNoAllocs(t *testing.T, ctx string, calls []allocCall) {
	t.Helper()
	for _, c := range calls {
		if c.pooled && raceEnabled {
			continue
		}
		c.f()
		if a := testing.AllocsPerRun(50, c.f); a != 0 {
			t.Errorf("%s %s: %v allocations per call, want 0", ctx, c.name, a)
		}
	}
}

// allocCalls returns the calls of TestAllocShortPaths on rows of d with Norm n's Workers: every
// entry point and form of the package on rows rows of d.
func allocCalls(d, rows, workers int) []allocCall {
	x := normalRows(d, rows, 1)
	dy := normalRows(d, rows, 2)
	w := normalRows(d, 1, 3)
	y, res, dx, dw := make([]float32, len(x)), make([]float32, len(x)), make([]float32, len(x)), make([]float32, d)
	inv := make([]float32, rows)
	x16, y16, res16 := narrowAll(x, formatBF16), make([]uint16, len(x)), make([]uint16, len(x))
	// The same rows a stride apart: N = rows with Stride = d+3.
	stride := d + 3
	xs, ys, rs := normalRows(stride, rows, 4), make([]float32, rows*stride), make([]float32, rows*stride)
	ys16 := make([]uint16, rows*stride)
	plain := Norm{Weight: w, Eps: 1e-6, Workers: workers}
	uo := Norm{Weight: w, Eps: 1e-6, UnitOffset: true, Workers: workers}
	rn := Norm{Weight: w, Eps: 1e-6, RoundNormalized: true, Workers: workers}
	unw := Norm{Dim: d, Eps: 1e-6, Workers: workers}
	calls := []allocCall{
		{"Norm.Forward", false, func() { plain.Forward(y, x) }},
		{"Norm.Forward UnitOffset", false, func() { uo.Forward(y, x) }},
		{"Norm.Forward no weight", false, func() { unw.Forward(y, x) }},
		{"Norm.Forward in place", false, func() { plain.Forward(y, y) }},
		{"Apply", false, func() { plain.Apply(Rows{Dst: y, X: x}) }},
		{"Apply Residual", false, func() { plain.Apply(Rows{Dst: y, X: x, Residual: res}) }},
		{"Apply UnitOffset", false, func() { uo.Apply(Rows{Dst: y, X: x}) }},
		{"Apply UnitOffset Residual", false, func() { uo.Apply(Rows{Dst: y, X: x, Residual: res}) }},
		{"Apply no weight", false, func() { unw.Apply(Rows{Dst: y, X: x}) }},
		{"Apply Inv", false, func() { plain.Apply(Rows{Dst: y, X: x, Inv: inv}) }},
		{"Apply strided", false, func() { plain.Apply(Rows{Dst: ys, X: xs, N: rows, Stride: stride}) }},
		{"Apply strided Residual Inv", false, func() {
			uo.Apply(Rows{Dst: ys, X: xs, N: rows, Stride: stride, Residual: rs, Inv: inv})
		}},
		{"ApplyBF16", false, func() { plain.ApplyBF16(Rows16{Dst: y16, X: x16}) }},
		{"ApplyBF16 Residual RoundNormalized", false, func() { rn.ApplyBF16(Rows16{Dst: y16, X: x16, Residual: res16}) }},
		{"ApplyF16", false, func() { plain.ApplyF16(Rows16{Dst: y16, X: x16}) }},
		{"ApplyF16 UnitOffset Inv", false, func() { uo.ApplyF16(Rows16{Dst: y16, X: x16, Inv: inv}) }},
		{"ApplyF16 strided", false, func() { plain.ApplyF16(Rows16{Dst: y16, X: x16, N: rows}) }},
		{"Apply DstStride", false, func() { plain.Apply(Rows{Dst: ys, X: xs, N: rows, Stride: stride, DstStride: d}) }},
		{"ApplyF16 DstStride", false, func() { plain.ApplyF16(Rows16{Dst: ys16, X: x16, N: rows, DstStride: stride}) }},
		{"ApplyToBF16", false, func() { plain.ApplyToBF16(RowsTo16{Dst: y16, X: x}) }},
		{"ApplyToBF16 Residual RoundNormalized", false, func() { rn.ApplyToBF16(RowsTo16{Dst: y16, X: x, Residual: res}) }},
		{"ApplyToBF16 strided into DstStride", false, func() {
			uo.ApplyToBF16(RowsTo16{Dst: y16, X: xs, N: rows, Stride: stride, DstStride: d, Residual: rs, Inv: inv})
		}},
		{"ApplyToF16", false, func() { plain.ApplyToF16(RowsTo16{Dst: y16, X: x}) }},
		{"ApplyToF16 UnitOffset Inv", false, func() { uo.ApplyToF16(RowsTo16{Dst: y16, X: x, Inv: inv}) }},
		{"ApplyToF16 no weight", false, func() { unw.ApplyToF16(RowsTo16{Dst: y16, X: x}) }},
		{"Norm.ForwardBF16", false, func() { plain.ForwardBF16(y16, x16) }},
		{"Norm.ForwardBF16 RoundNormalized in place", false, func() { rn.ForwardBF16(y16, y16) }},
		{"Norm.ForwardF16", false, func() { plain.ForwardF16(y16, x16) }},
		{"Norm.ForwardF16 UnitOffset", false, func() { uo.ForwardF16(y16, x16) }},
		{"Norm.ForwardF16 no weight", false, func() { unw.ForwardF16(y16, x16) }},
		// Backward takes a buffer of partial sums from a pool when it sums DW over several rows.
		{"Backward", rows > 1, func() { plain.Backward(Grad{DX: dx, X: x, DY: dy, Inv: inv, DW: dw}) }},
		{"Backward without DW", false, func() { plain.Backward(Grad{DX: dx, X: x, DY: dy}) }},
		{"Backward UnitOffset in place", rows > 1, func() { uo.Backward(Grad{DX: dx, X: x, DY: dx, DW: dw}) }},
		{"Backward no weight strided", false, func() { unw.Backward(Grad{DX: ys, X: xs, DY: xs, N: rows, Stride: stride}) }},
	}
	if workers == 0 { // the package-level functions have no Norm
		calls = append(calls,
			allocCall{"Forward", false, func() { Forward(y, x, w, 1e-6) }},
			allocCall{"ForwardBF16", false, func() { ForwardBF16(y16, x16, w, 1e-6) }},
			allocCall{"ForwardF16", false, func() { ForwardF16(y16, x16, w, 1e-6) }},
			allocCall{"BF16ToFloat32", false, func() { BF16ToFloat32(y, x16) }},
			allocCall{"Float32ToBF16", false, func() { Float32ToBF16(y16, x) }},
			allocCall{"F16ToFloat32", false, func() { F16ToFloat32(y, x16) }},
			allocCall{"Float32ToF16", false, func() { Float32ToF16(y16, x) }},
		)
	}
	return calls
}

// Every entry point on one goroutine, on one row (the common call, without a division) and on
// several, on every kernel.
func TestAllocShortPaths(t *testing.T) {
	defer active.Store(active.Load())
	for _, k := range testKernels() {
		active.Store(uint32(k)) // SetKernel("avx512") would pick kernelAVX512BF16 where it stands for avx512
		for _, rows := range []int{1, 5} {
			for _, workers := range []int{0, 1} {
				checkNoAllocs(t, fmt.Sprintf("%s rows=%d Workers=%d", k, rows, workers), allocCalls(100, rows, workers))
			}
		}
	}
}

// With Workers above 1, a call below the threshold stays on its goroutine and allocates
// nothing; a call over it splits, and allocates nothing either once the pools hold what it needs
// (checkNoAllocs' first call). TestWorkersBelowThreshold checks which calls split.
func TestAllocWorkersPath(t *testing.T) {
	const d, rows = 100, 70 // three blocks of Backward's weight gradient
	checkNoAllocs(t, "Workers=8 below the threshold", allocCalls(d, rows, 8))
	splitAll(t)
	for _, workers := range []int{2, 3, 8} {
		calls := allocCalls(d, rows, workers)
		for i, c := range calls {
			calls[i].pooled = true // a split call's state comes from a pool
			if g := goroutinesStarted(t, c.f); g == 0 {
				t.Fatalf("Workers=%d %s: the call started no goroutine: it did not split", workers, c.name)
			}
		}
		checkNoAllocs(t, fmt.Sprintf("Workers=%d split", workers), calls)
	}
}

// raceEnabled reports a build with the race detector (race_test.go).
var raceEnabled bool
