//go:build amd64 && gc && !purego && !noasm

package rmsnorm

import (
	"slices"

	"github.com/klauspost/cpuid/v2"
)

// kernelFeatures is, for each amd64 kernel, exactly the union of the feature sets that the
// "// Requires:" lines of its functions in rmsnorm_amd64.s list (a test holds the two equal). cpuid reports a feature
// only when the operating system also saves its register state.
// Avo files SFENCE under "MMX+" (AMD's MMX extensions); it is part of SSE, which every amd64 CPU
// has, so SSE stands for it here (and for STMXCSR and LDMXCSR, which the avx512bf16 functions use).
// kernelAVX512BF16 runs the avx512 functions too, so it needs what they need, and AVX512_BF16
// (VCVTNE2PS2BF16) and AVX512DQ (VFPCLASSPS) besides.
var kernelFeatures = map[kernelID][]cpuid.FeatureID{
	kernelAVX512BF16: {cpuid.AVX, cpuid.AVX512F, cpuid.AVX512BW, cpuid.AVX512DQ, cpuid.AVX512BF16, cpuid.SSE},
	kernelAVX512:     {cpuid.AVX, cpuid.AVX512F, cpuid.AVX512BW, cpuid.SSE},
	kernelAVX2:       {cpuid.AVX, cpuid.AVX2, cpuid.F16C, cpuid.SSE},
}

// archKernels returns the SIMD kernels this CPU runs, best first, one per name: kernelAVX512BF16
// stands for avx512 where the CPU has what it needs (see kernelAVX512BF16).
func archKernels() []kernelID {
	var ks []kernelID
	for _, k := range []kernelID{kernelAVX512BF16, kernelAVX512, kernelAVX2} {
		if cpuid.CPU.Supports(kernelFeatures[k]...) && !slices.ContainsFunc(ks, func(h kernelID) bool { return h.name() == k.name() }) {
			ks = append(ks, k)
		}
	}
	return ks
}
