//go:build amd64 && gc && !purego && !noasm

package rmsnorm

import "testing"

// callDirect runs the benchmark loop on kernel k's function for the job's variant (Weighted or
// AddWeighted), called straight, as BenchmarkOverhead's baseline.
func callDirect(b *testing.B, k kernelID, j *job) {
	switch {
	case k == kernelAVX512 && (j.v == vWeighted || j.v == vAddWeighted):
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
