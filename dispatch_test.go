package rmsnorm

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestKernelsList(t *testing.T) {
	ks := Kernels()
	// CI runs this binary on emulated CPUs of known tiers and says what dispatch must find there.
	if want := os.Getenv("RMSNORM_EXPECT_KERNELS"); want != "" && strings.Join(ks, ",") != want {
		t.Fatalf("Kernels() = %v on this CPU, CI expects %s", ks, want)
	}
	if len(ks) == 0 || ks[len(ks)-1] != "generic" {
		t.Fatalf("Kernels() = %v, want generic last", ks)
	}
	if !slices.Contains(ks, Kernel()) {
		t.Fatalf("Kernel() = %q is not in Kernels() = %v", Kernel(), ks)
	}
	for _, k := range ks {
		if !slices.Contains(kernelNames[:], k) {
			t.Fatalf("Kernels() lists unknown kernel %q", k)
		}
	}
}

// RMSNORM_KERNEL picks the kernel at init when it is available; .ci/run relies on this to run the
// suite once per kernel.
func TestEnvKernel(t *testing.T) {
	want := os.Getenv("RMSNORM_KERNEL")
	if want == "" || !slices.Contains(Kernels(), want) {
		if initKernel.String() != Kernels()[0] {
			t.Fatalf("init chose %q, want the best kernel %q", initKernel.String(), Kernels()[0])
		}
		return
	}
	if initKernel.String() != want {
		t.Fatalf("RMSNORM_KERNEL=%s but init chose %q", want, initKernel.String())
	}
}

func TestSetKernel(t *testing.T) {
	defer SetKernel(Kernel())
	for _, k := range Kernels() {
		if err := SetKernel(k); err != nil {
			t.Fatalf("SetKernel(%q): %v", k, err)
		}
		if Kernel() != k {
			t.Fatalf("after SetKernel(%q), Kernel() = %q", k, Kernel())
		}
		// Forward really runs it: the result equals generic (and the call does not crash).
		x := []float32{1, 2, 3, 4, 5}
		w := []float32{1, 2, 3, 4, 5}
		y := make([]float32, 5)
		Forward(y, x, w, 1e-6)
		want := make([]float32, 5)
		forwardWith(kernelGeneric, want, x, w, 1e-6)
		if firstDiff(y, want) >= 0 {
			t.Fatalf("kernel %s: %v, generic %v", k, y, want)
		}
	}
	err := SetKernel("sse9")
	if err == nil {
		t.Fatal("SetKernel(\"sse9\") succeeded")
	}
	for _, want := range append([]string{`"sse9"`}, Kernels()...) {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("SetKernel error %q does not mention %s", err, want)
		}
	}
}
