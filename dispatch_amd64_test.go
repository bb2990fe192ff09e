//go:build amd64 && gc && !purego && !noasm

package rmsnorm

import (
	"slices"
	"testing"

	"github.com/klauspost/cpuid/v2"
)

// kernelAVX512BF16 stands for avx512 exactly where the CPU has what its functions need, and users
// see one avx512 kernel either way.
func TestDispatchAVX512BF16(t *testing.T) {
	has := cpuid.CPU.Supports(kernelFeatures[kernelAVX512BF16]...)
	if got := slices.Contains(available, kernelAVX512BF16); got != has {
		t.Fatalf("kernelAVX512BF16 available = %v, but the CPU has its features = %v", got, has)
	}
	if slices.Contains(available, kernelAVX512BF16) && slices.Contains(available, kernelAVX512) {
		t.Fatalf("available = %v lists avx512 twice", available)
	}
	ks := Kernels()
	for i, k := range ks {
		if slices.Contains(ks[i+1:], k) {
			t.Fatalf("Kernels() = %v lists %s twice", ks, k)
		}
	}
	if !has {
		t.Logf("--> this CPU lacks AVX512_BF16 (or AVX512DQ): avx512, where available, narrows bfloat16 with integer rounding")
		return
	}
	defer active.Store(active.Load())
	if err := SetKernel("avx512"); err != nil {
		t.Fatal(err)
	}
	if activeKernel() != kernelAVX512BF16 || Kernel() != "avx512" {
		t.Fatalf("SetKernel(\"avx512\"): active kernel %s, Kernel() = %q; want avx512+bf16, \"avx512\"", activeKernel(), Kernel())
	}
	t.Logf("--> this CPU has AVX512_BF16: avx512 narrows bfloat16 with VCVTNE2PS2BF16 (the tests run it as avx512+bf16, and avx512's integer rounding beside it)")
}
