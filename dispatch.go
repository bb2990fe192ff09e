package rmsnorm

import (
	"fmt"
	"os"
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
)

var kernelNames = [...]string{
	kernelGeneric: "generic",
	kernelAVX2:    "avx2",
	kernelAVX512:  "avx512",
	kernelNEON:    "neon",
}

func (k kernelID) String() string { return kernelNames[k] }

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
	if name := os.Getenv("RMSNORM_KERNEL"); name != "" && SetKernel(name) != nil {
		fmt.Fprintf(os.Stderr, "rmsnorm: RMSNORM_KERNEL=%s is not available here (available: %s); using %s\n",
			name, strings.Join(Kernels(), ", "), Kernel())
	}
	initKernel = activeKernel()
}

// detect fills available from the CPU features (see archKernels) and makes the best kernel active.
func detect() {
	available = append(archKernels(), kernelGeneric)
	active.Store(uint32(available[0]))
}

func activeKernel() kernelID { return kernelID(active.Load()) }

// Kernel returns the name of the kernel in use: "avx512", "avx2", "neon" or "generic".
func Kernel() string { return activeKernel().String() }

// Kernels returns the names of the kernels this CPU can run, best first; "generic" is always last.
func Kernels() []string {
	names := make([]string, len(available))
	for i, k := range available {
		names[i] = k.String()
	}
	return names
}

// SetKernel makes the named kernel the one in use. It returns an error naming the available
// kernels if this CPU (or this build) cannot run it. It is safe to call while other goroutines run
// Forward: each call uses one kernel from start to end.
func SetKernel(name string) error {
	for _, k := range available {
		if k.String() == name {
			active.Store(uint32(k))
			return nil
		}
	}
	return fmt.Errorf("rmsnorm: kernel %q is not available here; available: %s", name, strings.Join(Kernels(), ", "))
}
