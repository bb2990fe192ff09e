//go:build goexperiment.simd && amd64

package peers

import (
	"simd/archsimd"
	"slices"
	"testing"
)

// Both archsimd kernels agree with rmsnorm wherever the CPU can run them, not only the one the
// peer picks (the 16-lane one on AVX-512 machines), and the peer is offered whenever one can run.
func TestArchsimdKernels(t *testing.T) {
	kernels := []struct {
		name string
		fn   Func
		runs bool
	}{
		{"archsimd16", archsimd16, archsimd.X86.AVX512()},
		{"archsimd8", archsimd8, archsimd.X86.AVX2() && archsimd.X86.FMA()},
	}
	runnable := false
	for _, k := range kernels {
		if k.runs {
			checkAgrees(t, k.name, k.fn)
			runnable = true
		}
	}
	if offered := slices.Contains(names(), "archsimd"); offered != runnable {
		t.Errorf("All() offers archsimd: %v; the CPU runs one of its kernels: %v", offered, runnable)
	}
}
