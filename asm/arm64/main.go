// Command arm64 writes rmsnorm_arm64.s (NEON kernels) and its Go stubs. Avo has no arm64
// backend, so this is a small text emitter: Go assembler mnemonics where the assembler has them
// (VLD1.P, VST1.P, VDUP, VMOV, VEXT, VZIP1/2, scalar FDIVS, FSQRTS, ...) and WORD directives,
// built from their fields in enc.go, for the vector float instructions it lacks (FMUL, FADD,
// FSUB, FADDP, FDIV, FSQRT, FCMGE on .4S). Run it through `go generate ./...` at the repository
// root.
//
// The kernels implement the numeric contract of the package doc bit for bit, with the same
// signature, job fields (read through go_asm.h) and flags as the amd64 ones:
//
//	func(j *job, from, to int) int
//
// The 64 partial sums live in the 16 Q registers V0-V15 (V_k holds p[4k..4k+3], so element i goes
// to lane i%64); each square is a vector FMUL followed by an FADD (FMLA would fuse them and break
// the contract). The halving tree runs h = 32..4 as vector FADDs, h = 2 as EXT plus FADD and h = 1
// as one scalar FADDP; inv is scalar (FDIVS, FADDS, FSQRTS, FDIVS), and y = (x*inv)*w is two
// vector FMULs. The end of a row that does not fill a block of 64 is copied to a zero-padded block
// on the stack and summed as a whole block (the zeros add +0), and the last 1-3 outputs go through
// a copy on the stack too, so nothing past a slice is read or written. The rows of dst lie
// job.dstStride elements apart, those of x and res job.stride. Rows of up to 512 floats (without
// the residual) go four at a time: their sums are formed one after the other, their trees finish
// together with ZIP1/ZIP2, FADD and FADDP, and the scalar steps run as vector FDIV, FADD, FSQRT,
// FDIV.
//
// 16-bit rows (bfloat16, binary16) are widened to float32 as they are loaded and the output
// narrowed as it is stored (round to nearest even), with the residual's h rounded to the format
// before it is stored and squared. The mixed formats (float32 rows into 16-bit ones, spec.ToBF16
// and spec.ToF16) are the same code with the input format of float32 and the output format of
// 16 bits: the sum pass and h are the float32 kernel's, the stores to dst (and flagRN's rounding
// of x*inv) the 16-bit kernels'.
//
// LayerNorm (the Layer variants) has a function per format too, the same code with a Layer
// switch in the emitter: one row at a time (no groups). A row with flagCenter takes three
// passes: s, the plain sum of the row (with a residual, of h, stored as above), in the same 64
// partials, tree and zero-padded tail; m = s/d (s*rd when d is a power of two) in all lanes of
// V31; the sum of the squares of x - m, FSUB, FMUL then FADD, the tail's padding lanes
// subtracting +0 in place of m so that they add +0; then inv as above. A row without it takes
// RMSNorm's sum pass and m = +0. The scale pass is RMSNorm's with x - m in place of x and the
// bias added last, every row: -0s (read over and over from a constant) stand in for a nil bias,
// since y + -0 is y for every y. A row whose s is not finite returns to the float64 path as one
// whose t is out of range does, its h already stored.
//
// The backward functions (backward.go) do one row in three passes: the sum of squares as above,
// c = the sum of g*x in the same 64 partials and tree, then dx = inv*(g - x*s) with the weight
// gradient's products added to their block's partial sum (or to DW) in the same loop, one loop
// per way of adding them; that pass does the last 1-3 elements of a row with scalar instructions
// instead of a copy on the stack.
// The Layer functions (layer_backward.go) add a centered body for rows with flagCenter (the
// forward's two sum passes, the sums of g and of g*n, then dx = inv*((g - a) - n*b)) and a pass
// that adds dy into the bias gradient's block; they clear flagPF on entry and prefetch nothing.
//
// Expected throughput of the inner loops (from the vendors' optimization guides; not measured,
// since this project's CI has no arm64 hardware):
//   - Neoverse N1 (Graviton 2, Ampere Altra): two 128-bit FP pipes, FMUL 3 and FADD 2 cycles of
//     latency, two 128-bit loads and one store per cycle. The sum loop needs 16 loads, 16 FMUL and
//     16 FADD per 64 floats: about 16 cycles, FP-bound, 4 floats per cycle; each accumulator is
//     added to once per 16 cycles, far more than its 2-cycle latency, so 16 accumulators hide it
//     with room to spare. The scale loop needs 2 loads, 2 FMUL and 1 store per 4 floats: about 1
//     cycle per 4 floats, so a row costs roughly 0.5 cycle per float in L1.
//   - Neoverse V1/V2 (Graviton 3/4): four 128-bit FP pipes, three loads and two stores per
//     cycle: both loops about twice as fast, the sum loop becomes load-bound (16 loads / 3 per
//     cycle), and 16 accumulators still cover FADD's latency (2 cycles x 4 pipes = 8 in flight).
//   - Apple M1-M4: four FP pipes, FADD/FMUL latency 3-4 cycles (12-16 operations in flight, just
//     covered by 16 accumulators), three to four loads and two stores per cycle: like V1.
//
// Memory: with flagPF the scale loop prefetches the rows ahead (PRFM PLDL1KEEP; flagNTA, which
// picks a non-temporal prefetch on amd64, is not distinguished here, since nothing on arm64 could
// be measured). The Go assembler has no vector non-temporal store for arm64, so flagNT is
// ignored and dst is written with ordinary stores.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"
	"strings"

	"github.com/gosimd/rmsnorm/asm/internal/spec"
)

const constraint = "gc && !purego && !noasm" // the _arm64 file names supply the architecture

func main() {
	out := flag.String("out", "", "assembly output file")
	stubs := flag.String("go", "", "Go declarations and dispatch output file")
	flag.Parse()
	if *out == "" || *stubs == "" {
		log.Fatal("usage: arm64 -out file.s -go file.go")
	}
	header := "// Code generated by command: go run -C asm ./arm64 " + strings.Join(os.Args[1:], " ") + ". DO NOT EDIT."

	var s bytes.Buffer
	fmt.Fprintf(&s, "%s\n\n//go:build %s\n\n#include \"textflag.h\"\n#include \"go_asm.h\"\n", header, constraint)
	k := spec.Kernel{ID: "kernelNEON", Prefix: "neon", Variants: spec.Bodies}
	k.Backward = spec.BackwardBodies
	k.Conversions = spec.Conversions
	ks := []spec.Kernel{k}
	s.WriteString("\n// func callKernel(j *job, from, to int) int: jump to the function job.fn selects, with the\n")
	s.WriteString("// caller's arguments and return address in place.\n")
	s.WriteString("TEXT ·callKernel(SB), NOSPLIT|NOFRAME, $0-32\n")
	fmt.Fprintf(&s, "\tMOVD j+0(FP), R0\n\tMOVWU %s(R0), R1\n\tMOVD $kernels<>(SB), R2\n\tMOVD (R2)(R1<<3), R2\n\tB (R2)\n\n", spec.Job.Fn)
	s.WriteString(spec.TableData(ks))
	s.WriteString(negZeroData())
	for _, v := range k.Variants {
		s.WriteString(kernel("neon"+v.FuncName(), v))
	}
	for _, c := range spec.Conversions {
		s.WriteString(convert("neon"+c.Name, c))
	}
	for _, b := range k.Backward {
		s.WriteString(backward("neon"+b.FuncName(), b))
	}
	if err := os.WriteFile(*out, s.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	g, err := format.Source([]byte(spec.GoStubs(header, constraint, ks)))
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*stubs, g, 0o644); err != nil {
		log.Fatal(err)
	}
}
