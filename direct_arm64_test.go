//go:build gc && !purego && !noasm

package rmsnorm

import "testing"

// callDirect runs the benchmark loop on kernel k's function for the job's variant (Weighted or
// AddWeighted), called straight, as BenchmarkOverhead's baseline.
func callDirect(b *testing.B, k kernelID, j *job) {
	switch {
	case k == kernelNEON && (j.v == vWeighted || j.v == vAddWeighted):
		for b.Loop() {
			neonForward(j, 0, j.rows)
		}
	default:
		callGeneric(b, k, j)
	}
}

// hasRowFunc reports whether kernel k has a row function (callRow): no arm64 kernel has one.
func hasRowFunc(k kernelID) bool { return false }

// hasRowF16Buf reports whether kernel k has the binary16 row function through a float32 copy
// (callRowF16Buf): this build has none.
func hasRowF16Buf(k kernelID) bool { return false }

// hasRowBF16 reports whether kernel k has a bfloat16 row function (callRowBF16): this build has
// none.
func hasRowBF16(k kernelID) bool { return false }
