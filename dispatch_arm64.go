//go:build gc && !purego && !noasm

package rmsnorm

import "github.com/klauspost/cpuid/v2"

// kernelFeatures is the feature set the NEON kernel needs: Advanced SIMD (and the FP unit it
// implies, which every arm64 CPU with it has).
var kernelFeatures = map[kernelID][]cpuid.FeatureID{
	kernelNEON: {cpuid.ASIMD},
}

// archKernels returns the SIMD kernels this CPU runs, best first.
func archKernels() []kernelID {
	if cpuid.CPU.Supports(kernelFeatures[kernelNEON]...) {
		return []kernelID{kernelNEON}
	}
	return nil
}

// runAsm calls the NEON function for the job's variant on rows [from, j.rows).
func (j *job) runAsm(k kernelID, from int) int {
	if k != kernelNEON {
		return j.runGeneric(from)
	}
	dst, x, w, res, inv, n := j.asmArgs(from)
	d, s, eps := j.d, j.stride, j.eps
	fd, rd, flags := asmParams(j)
	var done int
	switch {
	case res == nil && j.mode == weighted:
		done = neonWeighted(dst, x, w, res, inv, d, n, s, eps, fd, rd, flags)
	case res == nil && j.mode == offset:
		done = neonOffset(dst, x, w, res, inv, d, n, s, eps, fd, rd, flags)
	case res == nil:
		done = neonUnweighted(dst, x, w, res, inv, d, n, s, eps, fd, rd, flags)
	case j.mode == weighted:
		done = neonAddWeighted(dst, x, w, res, inv, d, n, s, eps, fd, rd, flags)
	case j.mode == offset:
		done = neonAddOffset(dst, x, w, res, inv, d, n, s, eps, fd, rd, flags)
	default:
		done = neonAddUnweighted(dst, x, w, res, inv, d, n, s, eps, fd, rd, flags)
	}
	return from + done
}
