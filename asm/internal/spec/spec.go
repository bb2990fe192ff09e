// Package spec is what the kernel generators and the Go side of the package share: the variants
// every kernel comes in, their names and formulas, the arguments, the flag bits and the group size.
// The generators write the Go side from it too (gospec.go and the dispatch in the stub files), so
// adding a variant means adding it here and regenerating.
package spec

import (
	"fmt"
	"slices"
	"strconv"
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

// Format is how rows are stored: x and the residual in In(), dst in Out(); the weight is float32
// in every format.
type Format int

const (
	F32    Format = iota // float32
	BF16                 // bfloat16, raw bits in a uint16
	F16                  // IEEE 754 binary16, raw bits in a uint16
	ToBF16               // float32 x and residual, bfloat16 dst (RowsTo16)
	ToF16                // float32 x and residual, binary16 dst (RowsTo16)
)

// Formats lists the formats in the order of the Go side's format constants.
var Formats = []Format{F32, BF16, F16, ToBF16, ToF16}

func (f Format) String() string { return [...]string{"", "BF16", "F16", "ToBF16", "ToF16"}[f] }

// GoName is the Go side's format constant, e.g. "formatToBF16".
func (f Format) GoName() string {
	return "format" + [...]string{"F32", "BF16", "F16", "ToBF16", "ToF16"}[f]
}

// In is the format of x and the residual.
func (f Format) In() Format {
	if f == ToBF16 || f == ToF16 {
		return F32
	}
	return f
}

// Out is the format of dst.
func (f Format) Out() Format {
	switch f {
	case ToBF16:
		return BF16
	case ToF16:
		return F16
	}
	return f
}

// Bytes is the size of one element of a row of x and the residual (In).
func (f Format) Bytes() int {
	if f.In() == F32 {
		return 4
	}
	return 2
}

// OutBytes is the size of one element of a row of dst (Out).
func (f Format) OutBytes() int {
	if f.Out() == F32 {
		return 4
	}
	return 2
}

// Variant is one specialized kernel body.
type Variant struct {
	Format   Format
	Mode     Mode
	Residual bool // h = x + res (rounded to the format); res = h; normalize h
	// Layer is LayerNorm: a Norm with Center or Bias. Its jobs carry flagCenter when the row's
	// mean is subtracted, and a bias pointer (nil without a bias), so that one kernel body per
	// format serves Center, Bias and both. The assembly functions of the other variants never
	// see such a job: a kernel without a function for a Layer variant runs the generic kernel's.
	Layer bool
}

// Rounds reports whether the variant takes RoundNormalized from FlagRN: 16-bit rows with a weight,
// where x*inv may be rounded to the format before the weight. A test of the flag per vector costs
// less than a second copy of every such function (a third of the generated code).
func (v Variant) Rounds() bool { return v.Format.Out() != F32 && v.Mode != Unweighted }

// Body returns the variant whose kernel function runs v: one function per format (and per Layer)
// serves the three weight forms and both residual forms, and Body stands for it with Mode Offset
// and no residual.
//
// The weight forms: the main scale loops come in one copy per form, chosen once per row: a job
// without a weight (Unweighted) has w nil, and FlagOffset tells Offset from Weighted (on amd64 the
// loop of non-temporal stores of 16-bit rows, whose rows come from memory, tests w and the flag
// per iteration instead). The ends of rows multiply by w + c, with c = 1 under FlagOffset and
// c = -0 without (w + -0 is w for every w, -0 included, so Weighted keeps its bits), or skip the
// weight when w is nil.
//
// The residual: a job with res (not nil) takes a sum pass of its own, one row at a time, which
// adds x and res and stores h to res; the scale pass, the inverse and everything after them are
// shared, the scale pass reading h from res.
//
// When each form had functions of its own, those for Weighted were a sixth of the generated code;
// after they were merged, those for Unweighted a quarter of what remained, and then the scale
// passes of the residual functions a fifth.
func (v Variant) Body() Variant {
	v.Mode, v.Residual = Offset, false
	return v
}

// FuncName is the part of a function name that names the function running v, e.g. "Forward" or
// "ForwardBF16": every weight form and residual form of a format has the same (see Body).
func (v Variant) FuncName() string { return "Forward" + v.Body().stem() }

// Bodies lists the variants that have kernel functions of their own, in the order of Forward:
// Body of each, once.
var Bodies = func() []Variant {
	var vs []Variant
	for _, v := range Forward {
		if v.Body() == v {
			vs = append(vs, v)
		}
	}
	return vs
}()

// Forward lists every forward variant, in the order the generated files hold them; the Go side
// numbers them the same way (gospec.go): the RMSNorm variants first, then the Layer ones in the
// same order.
var Forward = func() []Variant {
	var vs []Variant
	for _, layer := range []bool{false, true} {
		for _, f := range Formats {
			for _, res := range []bool{false, true} {
				for _, m := range Modes {
					vs = append(vs, Variant{f, m, res, layer})
				}
			}
		}
	}
	return vs
}()

// BackwardVariant is the form of a backward call: the weight form, and Layer for a Norm with
// Center or a bias gradient to sum (DB). Layer jobs carry flagCenter when the rows were centered
// and a db pointer when DB is asked for.
type BackwardVariant struct {
	Mode  Mode
	Layer bool
}

// Backward lists the backward variants, in the order of their entries in the dispatch table,
// after the forward variants (job.v numbers them len(Forward)+i): the weight forms, then the
// same with Layer. BackwardBodies lists the functions that run them.
var Backward = func() []BackwardVariant {
	var bs []BackwardVariant
	for _, layer := range []bool{false, true} {
		for _, m := range Modes {
			bs = append(bs, BackwardVariant{m, layer})
		}
	}
	return bs
}()

// Name names the backward variant (the Go side's v<Name> constant), e.g. "BackwardOffset" or
// "BackwardLayerWeighted".
func (b BackwardVariant) Name() string { return b.stem() + b.Mode.String() }

func (b BackwardVariant) stem() string {
	if b.Layer {
		return "BackwardLayer"
	}
	return "Backward"
}

// Body returns the variant whose backward function runs b. One function, generated as Offset's,
// serves Weighted and Offset: it multiplies dy by w + c, c = 1 under FlagOffset and -0 without
// (w + -0 is w for every w, as at the ends of forward rows), and its main loops come in a copy per
// form. Unweighted has its own; Layer keeps its own functions apart.
func (b BackwardVariant) Body() BackwardVariant {
	if b.Mode == Weighted {
		b.Mode = Offset
	}
	return b
}

// BackwardBodies lists the backward variants that have functions of their own, in the order of
// Backward: Body of each, once.
var BackwardBodies = func() []BackwardVariant {
	var bs []BackwardVariant
	for _, b := range Backward {
		if b.Body() == b {
			bs = append(bs, b)
		}
	}
	return bs
}()

// FuncName is the part of a function name of the backward function running b (see Body):
// "Backward" for a weight in either form, "BackwardUnweighted" without one; "BackwardLayer" and
// "BackwardLayerUnweighted" for Layer.
func (b BackwardVariant) FuncName() string {
	if b.Body().Mode == Offset {
		return b.stem()
	}
	return b.stem() + b.Mode.String()
}

// BackwardDoc is the documentation of the backward kernel function running b.
func BackwardDoc(name string, b BackwardVariant) []string {
	g := "dy"
	if b.Mode != Unweighted {
		g = "dy*w (dy*(1+w) with flagOffset)"
	}
	if b.Layer {
		return []string{
			name + " computes the gradient of rows [from, to) of a Layer job: with flagCenter, with g = " + g + ",",
			"n = (x-m)*inv and a, b the contract's sums of g and of g*n over d, dx = inv*((g - a) - n*b), as",
			"runGenericBackwardCentered; without it, as the RMSNorm function. When the job has them, the",
			"products dy*n (dy*(x*inv)) go into the row block's partial sum of the weight gradient, and dy",
			"into that of the bias gradient (see gradBlock), before dx is written (dx may be dy).",
			"It stops before the first row that needs the float64 path and returns that row's index, or to.",
		}
	}
	return []string{
		name + " computes the gradient of rows [from, to) of the job: with g = " + g + ",",
		"c the contract's sum of g*x and s = ((inv*inv)*c)/d, dx = inv*(g - x*s); and, when the job has",
		"a weight gradient, the products dy*(x*inv) into the row block's partial sum (see gradBlock).",
		"It stops before the first row that needs the float64 path and returns that row's index, or to.",
	}
}

// GradBlock is the number of rows whose weight-gradient products are summed, in row order, into
// one partial sum before it is added to DW; blocks are fixed by the row index alone.
const GradBlock = 32

// Entries is the number of functions per kernel in the table callKernel jumps through: the
// forward variants, then the backward functions.
var Entries = len(Forward) + len(Backward)

// Name is the variant's part of a function name, e.g. "AddOffset", "BF16AddWeighted" or
// "LayerF16Unweighted".
func (v Variant) Name() string { return v.stem() + v.Mode.String() }

// stem is the part of a variant's names before its weight form: the format, then Add for the
// residual forms.
func (v Variant) stem() string {
	s := v.Format.String()
	if v.Layer {
		s = "Layer" + s
	}
	if v.Residual {
		return s + "Add"
	}
	return s
}

// Formula is the doc-comment line for the kernel function that runs v (see Body), which serves
// every weight form and both residual forms.
func (v Variant) Formula() string {
	s := ""
	round := func(e string) string { return e }
	roundIn := round
	switch {
	case v.Format.In() != v.Format.Out():
		s = "float32 rows into " + v.Format.Out().String() + " rows: "
		round = func(e string) string { return "round16(" + e + ")" }
	case v.Format != F32:
		s = v.Format.String() + " rows: "
		round = func(e string) string { return "round16(" + e + ")" }
		roundIn = round
	}
	n, b := "x*inv", "" // the normalized value and what is added to the weighted one
	if v.Layer {
		if s == "" {
			s = "LayerNorm: "
		} else {
			s = "LayerNorm on " + s
		}
		n, b = "(x-m)*inv", " + b"
	}
	s += "y = " + round("("+n+")*w"+b) + ", " + round("("+n+")*(1+w)"+b) + " with flagOffset, or " + round(n+b) + " with w nil"
	if v.Body().Rounds() {
		s += " (with flagRN and a weight, " + round(n) + " in place of (" + n + "))"
	}
	if v.Layer {
		s += ", m the row's mean with flagCenter (else +0; stored to mean[r] when mean is not nil), b the bias (nothing added when it is nil)"
	}
	return s + ", for each row; with res, h = " + roundIn("x + res") + " and res = h per element first, and h in place of x."
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
	Dst, X, Res, W, Inv, D, Stride, DstStride, Eps, Flags, Fn string
	Bias, Mean                                                string // Layer: the bias (nil without one), where the mean of row r goes (or nil)
	DY, DW, Acc, Rows                                         string
	DB, AccB                                                  string // Layer backward: the bias gradient and its partial sums (as DW and Acc)
}{"job_dst", "job_x", "job_res", "job_w", "job_inv", "job_d", "job_stride", "job_dstStride", "job_eps", "job_flags", "job_fn",
	"job_bias", "job_mean",
	"job_dy", "job_dw", "job_acc", "job_rows",
	"job_db", "job_accB"}

// KernelIDs are the Go side's kernelID constants, in their order (dispatch.go): job.fn is
// kernelID*Entries + the variant, an index into a table of functions that holds runGeneric (or
// runGenericBackward) for the kernels an architecture lacks. kernelAVX512BF16 is the avx512
// kernel on CPUs with AVX512_BF16 (its Base is avx512).
var KernelIDs = []string{"kernelGeneric", "kernelAVX2", "kernelAVX512", "kernelNEON", "kernelAVX512BF16"}

// Flag bits of job.flags.
const (
	FlagNT = 1 // write dst with non-temporal stores (the batch is larger than the cache); comes with FlagPF but for the rows left to the hardware prefetchers (streamrule.Hardware: RMSNorm's float32 rows)
	FlagPF = 2 // the rows come from memory, or lie far apart: the kernels prefetch the rows ahead (the generic one reads each row in order first)
	// FlagFuse (backward with a weight gradient): one worker does all the rows of the call, so the
	// last row of a block adds its block's partial sum to DW itself (DW += P + q). Without it each
	// block's partial sum stays in its own slot of acc and the Go side adds the slots to DW.
	FlagFuse = 4
	// FlagRN (16-bit rows with a weight): Norm.RoundNormalized, x*inv rounded to the format before
	// the weight (see Variant.Rounds).
	FlagRN = 8
	// FlagOffset (rows with a weight): the weight form is 1+w, Offset (see Variant.Body). Rows
	// without a weight need no flag: their job's w is nil.
	FlagOffset = 16
	// FlagCenter (Layer variants): Norm.Center, the row's mean is subtracted before the sum of
	// squares and the scale. A Layer job without it only adds the bias (or sums DB).
	FlagCenter = 32
	// FlagPipe (AVX2, float32 rows in and float32 or float16 rows out, and float16 rows in and
	// out; AVX-512, float32 rows in and out, a row whose dst is 64-byte aligned; no residual, with
	// FlagNT; d a multiple of 64 above GroupMax, dst rows 32-byte aligned; float16 rows out not
	// with FlagRN): the
	// scale pass of a row sums the next row's squares in the same loop, so that loading the next
	// row overlaps storing this one; in the Layer functions, with FlagCenter, the next row's
	// elements for its mean. On a backward job (AVX2's RMSNorm functions, with FlagNT or in
	// place; d a multiple of 64, dx rows 32-byte aligned): the dx pass of a row forms the next
	// row's sums of squares and of g*x in the same loop, and that row skips its sum passes.
	FlagPipe = 64
	// FlagAhead (backward, rows from memory, on the CPUs of streamrule.Ahead): the sum passes
	// prefetch the rows they read 1 KiB ahead of their loads, where the hardware prefetchers
	// alone leave memory idle part of the time. The Go side sets FlagNext with it when dx goes
	// out with FlagNT.
	FlagAhead = 128
	// FlagRows (float32 rows into float32 rows, d a multiple of 64, a plain weight, no
	// residual, for the calls streamrule.Rows picks: in cache, rows of at most RowsMax (up to
	// GroupMax where a rule says so), or longer than GroupMax; streamed out of place, rows of at
	// most RowsMax (the same)): the functions with the one-row path run every row of the call
	// through it, one at a time, instead of in groups of four or through the general path. The
	// bits are the same either way. The Go side sets it alone for rows in cache, and with FlagNT and FlagPF (nothing else) for streamed rows, which
	// the loop then writes with non-temporal stores, prefetching ahead in its sum pass; a
	// streamed call whose dst rows are not aligned to the vector takes the general path.
	FlagRows = 256
	// FlagGroups (the AVX-512 forward functions, rows of at most LongGroupMax): four rows at a
	// time, the latencies of their reductions and divisions overlapping. The Layer functions
	// take every row alone without it (the AVX2 ones always group: layerGroups in the
	// generator); the RMSNorm ones group rows of at most GroupMax without it and longer ones
	// only with it. The Go side sets it where streamrule.LayerGroups, streamrule.LongGroups and
	// streamrule.GroupsF32 say so. The bits are the same either way.
	FlagGroups = 512
	// FlagNext (rows from memory, the output out with non-temporal stores, FlagNT): the pass that
	// works from the cache prefetches the next row of every row the next row's first pass reads,
	// so that memory is not idle while the row goes out and that pass finds them in the cache. On
	// a backward job the dx pass prefetches the next row's x and dy; the Go side sets it on the
	// CPUs of streamrule.Ahead (with FlagAhead) and for the rows of streamrule.Next. On a forward
	// job with a residual (float32 rows in), the scale pass, which prefetches the next row of h
	// under FlagPF, prefetches the next row of x too; the Go side sets it for the rows of
	// streamrule.NextResidual, on residual jobs alone. The bits are the same either way.
	FlagNext = 1024
)

// RowsMax is the longest row that FlagRows sends through the one-row path's loop instead of the
// groups (streamrule.ShortMax), unless a CPU's rule raises it (RowRule.Short, at most GroupMax);
// rows longer than GroupMax (streamrule.LongAbove) may take it too.
const RowsMax = 128

// Bounds of t = ss/d + eps outside which a row takes the float64 path.
const (
	TLowBits = 0x0d800000 // 2^-100
	TMaxBits = 0x7f7fffff // MaxFloat32
)

// GroupMax is the longest row, in floats, that the kernels normalize four at a time (the AVX-512
// ones under FlagGroups: LongGroupMax): four rows must stay in L1 between the sum and the scale
// pass, and longer rows hide most of the latency of the scalar steps on their own.
const GroupMax = 512

// LongGroupMax is the longest row the AVX-512 functions normalize four at a time under
// FlagGroups: LayerNorm's two reductions, and the widening and narrowing of 16-bit rows, leave
// latency to hide in rows longer than GroupMax, as do float32 RMSNorm rows when the whole call
// fits the L1d (rows of 832 and more: the L2); four rows of 1024 and their outputs (64 KiB) stay
// in L2 between the passes. The Go side sets the flag for rows longer than GroupMax only in cache
// (streamrule.LayerGroups, LongGroups and GroupsF32 have the measurements).
const LongGroupMax = 1024

// GoSpec returns the Go source of gospec.go: the constants and the variant numbering the Go side
// shares with the kernels. header is the "Code generated" line.
func GoSpec(header string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\npackage rmsnorm\n\n", header)
	b.WriteString("// What the assembly kernels and the Go side share, from asm/internal/spec.\n\n")
	b.WriteString("// Flag bits of job.flags.\nconst (\n")
	fmt.Fprintf(&b, "\tflagNT = %d // write dst with non-temporal stores (the batch is larger than the cache); without flagPF the rows are left to the hardware prefetchers (streamrule.Hardware)\n", FlagNT)
	fmt.Fprintf(&b, "\tflagPF = %d // the rows come from memory, or lie far apart: prefetch them (the generic kernel: touchRow)\n", FlagPF)
	fmt.Fprintf(&b, "\tflagFuse = %d // backward: the last row of a block adds the block's partial sum to DW\n", FlagFuse)
	fmt.Fprintf(&b, "\tflagRN = %d // 16-bit rows with a weight: round x*inv to the format before the weight (RoundNormalized)\n", FlagRN)
	fmt.Fprintf(&b, "\tflagOffset = %d // rows with a weight: the weight form is 1+w (one kernel function serves every form)\n", FlagOffset)
	fmt.Fprintf(&b, "\tflagCenter = %d // Layer variants: subtract the row's mean (Norm.Center)\n", FlagCenter)
	fmt.Fprintf(&b, "\tflagPipe = %d // streaming (AVX2: float32 rows into float32 or float16, float16 rows into float16; AVX-512: float32 rows into float32): the scale pass of a row sums the next row's squares (LayerNorm: its elements); backward (AVX2, RMSNorm): the dx pass forms the next row's sums\n", FlagPipe)
	fmt.Fprintf(&b, "\tflagAhead = %d // backward streaming: the sum passes prefetch 1 KiB ahead\n", FlagAhead)
	fmt.Fprintf(&b, "\tflagRows = %d // float32 rows one at a time through the one-row path (streamrule.Rows): in cache, of at most rowsMax (up to groupMax where the rule says so) or above groupMax; streamed (with flagNT and flagPF alone), of at most rowsMax (the same)\n", FlagRows)
	fmt.Fprintf(&b, "\tflagGroups = %d // the AVX-512 forward functions take rows of at most longGroupMax four at a time (streamrule.LayerGroups, LongGroups, GroupsF32): without it the Layer ones none, the RMSNorm ones those of at most groupMax\n", FlagGroups)
	fmt.Fprintf(&b, "\tflagNext = %d // streaming with flagNT: backward, the dx pass prefetches the next row's x and dy; forward with a residual, the scale pass the next row's x beside h's\n", FlagNext)
	b.WriteString(")\n\n")
	fmt.Fprintf(&b, "// gradBlock is the number of rows summed into one partial sum of the weight gradient.\nconst gradBlock = %d\n\n", GradBlock)
	fmt.Fprintf(&b, "// groupMax is the longest row the kernels normalize four at a time (the AVX-512 ones under flagGroups: longGroupMax).\nconst groupMax = %d\n\n", GroupMax)
	fmt.Fprintf(&b, "// longGroupMax is the longest row the AVX-512 forward functions normalize four at a time under flagGroups.\nconst longGroupMax = %d\n\n", LongGroupMax)
	fmt.Fprintf(&b, "// rowsMax is the longest row flagRows sends through the one-row path one at a time instead of the groups, unless a rule raises it (streamrule.RowRule.Short).\nconst rowsMax = %d\n\n", RowsMax)
	b.WriteString("// What a row function returns (callRow): see spec.RowResults.\nconst (\n")
	fmt.Fprintf(&b, "\trowNone = %d // nothing written: no row function, d not a positive multiple of 64, or a row without a residual that needs the float64 path\n", RowNone)
	fmt.Fprintf(&b, "\trowDone = %d // the row is done\n", RowDone)
	fmt.Fprintf(&b, "\trowHeld = %d // a row with a residual that needs the float64 path: res holds h, nothing else is written\n", RowHeld)
	b.WriteString(")\n\n")
	b.WriteString("// variant numbers the form of a call (format, weight form, residual): its index in spec.Forward.\n")
	b.WriteString("// The generic kernel runs each; the assembly has one forward function per format (spec.Body).\n")
	b.WriteString("type variant uint8\n\nconst (\n")
	for i, v := range Forward {
		fmt.Fprintf(&b, "\tv%s variant = %d\n", v.Name(), i)
	}
	for i, bv := range Backward {
		fmt.Fprintf(&b, "\tv%s variant = %d\n", bv.Name(), len(Forward)+i)
	}
	b.WriteString(")\n\n")
	fmt.Fprintf(&b, "// numVariants is the number of forward variants; numEntries counts the backward functions too.\n")
	fmt.Fprintf(&b, "const (\n\tnumVariants = %d\n\tnumEntries  = %d\n)\n\n", len(Forward), Entries)
	fmt.Fprintf(&b, "// numConvOps is the number of conversions (convOp).\nconst numConvOps = %d\n\n", len(Conversions))
	b.WriteString("// forwardVariant maps a call's storage format, weight form and residual to the variant that\n")
	b.WriteString("// implements it (RoundNormalized is flagRN); layerVariant is the same for Layer (Center or Bias).\n")
	for _, layer := range []bool{false, true} {
		name := "forwardVariant"
		if layer {
			name = "layerVariant"
		}
		fmt.Fprintf(&b, "var %s = [%d][3][2]variant{\n", name, len(Formats))
		for _, f := range Formats {
			fmt.Fprintf(&b, "\t%s: {\n", f.GoName())
			for _, m := range Modes {
				var rs []string
				for _, res := range []bool{false, true} {
					rs = append(rs, "v"+Variant{f, m, res, layer}.Name())
				}
				fmt.Fprintf(&b, "\t\t%s: {%s},\n", strings.ToLower(m.String()), strings.Join(rs, ", "))
			}
			b.WriteString("\t},\n")
		}
		b.WriteString("}\n\n")
	}
	b.WriteString("// backwardVariant maps a backward call's Layer (Center or DB) and weight form to its variant.\n")
	b.WriteString("var backwardVariant = [2][3]variant{\n")
	for _, layer := range []bool{false, true} {
		var rs []string
		for _, m := range Modes {
			rs = append(rs, "v"+BackwardVariant{m, layer}.Name())
		}
		fmt.Fprintf(&b, "\t{%s},\n", strings.Join(rs, ", "))
	}
	b.WriteString("}\n")
	return b.String()
}

// Kernel is one ISA's set of kernel functions as the Go side knows it.
type Kernel struct {
	ID          string            // the kernelID constant, e.g. "kernelAVX512"
	Prefix      string            // the function-name prefix, e.g. "avx512"
	Variants    []Variant         // the Bodies it has functions for (the others run Base's, or the generic kernel)
	Conversions []Conversion      // the conversions it has functions for (the others: Base's, or the generic loop)
	Backward    []BackwardVariant // the BackwardBodies it has functions for (the others: Base's, or the generic kernel)
	Rows        []string          // the RowKinds it has row functions of, Prefix+"Row"+kind (RowSignature); the others Base's, or none
	// Base, if not nil, is the kernel whose functions run what this one has none for: a kernel
	// that differs from another in a few functions lists only those.
	Base *Kernel
}

// Conversion is a vector loop that converts n elements between float32 and a 16-bit format,
// func(dst, src unsafe.Pointer, n int); its index is the Go side's convOp.
type Conversion struct {
	Name   string // e.g. "WidenBF16"; the Go side's convOp is "conv" + Name
	Format Format
	Widen  bool // 16-bit to float32; else float32 to 16-bit
}

// Conversions lists the conversions in the order of the Go side's convOp constants.
var Conversions = []Conversion{{"WidenBF16", BF16, true}, {"WidenF16", F16, true}, {"NarrowBF16", BF16, false}, {"NarrowF16", F16, false}}

// ConvSignature is the Go signature of every conversion function.
const (
	ConvSignature = "(dst, src unsafe.Pointer, n int)"
	ConvAvoSig    = "func(dst, src uintptr, n int)" // the same frame, in types Avo knows
)

// RowSignature is the Go signature of the row functions: one float32 row of d elements with a
// plain weight, from its arguments, with a residual when res is not nil (see RowDoc). The result
// is one of the Go side's rowNone, rowDone and rowHeld (RowResults).
const (
	RowSignature = "(dst, x, res, w unsafe.Pointer, d int, eps float32) int"
	RowAvoSig    = "func(dst, x, res, w uintptr, d int, eps float32) int" // the same frame, in types Avo knows
)

// RowResults are the values a row function returns, as the Go side names them: rowNone (nothing
// written: d not a positive multiple of 64, or a row without a residual that needs the float64
// path), rowDone (the row is done) and rowHeld (a row with a residual that needs the float64
// path: res holds h, and nothing else is written).
const (
	RowNone = 0
	RowDone = 1
	RowHeld = 2
)

// CallRowSignature is callRow's: a row function's arguments and the kernel, after them so that
// the row function finds its own where callRow's caller put them.
const CallRowSignature = "(dst, x, res, w unsafe.Pointer, d int, eps float32, k kernelID) int"

// RowKinds name the kinds of row function (Kernel.Rows): "" for float32 rows (Prefix+"Row",
// callRow), "F16" for binary16 rows (Prefix+"RowF16", callRowF16), "F16Buf" for binary16 rows
// through a float32 copy on the stack (Prefix+"RowF16Buf", callRowF16Buf), "BF16" for bfloat16
// rows (Prefix+"RowBF16", callRowBF16), and "F16RN" and "BF16RN" for the 16-bit rows of a Norm
// with RoundNormalized (x*inv rounded to the format before the weight); all but the first
// one's res must be nil. All take RowSignature.
var RowKinds = []string{"", "F16", "F16Buf", "BF16", "F16RN", "BF16RN"}

// callRowDoc is the documentation of callRow+kind, for each of RowKinds (GoStubs).
var callRowDoc = map[string]string{
	"": `// callRow runs one float32 row of d with a plain weight (and a residual when res is not nil)
// through kernel k's row function, and returns what it returned: rowNone, having written
// nothing, when k has none (the caller then takes the job's path). An assembly stub that jumps
// to the function, as callKernel does (see RowTable).
`,
	"F16":    "// callRowF16 is callRow for one binary16 row (res nil), through kernel k's RowF16 function.\n",
	"F16Buf": "// callRowF16Buf is callRowF16 through kernel k's RowF16Buf function (noRow where it has none).\n",
	"BF16":   "// callRowBF16 is callRow for one bfloat16 row (res nil), through kernel k's RowBF16 function (noRow where it has none).\n",
	"F16RN":  "// callRowF16RN is callRowF16 for a row with RoundNormalized, through kernel k's RowF16RN function (noRow where it has none).\n",
	"BF16RN": "// callRowBF16RN is callRowBF16 for a row with RoundNormalized, through kernel k's RowBF16RN function (noRow where it has none).\n",
}

// RowTable returns, for each kernel id from 0 up, the function callRow+kind jumps to: the
// kernel's row function of that kind (or its Base's), noRow elsewhere; nil when no kernel of ks
// has one.
func RowTable(ks []Kernel, kind string) []string {
	var t []string
	has := false
	for _, id := range KernelIDs {
		fn := "noRow"
		for i := range ks {
			if ks[i].ID == id && ks[i].RowFunc(kind) != "" {
				fn, has = ks[i].RowFunc(kind), true
			}
		}
		t = append(t, fn)
	}
	if !has {
		return nil
	}
	return t
}

// RowTableData returns the assembler text of callRow+kind for each of RowKinds, noRow and their
// tables, rows+kind<> (amd64). A call returns rowNone for a k past the table, as noRow does: the
// Go side passes only kernel ids, and an id that is not one then declines the row instead of
// jumping anywhere.
func RowTableData(ks []Kernel) string {
	var b strings.Builder
	for _, kind := range RowKinds {
		// callRow+kind indexes its table for every kernel id: an empty table would send it
		// anywhere.
		if RowTable(ks, kind) == nil {
			panic("spec: no kernel has a row function of kind " + strconv.Quote(kind))
		}
		fmt.Fprintf(&b, "\n// func callRow%s%s: jump to kernel k's row function,\n", kind, CallRowSignature)
		b.WriteString("// with the caller's arguments and return address in place.\n")
		fmt.Fprintf(&b, "TEXT ·callRow%s(SB), NOSPLIT, $0-56\n", kind)
		fmt.Fprintf(&b, "\tMOVL k+44(FP), CX\n\tCMPL CX, $%d\n\tJAE  none%s\n", len(KernelIDs), kind)
		fmt.Fprintf(&b, "\tLEAQ rows%s<>(SB), DX\n\tMOVQ (DX)(CX*8), DX\n\tJMP  DX\n\n", kind)
		fmt.Fprintf(&b, "none%s: // not a kernel: nothing to jump to\n\tMOVQ $%d, ret+48(FP)\n\tRET\n", kind, RowNone)
	}
	b.WriteString("\n// func noRow" + RowSignature + "\n")
	fmt.Fprintf(&b, "TEXT ·noRow(SB), NOSPLIT, $0-56\n\tMOVQ $%d, ret+48(FP)\n\tRET\n", RowNone)
	for _, kind := range RowKinds {
		b.WriteString("\n")
		t := RowTable(ks, kind)
		for i, fn := range t {
			fmt.Fprintf(&b, "DATA rows%s<>+%d(SB)/8, $·%s(SB)\n", kind, 8*i, fn)
		}
		fmt.Fprintf(&b, "GLOBL rows%s<>(SB), RODATA|NOPTR, $%d\n", kind, 8*len(t))
	}
	return b.String()
}

// RowDoc is the documentation of the row function name, of kind (RowKinds).
func RowDoc(name, kind string) []string {
	if kind == "F16Buf" {
		return []string{
			name + " is the F16 row function for rows of at most 4096, through a float32 copy of the row on its stack:",
			"the sum pass widens x into it, the scale pass reads it. It returns rowNone, having written nothing, for a longer row too.",
		}
	}
	if kind == "F16RN" || kind == "BF16RN" {
		return []string{
			name + " is the " + strings.TrimSuffix(kind, "RN") + " row function for a Norm with RoundNormalized: y = round16(round16(x*inv)*w), as the Apply function would.",
			"It returns rowDone when the row is done; rowNone, having written nothing, when d is not a positive multiple of 64 or the row needs the float64 path.",
		}
	}
	if kind == "BF16" {
		return []string{
			name + " normalizes the row of d bfloat16 elements at x into dst: y = round16((x*inv)*w), as the ForwardBF16 function would;",
			"res must be nil. It returns rowDone when the row is done; rowNone, having written nothing, when d is not a positive multiple of 64 or the row needs the float64 path.",
		}
	}
	if kind == "F16" {
		return []string{
			name + " normalizes the row of d binary16 elements at x into dst: y = (x*inv)*w, as the one-row path of the ForwardF16 function would;",
			"res must be nil. It returns rowDone when the row is done; rowNone, having written nothing, when d is not a positive multiple of 64 or the row needs the float64 path.",
		}
	}
	return []string{
		name + " normalizes the row of d floats at x into dst: y = (x*inv)*w, as the one-row path of the Forward function does;",
		"with res not nil, h = x + res is stored to res first and normalized in place of x, as the Forward function does for a residual (its AddWeighted variant).",
		"It returns rowDone when the row is done; rowNone, having written nothing, when d is not a positive multiple of 64 or a row without res needs the float64 path;",
		"rowHeld, having written h to res and nothing else, when a row with res needs it.",
	}
}

// RowFunc returns the name of k's row function of kind (RowKinds): k's own, else its Base's,
// else "" (none).
func (k *Kernel) RowFunc(kind string) string {
	for ; k != nil; k = k.Base {
		if slices.Contains(k.Rows, kind) {
			return k.Prefix + "Row" + kind
		}
	}
	return ""
}

// ForwardFunc returns the name of the function that runs v on k: k's own, else its Base's, else
// "" (the generic kernel).
func (k *Kernel) ForwardFunc(v Variant) string {
	for ; k != nil; k = k.Base {
		for _, h := range k.Variants {
			if h == v.Body() {
				return k.Prefix + v.FuncName()
			}
		}
	}
	return ""
}

// ConvFunc returns the name of the function that runs conversion c on k: k's own, else its
// Base's, else "" (the generic loop).
func (k *Kernel) ConvFunc(c Conversion) string {
	for ; k != nil; k = k.Base {
		for _, h := range k.Conversions {
			if h == c {
				return k.Prefix + c.Name
			}
		}
	}
	return ""
}

// BackwardFunc returns the name of the function that runs the backward variant b on k: k's own,
// else its Base's, else "" (the generic kernel).
func (k *Kernel) BackwardFunc(b BackwardVariant) string {
	for ; k != nil; k = k.Base {
		for _, h := range k.Backward {
			if h == b.Body() {
				return k.Prefix + b.FuncName()
			}
		}
	}
	return ""
}

// GoStubs returns the declarations of the kernel functions of ks and of callKernel, the one entry
// point the Go side calls: an assembly stub that jumps to the function job.fn selects (see
// Table), so that a call costs no switch and the job stays on the caller's stack (//go:noescape).
func GoStubs(header, constraint string, ks []Kernel) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n//go:build %s\n\npackage rmsnorm\n\nimport \"unsafe\"\n", header, constraint)
	b.WriteString("\n// callKernel runs rows [from, to) of j with the kernel function j.fn selects: kernel\n")
	b.WriteString("// fn/numEntries (a kernelID) for variant fn%numEntries. It returns the index of the first row\n")
	b.WriteString("// that needs the float64 path, or to.\n//\n//go:noescape\nfunc callKernel" + Signature + "\n")
	for _, k := range ks {
		for _, bv := range k.Backward {
			name := k.Prefix + bv.FuncName()
			b.WriteString("\n")
			for _, line := range BackwardDoc(name, bv) {
				fmt.Fprintf(&b, "// %s\n", line)
			}
			fmt.Fprintf(&b, "//\n//go:noescape\nfunc %s%s\n", name, Signature)
		}
	}
	for _, k := range ks {
		for _, v := range k.Variants {
			name := k.Prefix + v.FuncName()
			b.WriteString("\n")
			for _, line := range v.Doc(name) {
				fmt.Fprintf(&b, "// %s\n", line)
			}
			fmt.Fprintf(&b, "//\n//go:noescape\nfunc %s%s\n", name, Signature)
		}
		for _, c := range k.Conversions {
			fmt.Fprintf(&b, "\n// %s%s converts n elements: %s.\n//\n//go:noescape\nfunc %s%s%s\n",
				k.Prefix, c.Name, c.Doc(), k.Prefix, c.Name, ConvSignature)
		}
	}
	for _, k := range ks {
		for _, kind := range k.Rows {
			name := k.Prefix + "Row" + kind
			b.WriteString("\n")
			for _, line := range RowDoc(name, kind) {
				fmt.Fprintf(&b, "// %s\n", line)
			}
			fmt.Fprintf(&b, "//\n//go:noescape\nfunc %s%s\n", name, RowSignature)
		}
	}
	if RowTable(ks, "") == nil {
		for _, kind := range RowKinds {
			fmt.Fprintf(&b, "\n// callRow%s returns rowNone: no kernel of this architecture has a row function.\n", kind)
			fmt.Fprintf(&b, "func callRow%s%s { return rowNone }\n", kind, CallRowSignature)
		}
	} else {
		for _, kind := range RowKinds {
			b.WriteString("\n" + callRowDoc[kind])
			fmt.Fprintf(&b, "//\n//go:noescape\nfunc callRow%s%s\n", kind, CallRowSignature)
		}
		b.WriteString("\n// noRow is the row function of the kernels without one: it returns rowNone.\n")
		b.WriteString("//\n//go:noescape\nfunc noRow" + RowSignature + "\n")
	}
	b.WriteString("\n// convertAsm runs conversion op on n elements with kernel k's vector loop and reports whether\n")
	b.WriteString("// k has one.\nfunc convertAsm(k kernelID, op convOp, dst, src unsafe.Pointer, n int) bool {\n")
	b.WriteString("\tswitch uint(k)*numConvOps + uint(op) {\n")
	for _, k := range ks {
		for _, c := range Conversions {
			if fn := k.ConvFunc(c); fn != "" {
				fmt.Fprintf(&b, "\tcase uint(%s)*numConvOps + uint(conv%s):\n\t\t%s(dst, src, n)\n\t\treturn true\n", k.ID, c.Name, fn)
			}
		}
	}
	b.WriteString("\t}\n\treturn false\n}\n")
	return b.String()
}

// Doc describes the conversion.
func (c Conversion) Doc() string {
	if c.Widen {
		return c.Format.String() + " bits at src widened exactly to float32 at dst"
	}
	return "float32 at src rounded to " + c.Format.String() + " bits at dst (to nearest, ties to even)"
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

// Table returns, for each job.fn from 0 up, the function callKernel jumps to: ks's functions (or
// their Base's) in their kernels' places, runGeneric elsewhere.
func Table(ks []Kernel) []string {
	var t []string
	for _, id := range KernelIDs {
		var k *Kernel // nil where the architecture has no kernel id: every entry runGeneric
		for i := range ks {
			if ks[i].ID == id {
				k = &ks[i]
			}
		}
		for _, v := range Forward {
			fn := k.ForwardFunc(v)
			if fn == "" {
				fn = "runGeneric"
			}
			t = append(t, fn)
		}
		for _, bv := range Backward {
			fn := k.BackwardFunc(bv)
			if fn == "" {
				fn = "runGenericBackward"
			}
			t = append(t, fn)
		}
	}
	return t
}
