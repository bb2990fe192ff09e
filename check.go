package rmsnorm

import (
	"fmt"
	"math"
	"unsafe"
)

// Validation happens before any write, so a panic leaves every slice as it was.

func fail(fn, format string, args ...any) {
	panic("rmsnorm: " + fn + ": " + fmt.Sprintf(format, args...))
}

// checkForward validates a Forward call and fills in rows and stride.
func (j *job) checkForward() {
	const fn = "Forward"
	if len(j.x) == 0 {
		if len(j.dst) != 0 {
			fail(fn, "len(dst) = %d, want len(x) = 0", len(j.dst))
		}
		checkEps(fn, j.eps)
		return
	}
	if len(j.w) == 0 {
		fail(fn, "len(w) = 0 with len(x) = %d: the row length is len(w)", len(j.x))
	}
	j.rows = quo(len(j.x), j.d)
	if j.rows*j.d != len(j.x) {
		fail(fn, "len(x) = %d is not a multiple of len(w) = %d", len(j.x), len(j.w))
	}
	if len(j.dst) != len(j.x) {
		fail(fn, "len(dst) = %d, want len(x) = %d", len(j.dst), len(j.x))
	}
	checkEps(fn, j.eps)
	if partialOverlap(j.dst, j.x) {
		fail(fn, "dst overlaps x without being x (in place needs dst and x to be the same slice)")
	}
	if overlap(j.dst, j.w) {
		fail(fn, "dst overlaps w")
	}
	j.stride = j.d
}

// quo returns a/b for a >= 0, b > 0. Dividing in 32 bits when both fit is several times faster
// than a 64-bit division on many x86 cores, and Forward on a short row is mostly overhead.
func quo(a, b int) int {
	if uint64(a)|uint64(b) <= math.MaxUint32 {
		return int(uint32(a) / uint32(b))
	}
	return a / b
}

func checkEps(fn string, eps float32) {
	if !(eps >= 0) || math.IsInf(float64(eps), 1) {
		fail(fn, "eps = %v, want a finite value >= 0", eps)
	}
}

// span returns the byte range [lo, hi) of s.
func span(s []float32) (lo, hi uintptr) {
	lo = uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	return lo, lo + uintptr(len(s))*4
}

// overlap reports whether a and b share memory.
func overlap(a, b []float32) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	alo, ahi := span(a)
	blo, bhi := span(b)
	return alo < bhi && blo < ahi
}

// partialOverlap reports whether a and b share memory without being the same slice.
func partialOverlap(a, b []float32) bool {
	return overlap(a, b) && (unsafe.SliceData(a) != unsafe.SliceData(b) || len(a) != len(b))
}
