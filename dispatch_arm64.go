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
