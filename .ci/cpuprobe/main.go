// Command cpuprobe tells .ci/run what the CPU it runs on (real or emulated) can do, read with
// golang.org/x/sys/cpu rather than the cpuid module the package dispatches with, so that CI
// compares two independent readings.
//
//	cpuprobe          prints the kernels the package must offer here, best first, comma-separated
//	cpuprobe -flags   prints the features behind that answer
//
// Its requirements mirror dispatch_amd64.go and dispatch_arm64.go by hand, on purpose: a kernel
// whose predicate drifts from this list fails TestKernelsList under RMSNORM_EXPECT_KERNELS.
// That it runs at all is the probe for executing binaries of its GOARCH on this machine.
package main

import (
	"flag"
	"fmt"
	"runtime"
	"strings"

	"golang.org/x/sys/cpu"
)

func main() {
	flags := flag.Bool("flags", false, "print the CPU features behind the answer")
	flag.Parse()
	var kernels, features []string
	switch runtime.GOARCH {
	case "amd64":
		// avx512dq and avx512bf16 decide how the avx512 kernel rounds to bfloat16, not whether
		// it runs (.ci/run says which).
		have := map[string]bool{
			"avx": cpu.X86.HasAVX, "avx2": cpu.X86.HasAVX2, "f16c": cpu.X86.HasF16C,
			"avx512f": cpu.X86.HasAVX512F, "avx512bw": cpu.X86.HasAVX512BW,
			"avx512dq": cpu.X86.HasAVX512DQ, "avx512bf16": cpu.X86.HasAVX512BF16,
		}
		for _, f := range []string{"avx", "avx2", "f16c", "avx512f", "avx512bw", "avx512dq", "avx512bf16"} {
			if have[f] {
				features = append(features, f)
			}
		}
		if cpu.X86.HasAVX && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW {
			kernels = append(kernels, "avx512")
		}
		if cpu.X86.HasAVX && cpu.X86.HasAVX2 && cpu.X86.HasF16C {
			kernels = append(kernels, "avx2")
		}
	case "arm64":
		if cpu.ARM64.HasASIMD {
			features = append(features, "asimd")
			kernels = append(kernels, "neon")
		}
	}
	kernels = append(kernels, "generic")
	if *flags {
		fmt.Printf("%s/%s: %s\n", runtime.GOOS, runtime.GOARCH, strings.Join(features, " "))
		return
	}
	fmt.Println(strings.Join(kernels, ","))
}
