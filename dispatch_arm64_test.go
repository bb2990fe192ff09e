//go:build gc && !purego && !noasm

package rmsnorm

import (
	"runtime"
	"testing"

	"github.com/klauspost/cpuid/v2"
)

// Every ARMv8-A core has Advanced SIMD, and Linux and macOS report it: NEON must come first.
func TestNEONFirst(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Logf("%s/arm64: cpuid may not see the CPU features; Kernels() = %v", runtime.GOOS, Kernels())
		return
	}
	if !cpuid.CPU.Has(cpuid.ASIMD) {
		t.Fatalf("cpuid does not report ASIMD on %s/arm64; features: %v", runtime.GOOS, cpuid.CPU.FeatureSet())
	}
	if ks := Kernels(); ks[0] != "neon" {
		t.Fatalf("Kernels() = %v, want neon first", ks)
	}
}
