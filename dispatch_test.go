package rmsnorm

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Kernel selection: the list dispatch finds, RMSNORM_KERNEL at init, SetKernel, and calls that
// run while the kernel switches. The arm64 dispatch is checked in dispatch_arm64_test.go, the
// amd64 feature sets against the assembly in asm_amd64_test.go.

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
// suite once per kernel. Otherwise init keeps the best kernel and prints one line saying why: an
// unknown name, or a kernel this CPU lacks.
func TestEnvKernel(t *testing.T) {
	want := os.Getenv("RMSNORM_KERNEL")
	if want == "" || !slices.Contains(Kernels(), want) {
		if initKernel.name() != Kernels()[0] {
			t.Fatalf("init chose %q, want the best kernel %q", initKernel.name(), Kernels()[0])
		}
	} else if initKernel.name() != want {
		t.Fatalf("RMSNORM_KERNEL=%s but init chose %q", want, initKernel.name())
	}

	// The line init prints, from the function it calls.
	defer SetKernel(Kernel())
	cur, avail := Kernel(), strings.Join(Kernels(), ", ")
	for _, c := range []struct{ env, line string }{
		{"AVX2", `rmsnorm: RMSNORM_KERNEL: unknown kernel "AVX2"; known: avx512, avx2, neon, generic; using ` + cur},
		{missingKernel(t), fmt.Sprintf("rmsnorm: RMSNORM_KERNEL: kernel %q is not available here; available: %s; using %s",
			missingKernel(t), avail, cur)},
		{"", ""},
	} {
		if line := setEnvKernel(c.env); line != c.line {
			t.Fatalf("RMSNORM_KERNEL=%s: init prints %q, want %q", c.env, line, c.line)
		}
		if Kernel() != cur {
			t.Fatalf("RMSNORM_KERNEL=%s switched the kernel from %q to %q", c.env, cur, Kernel())
		}
	}
	for _, k := range Kernels() { // an available kernel: no line, and the kernel switches
		if line := setEnvKernel(k); line != "" || Kernel() != k {
			t.Fatalf("RMSNORM_KERNEL=%s: init prints %q and uses %q, want no line and %q", k, line, Kernel(), k)
		}
	}
}

// missingKernel returns a kernel of the package this CPU or build cannot run: there is always one,
// as no CPU runs both the amd64 and the arm64 kernels.
func missingKernel(t *testing.T) string {
	for _, k := range knownKernels {
		if !slices.Contains(Kernels(), k.name()) {
			return k.name()
		}
	}
	t.Fatalf("Kernels() = %v lists every kernel of the package", Kernels())
	return ""
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
	// A name the package does not know, and one it knows but cannot run here, are told apart; neither
	// changes the kernel in use.
	avail := strings.Join(Kernels(), ", ")
	for _, c := range []struct{ name, want string }{
		{"sse9", `rmsnorm: unknown kernel "sse9"; known: avx512, avx2, neon, generic`},
		{"AVX2", `rmsnorm: unknown kernel "AVX2"; known: avx512, avx2, neon, generic`},
		{"", `rmsnorm: unknown kernel ""; known: avx512, avx2, neon, generic`},
		{missingKernel(t), fmt.Sprintf("rmsnorm: kernel %q is not available here; available: %s", missingKernel(t), avail)},
	} {
		before := Kernel()
		err := SetKernel(c.name)
		if err == nil {
			t.Fatalf("SetKernel(%q) succeeded", c.name)
		}
		if err.Error() != c.want {
			t.Fatalf("SetKernel(%q): %q, want %q", c.name, err, c.want)
		}
		if Kernel() != before {
			t.Fatalf("the failed SetKernel(%q) switched the kernel from %q to %q", c.name, before, Kernel())
		}
	}
	// The known list is the package's: every kernel name, each once.
	known := make([]string, 0, len(knownKernels))
	for _, k := range knownKernels {
		known = append(known, k.name())
	}
	// kernelAVX512BF16 shares its name with kernelAVX512: each name once.
	names := slices.Compact(slices.Sorted(slices.Values(kernelNames[:])))
	if slices.Sort(known); !slices.Equal(known, names) {
		t.Fatalf("knownKernels %v, kernelNames %v", known, kernelNames)
	}
}

// Many goroutines normalize their own rows with one shared weight (and one shared Norm) while
// another keeps switching kernels. Run under -race: no race may be reported, and every output
// must equal the generic result, whichever kernel each call picked up.
func TestConcurrentForwardAndSetKernel(t *testing.T) {
	const workers, iters = 8, 200
	defer SetKernel(Kernel())
	d := 300
	w := normalRows(d, 1, 30)
	norm := Norm{Weight: w, Eps: 1e-6}
	var stop atomic.Bool
	var switches atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ks := Kernels()
		for i := 0; !stop.Load(); i++ {
			if err := SetKernel(ks[i%len(ks)]); err != nil {
				t.Error(err)
				return
			}
			switches.Add(1)
		}
	}()
	errs := make(chan string, workers)
	var work sync.WaitGroup
	for g := 0; g < workers; g++ {
		work.Add(1)
		go func(g int) {
			defer work.Done()
			rows := 1 + g%5
			x := normalRows(d, rows, 31+g)
			want := make([]float32, len(x))
			forwardWith(kernelGeneric, want, x, w, 1e-6)
			y := make([]float32, len(x))
			res := make([]float32, len(x))
			for i := 0; i < iters; i++ {
				if g%2 == 0 {
					Forward(y, x, w, 1e-6)
				} else {
					norm.Apply(Rows{Dst: y, X: x, Residual: res}) // res is zero: h = x
					clear(res)
				}
				if j := firstDiff(y, want); j >= 0 {
					errs <- "concurrent call differs from generic"
					return
				}
			}
		}(g)
	}
	work.Wait()
	stop.Store(true)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	t.Logf("%d goroutines x %d calls while the kernel switched %d times", workers, iters, switches.Load())
}
