// Package spec is what the kernel generators and the Go side of the package share: the variants
// every kernel comes in, their names and formulas, the arguments, the flag bits and the group size.
// The generators write the Go side from it too (gospec.go and the dispatch in the stub files), so
// adding a variant means adding it here and regenerating.
package spec

import (
	"fmt"
	"strings"
)

// Mode is how a kernel applies the weight after x*inv.
type Mode int

const (
	Weighted   Mode = iota // y = (x*inv)*w
	Offset                 // y = (x*inv)*(1+w), 1+w rounded to float32 first (Gemma)
	Unweighted             // y = x*inv
)

// Modes lists the modes in the order of the Go side's weightMode constants.
var Modes = []Mode{Weighted, Offset, Unweighted}

func (m Mode) String() string { return [...]string{"Weighted", "Offset", "Unweighted"}[m] }

// Variant is one specialized kernel body.
type Variant struct {
	Mode     Mode
	Residual bool // h = x + res; res = h; normalize h
}

// Forward lists every forward variant, in the order the generated files hold them; the Go side
// numbers them the same way (gospec.go).
var Forward = []Variant{
	{Weighted, false},
	{Offset, false},
	{Unweighted, false},
	{Weighted, true},
	{Offset, true},
	{Unweighted, true},
}

// Name is the variant's part of a function name, e.g. "AddOffset".
func (v Variant) Name() string {
	s := ""
	if v.Residual {
		s = "Add"
	}
	return s + v.Mode.String()
}

// Formula is the doc-comment line for the variant.
func (v Variant) Formula() string {
	src, s := "x", ""
	if v.Residual {
		s, src = "h = x + res and res = h per element, then ", "h"
	}
	switch v.Mode {
	case Weighted:
		s += "y = (" + src + "*inv)*w"
	case Offset:
		s += "y = (" + src + "*inv)*(1+w)"
	default:
		s += "y = " + src + "*inv"
	}
	return s + ", for each row."
}

// Doc is the documentation of a kernel function.
func (v Variant) Doc(name string) []string {
	return []string{
		name + " normalizes rows [from, to) of the job: " + v.Formula(),
		"It stops before the first row that needs the float64 path and returns that row's index, or to.",
	}
}

// Signature is the Go signature of every kernel function: one pointer to the validated job, whose
// fields the assembly reads by the names go_asm.h gives them (Job below), and the rows to do.
const (
	Signature   = "(j *job, from, to int) int"
	AvoSig      = "func(j uintptr, from, to int) int" // the same frame, in types Avo knows
	ArgFrameLen = 32                                  // j, from, to and the result
)

// Job names the fields of the Go type job that the kernels read, as go_asm.h defines them
// (job_<field>): the assembly refers to them by name, so a renamed or moved field breaks the
// build instead of the results.
var Job = struct {
	Dst, X, Res, W, Inv, D, Stride, Eps, Flags, Fn string
}{"job_dst", "job_x", "job_res", "job_w", "job_inv", "job_d", "job_stride", "job_eps", "job_flags", "job_fn"}

// KernelIDs are the Go side's kernelID constants, in their order (dispatch.go): job.fn is
// kernelID*len(Forward) + the variant, an index into a table of functions that holds
// runGeneric for the kernels an architecture lacks.
var KernelIDs = []string{"kernelGeneric", "kernelAVX2", "kernelAVX512", "kernelNEON"}

// Flag bits of job.flags.
const (
	FlagNT = 1 // write dst with non-temporal stores (the batch is larger than the cache)
	FlagPF = 2 // prefetch the rows ahead while summing and scaling (they come from memory, or lie far apart)
)

// Bounds of t = ss/d + eps outside which a row takes the float64 path.
const (
	TLowBits = 0x0d800000 // 2^-100
	TMaxBits = 0x7f7fffff // MaxFloat32
)

// GroupMax is the longest row, in floats, that the kernels normalize four at a time: four rows
// must stay in L1 between the sum and the scale pass, and longer rows hide the latency of the
// scalar steps on their own.
const GroupMax = 512

// GoSpec returns the Go source of gospec.go: the constants and the variant numbering the Go side
// shares with the kernels. header is the "Code generated" line.
func GoSpec(header string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\npackage rmsnorm\n\n", header)
	b.WriteString("// What the assembly kernels and the Go side share, from asm/internal/spec.\n\n")
	b.WriteString("// Flag bits of job.flags.\nconst (\n")
	fmt.Fprintf(&b, "\tflagNT = %d // write dst with non-temporal stores (the batch is larger than the cache)\n", FlagNT)
	fmt.Fprintf(&b, "\tflagPF = %d // prefetch the rows ahead (they come from memory, or lie far apart)\n", FlagPF)
	b.WriteString(")\n\n")
	fmt.Fprintf(&b, "// groupMax is the longest row the kernels normalize four at a time.\nconst groupMax = %d\n\n", GroupMax)
	b.WriteString("// variant numbers a kernel body: the index of its weight form and residual in spec.Forward.\n")
	b.WriteString("type variant uint8\n\nconst (\n")
	for i, v := range Forward {
		fmt.Fprintf(&b, "\tv%s variant = %d\n", v.Name(), i)
	}
	b.WriteString(")\n\n")
	fmt.Fprintf(&b, "const numVariants = %d\n\n", len(Forward))
	b.WriteString("// forwardVariant maps a weight form and the presence of a residual to the variant.\n")
	b.WriteString("var forwardVariant = [3][2]variant{\n")
	for _, m := range Modes {
		var vs []string
		for _, res := range []bool{false, true} {
			vs = append(vs, "v"+Variant{m, res}.Name())
		}
		fmt.Fprintf(&b, "\t%s: {%s},\n", strings.ToLower(m.String()), strings.Join(vs, ", "))
	}
	b.WriteString("}\n")
	return b.String()
}

// Kernel is one ISA's set of kernel functions as the Go side knows it.
type Kernel struct {
	ID     string // the kernelID constant, e.g. "kernelAVX512"
	Prefix string // the function-name prefix, e.g. "avx512"
}

// GoStubs returns the declarations of the kernel functions of ks and of callKernel, the one entry
// point the Go side calls: an assembly stub that jumps to the function job.fn selects (see
// Table), so that a call costs no switch and the job stays on the caller's stack (//go:noescape).
func GoStubs(header, constraint string, ks []Kernel) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n//go:build %s\n\npackage rmsnorm\n", header, constraint)
	b.WriteString("\n// callKernel runs rows [from, to) of j with the kernel function j.fn selects: kernel\n")
	b.WriteString("// fn/numVariants (a kernelID) for variant fn%numVariants. It returns the index of the first row\n")
	b.WriteString("// that needs the float64 path, or to.\n//\n//go:noescape\nfunc callKernel" + Signature + "\n")
	for _, k := range ks {
		for _, v := range Forward {
			name := k.Prefix + v.Name()
			b.WriteString("\n")
			for _, line := range v.Doc(name) {
				fmt.Fprintf(&b, "// %s\n", line)
			}
			fmt.Fprintf(&b, "//\n//go:noescape\nfunc %s%s\n", name, Signature)
		}
	}
	return b.String()
}

// TableData returns the assembler directives that lay out Table(ks) as kernels<>, a read-only
// array of function addresses (the same text for every architecture).
func TableData(ks []Kernel) string {
	var b strings.Builder
	t := Table(ks)
	for i, fn := range t {
		fmt.Fprintf(&b, "DATA kernels<>+%d(SB)/8, $·%s(SB)\n", 8*i, fn)
	}
	fmt.Fprintf(&b, "GLOBL kernels<>(SB), RODATA|NOPTR, $%d\n", 8*len(t))
	return b.String()
}

// Table returns, for each job.fn from 0 up, the function callKernel jumps to: ks's functions in
// their kernels' places, runGeneric elsewhere.
func Table(ks []Kernel) []string {
	var t []string
	for _, id := range KernelIDs {
		for _, v := range Forward {
			fn := "runGeneric"
			for _, k := range ks {
				if k.ID == id {
					fn = k.Prefix + v.Name()
				}
			}
			t = append(t, fn)
		}
	}
	return t
}
