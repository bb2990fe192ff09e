package rmsnorm

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
)

// kernelID names one implementation of the contract.
type kernelID uint32

const (
	kernelGeneric kernelID = iota
	kernelAVX2
	kernelAVX512
	kernelNEON
	// kernelAVX512BF16 is the avx512 kernel on a CPU with AVX512_BF16: the same functions, but
	// for those that narrow to bfloat16 (ForwardBF16, ApplyBF16, Float32ToBF16), which round with
	// the VCVTNE2PS2BF16 instruction and give the same bits. Users see one kernel, "avx512"
	// (Kernel, Kernels, SetKernel, RMSNORM_KERNEL), this one where the CPU has the instruction;
	// the tests run both.
	kernelAVX512BF16
)

// knownKernels lists every kernel of the package, best first, whatever this CPU and build run.
var knownKernels = [...]kernelID{kernelAVX512, kernelAVX2, kernelNEON, kernelGeneric}

// kernelNames are the kernels' names to users.
var kernelNames = [...]string{
	kernelGeneric:    "generic",
	kernelAVX2:       "avx2",
	kernelAVX512:     "avx512",
	kernelNEON:       "neon",
	kernelAVX512BF16: "avx512",
}

// name is the kernel's name to users.
func (k kernelID) name() string { return kernelNames[k] }

// String is the kernel's name in tests, which run kernelAVX512BF16 beside kernelAVX512 and name
// it "avx512+bf16".
func (k kernelID) String() string {
	if k == kernelAVX512BF16 {
		return "avx512+bf16"
	}
	return kernelNames[k]
}

var (
	// available lists the kernels this CPU runs, best first; generic is always last.
	available []kernelID
	// active is the kernel Forward uses. It is atomic so that SetKernel may run while other
	// goroutines call Forward.
	active atomic.Uint32
	// initKernel is the kernel init chose.
	initKernel kernelID
)

func init() {
	detect()
	if msg := setEnvKernel(os.Getenv("RMSNORM_KERNEL")); msg != "" {
		fmt.Fprintln(os.Stderr, msg)
	}
	initKernel = activeKernel()
}

// setEnvKernel makes the kernel named by RMSNORM_KERNEL (name, empty if unset) the one in use. If
// it cannot, it returns the line init prints: SetKernel's reason, which tells an unknown name from
// a kernel this CPU lacks, and the kernel in use instead.
func setEnvKernel(name string) string {
	if name == "" {
		return ""
	}
	if err := SetKernel(name); err != nil {
		return fmt.Sprintf("rmsnorm: RMSNORM_KERNEL: %s; using %s", strings.TrimPrefix(err.Error(), "rmsnorm: "), Kernel())
	}
	return ""
}

// detect fills available from the CPU features (see archKernels) and makes the best kernel active.
func detect() {
	available = append(archKernels(), kernelGeneric)
	active.Store(uint32(available[0]))
}

func activeKernel() kernelID { return kernelID(active.Load()) }

// Kernel returns the name of the kernel in use: "avx512", "avx2", "neon" or "generic".
func Kernel() string { return activeKernel().name() }

// Kernels returns the names of the kernels this CPU can run, best first; "generic" is always last.
func Kernels() []string {
	names := make([]string, len(available))
	for i, k := range available {
		names[i] = k.name()
	}
	return names
}

// SetKernel makes the named kernel the one in use. It returns an error naming the known kernels
// if the name is none of them, or the available ones if this CPU (or this build) cannot run it.
// It is safe to call while other goroutines run Forward: each call uses one kernel from start to
// end.
func SetKernel(name string) error {
	for _, k := range available {
		if k.name() == name {
			active.Store(uint32(k))
			return nil
		}
	}
	known := make([]string, len(knownKernels))
	for i, k := range knownKernels {
		known[i] = k.name()
	}
	if !slices.Contains(known, name) {
		return fmt.Errorf("rmsnorm: unknown kernel %q; known: %s", name, strings.Join(known, ", "))
	}
	return fmt.Errorf("rmsnorm: kernel %q is not available here; available: %s", name, strings.Join(Kernels(), ", "))
}
