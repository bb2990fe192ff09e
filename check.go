package rmsnorm

import (
	"fmt"
	"math"
	"unsafe"
)

// Validation happens before any write, so a panic leaves every slice as it was. The messages name
// the function and the values at fault, in the caller's own terms (w or Weight, x or X).

// names are what a caller calls the arguments.
type names struct{ fn, dst, x, w, eps string }

var (
	forwardNames = names{"Forward", "dst", "x", "w", "eps"}
	applyNames   = names{"Norm.Apply", "Dst", "X", "Weight", "Eps"}
)

func (nm *names) fail(format string, args ...any) {
	panic("rmsnorm: " + nm.fn + ": " + fmt.Sprintf(format, args...))
}

// checkForward validates a Forward call and fills in rows and stride.
func (j *job) checkForward() {
	if len(j.w) == 0 && len(j.x) != 0 {
		forwardNames.fail("len(w) = 0 with len(x) = %d: the row length is len(w)", len(j.x))
	}
	j.checkContiguous(&forwardNames)
}

// checkApply validates a Norm.Apply call and fills in d, rows and stride.
func (j *job) checkApply(n *Norm, rows, stride int) {
	nm := &applyNames
	switch {
	case n.Weight != nil:
		if n.Dim != 0 && n.Dim != len(n.Weight) {
			nm.fail("Dim = %d but len(Weight) = %d (Dim may be 0 when Weight is set)", n.Dim, len(n.Weight))
		}
		j.d = len(n.Weight)
	case n.UnitOffset:
		nm.fail("UnitOffset is set but Weight is nil: 1 + Weight[i] needs a weight")
	case n.Dim < 0:
		nm.fail("Dim = %d is negative", n.Dim)
	default:
		j.d = n.Dim
	}
	if rows < 0 || stride < 0 {
		nm.fail("N = %d and Stride = %d must not be negative", rows, stride)
	}
	if j.d == 0 && (len(j.x) != 0 || rows != 0) {
		nm.fail("the row length is 0 (Weight is empty and Dim is 0) with len(X) = %d and N = %d", len(j.x), rows)
	}
	if rows == 0 {
		if stride != 0 && stride != j.d {
			nm.fail("Stride = %d needs N: with N = 0 the rows of length %d fill X back to back", stride, j.d)
		}
		j.checkContiguous(nm)
	} else {
		if stride == 0 {
			stride = j.d
		}
		if stride < j.d {
			nm.fail("Stride = %d is shorter than the row length %d", stride, j.d)
		}
		if rows-1 > (math.MaxInt-j.d)/stride {
			nm.fail("N = %d rows of Stride = %d do not fit in memory", rows, stride)
		}
		j.rows, j.stride = rows, stride
		need := j.span()
		if len(j.x) < need {
			nm.fail("len(X) = %d, want at least %d for N = %d rows of %d with Stride = %d", len(j.x), need, rows, j.d, stride)
		}
		if len(j.dst) < need {
			nm.fail("len(Dst) = %d, want at least %d for N = %d rows of %d with Stride = %d", len(j.dst), need, rows, j.d, stride)
		}
		if j.res != nil && len(j.res) < need {
			nm.fail("len(Residual) = %d, want at least %d for N = %d rows of %d with Stride = %d", len(j.res), need, rows, j.d, stride)
		}
		checkEps(nm, j.eps)
		j.checkOverlaps(nm)
	}
	if j.inv != nil && len(j.inv) < j.rows {
		nm.fail("len(Inv) = %d is shorter than the %d rows", len(j.inv), j.rows)
	}
	if j.inv != nil && j.rows > 0 {
		inv := j.inv[:j.rows]
		if overlap(inv, j.x[:j.span()]) || overlap(inv, j.dst[:j.span()]) || overlap(inv, j.w) ||
			(j.res != nil && overlap(inv, j.res[:j.span()])) {
			nm.fail("Inv overlaps X, Dst, Weight or Residual")
		}
	}
}

// checkContiguous validates rows that fill x back to back, d already known.
func (j *job) checkContiguous(nm *names) {
	if len(j.x) == 0 {
		if len(j.dst) != 0 {
			nm.fail("len(%s) = %d, want len(%s) = 0", nm.dst, len(j.dst), nm.x)
		}
		checkEps(nm, j.eps)
		return
	}
	j.rows = 1
	if len(j.x) != j.d {
		j.rows = quo(len(j.x), j.d)
	}
	if j.rows*j.d != len(j.x) {
		nm.fail("len(%s) = %d is not a multiple of the row length len(%s) = %d", nm.x, len(j.x), nm.w, j.d)
	}
	if len(j.dst) != len(j.x) {
		nm.fail("len(%s) = %d, want len(%s) = %d", nm.dst, len(j.dst), nm.x, len(j.x))
	}
	if j.res != nil && len(j.res) != len(j.x) {
		nm.fail("len(Residual) = %d, want len(X) = %d", len(j.res), len(j.x))
	}
	j.stride = j.d
	checkEps(nm, j.eps)
	j.checkOverlaps(nm)
}

// checkOverlaps enforces the aliasing rules on the memory the rows occupy.
func (j *job) checkOverlaps(nm *names) {
	n := j.span()
	x, dst := j.x[:n], j.dst[:n]
	if overlap(dst, x) && unsafe.SliceData(dst) != unsafe.SliceData(x) {
		nm.fail("%s overlaps %s without starting at the same element (in place needs %s and %s to be the same slice)",
			nm.dst, nm.x, nm.dst, nm.x)
	}
	if overlap(dst, j.w) {
		nm.fail("%s overlaps %s", nm.dst, nm.w)
	}
	if j.res != nil {
		res := j.res[:n]
		if overlap(res, x) || overlap(res, dst) || overlap(res, j.w) {
			nm.fail("Residual overlaps X, Dst or Weight")
		}
	}
}

// span is the number of elements from the first row's start to the last row's end.
func (j *job) span() int {
	if j.rows == 0 {
		return 0
	}
	return (j.rows-1)*j.stride + j.d
}

func checkEps(nm *names, eps float32) {
	if !(eps >= 0 && eps <= math.MaxFloat32) {
		nm.fail("%s = %v, want a finite value >= 0", nm.eps, eps)
	}
}

// quo returns a/b for a >= 0, b > 0. Dividing in 32 bits when both fit is several times faster
// than a 64-bit division on many x86 cores, and Forward on a short row is mostly overhead.
func quo(a, b int) int {
	if uint64(a)|uint64(b) <= math.MaxUint32 {
		return int(uint32(a) / uint32(b))
	}
	return a / b
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
