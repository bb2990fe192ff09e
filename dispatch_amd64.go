//go:build amd64 && gc && !purego && !noasm

package rmsnorm

import "github.com/klauspost/cpuid/v2"

// kernelFeatures is, for each amd64 kernel, exactly the feature set that the "// Requires:" lines
// of its functions in rmsnorm_amd64.s list (a test holds the two equal). cpuid reports a feature
// only when the operating system also saves its register state.
// Avo files SFENCE under "MMX+" (AMD's MMX extensions); it is part of SSE, which every amd64 CPU
// has, so SSE stands for it here.
var kernelFeatures = map[kernelID][]cpuid.FeatureID{
	kernelAVX512: {cpuid.AVX, cpuid.AVX512F, cpuid.SSE},
	kernelAVX2:   {cpuid.AVX, cpuid.AVX2, cpuid.SSE},
}

// archKernels returns the SIMD kernels this CPU runs, best first.
func archKernels() []kernelID {
	var ks []kernelID
	for _, k := range []kernelID{kernelAVX512, kernelAVX2} {
		if cpuid.CPU.Supports(kernelFeatures[k]...) {
			ks = append(ks, k)
		}
	}
	return ks
}

// runAsm calls the assembly function for kernel k and the job's variant on rows [from, j.rows).
func (j *job) runAsm(k kernelID, from int) int {
	dst, x, w, res, inv, n := j.asmArgs(from)
	d, s, eps := j.d, j.stride, j.eps
	fd, rd, flags := asmParams(j)
	var done int
	switch k {
	case kernelAVX512:
		switch {
		case res == nil && j.mode == weighted:
			done = avx512Weighted(dst, x, w, res, inv, d, n, s, eps, fd, rd, flags)
		case res == nil && j.mode == offset:
			done = avx512Offset(dst, x, w, res, inv, d, n, s, eps, fd, rd, flags)
		case res == nil:
			done = avx512Unweighted(dst, x, w, res, inv, d, n, s, eps, fd, rd, flags)
		case j.mode == weighted:
			done = avx512AddWeighted(dst, x, w, res, inv, d, n, s, eps, fd, rd, flags)
		case j.mode == offset:
			done = avx512AddOffset(dst, x, w, res, inv, d, n, s, eps, fd, rd, flags)
		default:
			done = avx512AddUnweighted(dst, x, w, res, inv, d, n, s, eps, fd, rd, flags)
		}
	case kernelAVX2:
		switch {
		case res == nil && j.mode == weighted:
			done = avx2Weighted(dst, x, w, res, inv, d, n, s, eps, fd, rd, flags)
		case res == nil && j.mode == offset:
			done = avx2Offset(dst, x, w, res, inv, d, n, s, eps, fd, rd, flags)
		case res == nil:
			done = avx2Unweighted(dst, x, w, res, inv, d, n, s, eps, fd, rd, flags)
		case j.mode == weighted:
			done = avx2AddWeighted(dst, x, w, res, inv, d, n, s, eps, fd, rd, flags)
		case j.mode == offset:
			done = avx2AddOffset(dst, x, w, res, inv, d, n, s, eps, fd, rd, flags)
		default:
			done = avx2AddUnweighted(dst, x, w, res, inv, d, n, s, eps, fd, rd, flags)
		}
	default:
		return j.runGeneric(from)
	}
	return from + done
}
