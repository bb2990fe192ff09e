package rmsnorm

import (
	"fmt"
	"testing"
	"unsafe"
)

// TestCallRow16RN calls each kernel's row functions of RoundNormalized (callRowF16RN,
// callRowBF16RN: one 16-bit row in cache of a Norm with RoundNormalized and a plain weight, which
// Norm.ForwardF16, Norm.ForwardBF16, ApplyF16 and ApplyBF16 take) straight, on rows inside buffers
// of a NaN pattern, as TestCallRowF16 and TestCallRowBF16 do the others: a row of a multiple of 64
// whose t is in range comes out with generic's bits, out of place and in place, and nothing else
// is written; a row it leaves returns rowNone with nothing written at all. ApplyF16 and ApplyBF16
// on the same row, which go through them, match generic too.
func TestCallRow16RN(t *testing.T) {
	for _, f := range []format{formatF16, formatBF16} {
		classes, call, has := f16RowClasses, callRowF16RN, hasRowFunc
		if f == formatBF16 {
			classes, call, has = valueClasses, callRowBF16RN, hasRowBF16
		}
		for _, k := range testKernels() {
			for _, d := range oneRowDims {
				for ci, c := range classes {
					for seed := range 3 {
						r := seedFor(d, ci, seed, int(f), 89)
						x, w, eps := row16Input(f, d, c, r, seed)
						n := Norm{Weight: w, Eps: eps, RoundNormalized: true}
						name := fmt.Sprintf("%s/%s/d=%d/%s/seed=%d", k.name(), fname(f), d, c.name, seed)

						want := make([]uint16, d)
						applyKernel(kernelGeneric, &n, f, &rowsOf[uint16, uint16]{Dst: want, X: x})
						got := make([]uint16, d)
						applyKernel(k, &n, f, &rowsOf[uint16, uint16]{Dst: got, X: x})
						check16(t, name+": Apply", f, got, want)

						_, inRange := invRMS(sumSquares(widenAll(x, f)), d, eps) // false: the float64 path's row
						wantRet := rowNone
						if has(k) && d%64 == 0 && inRange {
							wantRet = rowDone
						}
						checkRowCall(t, name+": the row function", f, call, k, x, w, eps, want, wantRet)
					}
				}
			}
		}
	}
}

// rowCallBF16 returns callRowBF16RN with rn (RoundNormalized), else callRowBF16: the tests of the
// bfloat16 row functions run both.
func rowCallBF16(rn bool) func(dst, x, res, w unsafe.Pointer, d int, eps float32, k kernelID) int {
	if rn {
		return callRowBF16RN
	}
	return callRowBF16
}
