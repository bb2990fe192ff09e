//go:build amd64 && gc && !purego && !noasm

package rmsnorm

import "testing"

// callDirect runs the benchmark loop on kernel k's function for the job's variant (Weighted or
// AddWeighted), called straight, as BenchmarkOverhead's baseline. kernelAVX512BF16 runs the avx512
// functions for float32 rows.
func callDirect(b *testing.B, k kernelID, j *job) {
	switch {
	case (k == kernelAVX512 || k == kernelAVX512BF16) && (j.v == vWeighted || j.v == vAddWeighted):
		for b.Loop() {
			avx512Forward(j, 0, j.rows)
		}
	case k == kernelAVX2 && (j.v == vWeighted || j.v == vAddWeighted):
		for b.Loop() {
			avx2Forward(j, 0, j.rows)
		}
	default:
		callGeneric(b, k, j)
	}
}

// hasRowFunc reports whether kernel k has a row function (callRow): the avx512 and avx2 kernels.
func hasRowFunc(k kernelID) bool {
	return k == kernelAVX512 || k == kernelAVX512BF16 || k == kernelAVX2
}

// hasRowF16Buf reports whether kernel k has the binary16 row function through a float32 copy
// (callRowF16Buf): the AVX-512 kernels.
func hasRowF16Buf(k kernelID) bool { return k == kernelAVX512 || k == kernelAVX512BF16 }

// hasRowBF16 reports whether kernel k has a bfloat16 row function (callRowBF16): the AVX-512
// kernels (avx512+bf16's narrows with VCVTNE2PS2BF16, avx512's with the integer rounding).
func hasRowBF16(k kernelID) bool { return k == kernelAVX512 || k == kernelAVX512BF16 }
