package rmsnorm

import (
	"math"
	"testing"
)

// The guard helpers compare bytes first and go element by element only where the bytes differ:
// these tests hold that the fast path hides nothing. Every element outside a guarded slice, one at
// a time, is changed and must be found by clobbered; every position compareGuarded covers, one at
// a time, is changed in one of two equal buffers and must be found by guardedDiff, while a NaN
// with another payload (the contract's "NaN payloads aside") must not count as a difference.
func TestGuardHelpersFindEveryChange(t *testing.T) {
	for _, n := range []int{1, 7, 64} {
		for _, off := range []int{0, 3, 15} {
			testGuardHelpers(t, formatF32, n, off, func(v float32) float32 { return other(v, 1, 2) }, float32(math.NaN()),
				math.Float32frombits(0x7fc00001))
			testGuardHelpers(t, formatBF16, n, off, func(v uint16) uint16 { return other(v, 0x3f80, 0x4000) }, 0x7fc0, 0xffc1)
			testGuardHelpers(t, formatF16, n, off, func(v uint16) uint16 { return other(v, 0x3c00, 0x4000) }, 0x7e00, 0xfe01)
		}
	}
}

// other returns a, a finite value (1 in the format), unless v is a, then b (2): a change of v
// that no comparison can take for the same value, as it could a NaN for another NaN.
func other[T elem](v, a, b T) T {
	if v == a {
		return b
	}
	return a
}

// testGuardHelpers runs the checks on buffers of n elements of format f at offset off; change
// returns another value than v (other), and nan1, nan2 are two NaNs of the format with different bits.
func testGuardHelpers[T elem](t *testing.T, f format, n, off int, change func(T) T, nan1, nan2 T) {
	t.Helper()
	ctx := fname(f)
	got, want := newGuarded[T]("got", n, off), newGuarded[T]("want", n, off+1)
	for i := range n {
		got.s[i], want.s[i] = T(i+1), T(i+1)
	}
	if i := got.clobbered(); i >= 0 {
		t.Fatalf("%s n=%d off=%d: clobbered = %d on an intact buffer", ctx, n, off, i)
	}
	if j := guardedDiff(f, got, want); j != noDiff {
		t.Fatalf("%s n=%d off=%d: guardedDiff = %d on equal buffers", ctx, n, off, j)
	}
	for i := range got.all {
		if i >= got.lo && i < got.lo+n {
			continue
		}
		v := got.all[i]
		got.all[i] = change(v)
		if c := got.clobbered(); c != i {
			t.Errorf("%s n=%d off=%d: element %d outside the slice changed, clobbered = %d", ctx, n, off, i, c)
		}
		got.all[i] = v
	}
	for j := -guardLen; j < n+guardLen; j++ {
		v := got.all[got.lo+j]
		got.all[got.lo+j] = change(v)
		if d := guardedDiff(f, got, want); d != j {
			t.Errorf("%s n=%d off=%d: position %d changed, guardedDiff = %d", ctx, n, off, j, d)
		}
		got.all[got.lo+j] = v
	}
	got.s[n-1], want.s[n-1] = nan1, nan2
	if d := guardedDiff(f, got, want); d != noDiff {
		t.Errorf("%s n=%d off=%d: two NaNs with different payloads count as a difference at %d", ctx, n, off, d)
	}
}
