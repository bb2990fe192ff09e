package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/gosimd/rmsnorm"
	"github.com/gosimd/rmsnorm/internal/streamrule"
	"github.com/klauspost/cpuid/v2"
)

type machine struct {
	CPU       string   `json:"cpu"`
	Features  []string `json:"features"`
	GOOS      string   `json:"goos"`
	GOARCH    string   `json:"goarch"`
	GOAMD64   string   `json:"goamd64,omitempty"`
	GoVersion string   `json:"go_version"`
	Module    string   `json:"module_version"`
	Kernel    string   `json:"kernel"`
	Kernels   []string `json:"kernels"`
	Cores     int      `json:"cores"`
	L1D       int      `json:"l1d_bytes"`
	L2        int      `json:"l2_bytes"`
	L3        int      `json:"l3_bytes"`
	// StreamBytes is the size of rows, read and written, from which the assembly kernels stream
	// (internal/streamrule); zero when only the generic kernel runs.
	StreamBytes int    `json:"stream_bytes,omitempty"`
	streamWhy   string // why StreamBytes is that
	// WorkerBytes is how much memory of rows, read and written, a goroutine of a call that
	// Norm.Workers splits moves at least: for the forward forms and for Backward.
	WorkerBytes [2]int `json:"worker_bytes"`
}

// relevantFeatures are the cpuid features the kernels depend on (dispatch reads AVX, AVX2, F16C,
// AVX512F, AVX512BW, AVX512DQ, AVX512BF16 and ASIMD) or that explain their speed.
var relevantFeatures = []cpuid.FeatureID{
	cpuid.SSE2, cpuid.AVX, cpuid.AVX2, cpuid.FMA3, cpuid.F16C, cpuid.AVX512F, cpuid.AVX512VL, cpuid.AVX512BW,
	cpuid.AVX512DQ, cpuid.AVX512BF16, cpuid.FP128, cpuid.FP256, cpuid.AVXSLOW, cpuid.ASIMD, cpuid.SVE, cpuid.SVE2,
}

func describeMachine() machine {
	m := machine{
		CPU:       strings.TrimSpace(cpuid.CPU.BrandName),
		GOOS:      runtime.GOOS,
		GOARCH:    runtime.GOARCH,
		GoVersion: runtime.Version(),
		Kernel:    rmsnorm.Kernel(),
		Kernels:   rmsnorm.Kernels(),
		Cores:     runtime.NumCPU(),
		L1D:       cpuid.CPU.Cache.L1D,
		L2:        cpuid.CPU.Cache.L2,
		L3:        cpuid.CPU.Cache.L3,
		Module:    "(devel)",
	}
	if len(m.simdKernels()) > 0 {
		// The package's own threshold, from the same reading of cpuid (memory_asm.go).
		m.StreamBytes, m.streamWhy = streamrule.Bytes(streamrule.Host())
		m.WorkerBytes[0], m.WorkerBytes[1] = streamrule.Workers(streamrule.Host())
	} else {
		m.WorkerBytes[0], m.WorkerBytes[1] = streamrule.Workers(streamrule.CPU{}) // memory_noasm.go
	}
	if m.CPU == "" {
		m.CPU = "unknown (" + runtime.GOARCH + ")"
	}
	for _, f := range relevantFeatures {
		if cpuid.CPU.Has(f) {
			m.Features = append(m.Features, f.String())
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "GOAMD64" {
				m.GOAMD64 = s.Value
			}
		}
		for _, dep := range bi.Deps {
			if dep.Path == "github.com/gosimd/rmsnorm" {
				m.Module = dep.Version
			}
		}
		if bi.Main.Path == "github.com/gosimd/rmsnorm" { // go run or go install of the command itself, at a version
			m.Module = bi.Main.Version
		}
	}
	return m
}

// printMachine prints the lines that describe the machine and the package's choice of kernel.
func (b *bench) printMachine() {
	m := b.rep.Machine
	b.printf("cpu:      %s (%d logical CPUs; %s)\n", m.CPU, m.Cores, caches(m))
	if m.StreamBytes > 0 {
		b.printf("          (the assembly kernels stream calls whose rows, read and written, add up to %s or more: %s)\n",
			size(m.StreamBytes), m.streamWhy)
	}
	b.printf("features: %s\n", strings.Join(m.Features, " "))
	goamd64 := ""
	if m.GOAMD64 != "" {
		goamd64 = " GOAMD64=" + m.GOAMD64
	}
	b.printf("go:       %s %s/%s%s\n", m.GoVersion, m.GOOS, m.GOARCH, goamd64)
	b.printf("kernel:   %s (available: %s)\n", m.Kernel, strings.Join(m.Kernels, ", "))
}

// caches describes the cache sizes cpuid reports, saying so for the ones it does not.
func caches(m machine) string {
	var known, missing []string
	for _, c := range []struct {
		name  string
		bytes int
	}{{"L1d", m.L1D}, {"L2", m.L2}, {"L3", m.L3}} {
		if c.bytes <= 0 {
			missing = append(missing, c.name)
		} else {
			known = append(known, c.name+" "+size(c.bytes))
		}
	}
	if len(missing) > 0 {
		known = append(known, strings.Join(missing, ", ")+" not reported by cpuid")
	}
	return strings.Join(known, ", ")
}

// size gives bytes in MiB when they are a whole number of them, else in KiB.
func size(bytes int) string {
	if bytes%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", bytes>>20)
	}
	return fmt.Sprintf("%d KiB", bytes>>10)
}

// simdKernels returns the assembly kernels of m.Kernels, best first: the first is the one
// dispatch picks, when there is one.
func (m machine) simdKernels() []string {
	return slices.DeleteFunc(slices.Clone(m.Kernels), func(k string) bool { return k == "generic" })
}
