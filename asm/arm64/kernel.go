package main

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/gosimd/rmsnorm/asm/internal/spec"
)

// Registers. General purpose: R0 dst row, R1 the rows scaled (x, or h in res with a residual), R2 w
// (nil: no weight), R3 the rows added (x with a residual, else unused), R4 inv, R5 d, R6 to, R7
// stride of x and res in bytes (dst's is on the stack, offDstStride), R8 flags (plus flagRD and flagRS), R9 rows done (the row at R0, R1, R3), R19
// rows to do one at a time after a failed group, R20 rows to scale, R21 pfSum, R22 pfScale;
// R10-R17 and R23-R26 are scratch (R18 is the platform register, R27-R30 belong to the Go
// toolchain, and R26 holds a closure's context only on entry); in the scale pass of a Layer
// function R24 is the bias pointer and R25 its step (see scaleRow).
// Vector: V0-V15 the 64 partial sums, V16-V23 scratch, V24-V27 the constants of bfloat16 rounding
// (bfloat16 rows or output), V28 c, what the ends of rows add to the weight (1 or -0:
// spec.Variant.Body), V29 inv (all lanes), V30 the four inv of a group, V31 (Layer functions,
// which have no groups) m in all lanes, from the mean pass to the end of the scale pass.
const (
	rDst, rX, rW, rRes, rInv, rD, rTo, rStride, rFlags, rDone = "R0", "R1", "R2", "R3", "R4", "R5", "R6", "R7", "R8", "R9"
	rSkip, rPend, rPfSum, rPfScale                            = "R19", "R20", "R21", "R22"
)

const (
	block = 64 // elements of a row that fill the 64 partial sums once
	group = 4  // rows per group on the short-row path

	// Kernel-internal bits of rFlags, above every spec.Flag bit (the Go side's job.flags), which
	// TestInternalFlags keeps apart.
	flagRD = 1 << 30 // d is a power of two: ss/d is ss*rd
	flagRS = 1 << 31 // the job has a residual (res not nil)
)

// Stack frame: the locals start at 8(RSP) (0(RSP) holds the return address).
const (
	offQ         = 8                      // 4 x 16 bytes: the partials of a group's rows
	offInvs      = offQ + 64              // 4 float32: inv of the rows being scaled
	offFd        = offInvs + 16           // float32(d)
	offRd        = offFd + 4              // 1/d when d is a power of two
	offDstStride = offRd + 4              // bytes from one dst row's start to the next's (job.dstStride)
	offSlotX     = offDstStride + 8       // 64 elements: the end of a row, zero-padded to a block
	offSlotR     = offSlotX + 4*block     // the same for res (residual jobs)
	frameLen     = offSlotR + 4*block - 8 // bytes of locals
)

var frame = fmt.Sprintf("$%d-%d", frameLen, spec.ArgFrameLen)

// emitter collects the text of one function. Rows of x and res are read (and h stored to res)
// in the variant's input format, v.Format.In(), eb bytes an element; dst is written in its
// output format, v.Format.Out(), ob bytes an element. The two differ for float32 rows normalized
// into 16-bit ones (spec.ToBF16, spec.ToF16), whose sum pass is the float32 one.
type emitter struct {
	b      strings.Builder
	v      spec.Variant
	eb, ob int // bytes per element of a row of x and res (input), of dst (output)
	labels int

	// The sum pass being emitted (sumPass): the prefix of its labels, whether it adds the
	// residual (h = x + res, stored to res) and what it sums.
	lp   string
	res  bool
	kind passKind

	// bp starts the labels of the backward pieces a Layer function emits twice (its RMSNorm
	// body and its centered one); "" in the RMSNorm functions.
	bp string
	// center: the centered body of a Layer backward function is being emitted (gradBody's
	// element step; vA holds a as a constant).
	center bool
}

// bl returns the label name, with the prefix of the backward body being emitted.
func (e *emitter) bl(name string) string { return e.bp + name }

// passKind is what a sum pass adds to the 64 partials.
type passKind int

const (
	squares  passKind = iota // x*x: ss of RMSNorm, and of a Layer job without flagCenter
	plain                    // x: s, the first pass of a row with flagCenter
	centered                 // (x-m)*(x-m), m in all lanes of V31: ss of a row with flagCenter
)

// l returns the name of label name in the sum pass being emitted.
func (e *emitter) l(name string) string { return e.lp + name }

// sumPass emits the sum pass of kind over the row at R10 (with res, the residual's at R11) into
// V0-V15, its labels prefixed by lp.
func (e *emitter) sumPass(lp string, res bool, kind passKind) {
	e.lp, e.res, e.kind = lp, res, kind
	e.sumRow()
	e.lp, e.res, e.kind = "", false, squares
}

// in is the format of x and res; out that of dst.
func (e *emitter) in() spec.Format  { return e.v.Format.In() }
func (e *emitter) out() spec.Format { return e.v.Format.Out() }

// in16 reports whether x and res are stored in 16 bits.
func (e *emitter) in16() bool { return e.in() != spec.F32 }

// list names n consecutive registers from v in the arrangement elements of x and res load into
// (four float32, or four 16-bit lanes), for VLD1 and VST1.
func (e *emitter) list(v vreg, n int) string { return listOf(e.in(), v, n) }

// outList is list for dst's elements.
func (e *emitter) outList(v vreg, n int) string { return listOf(e.out(), v, n) }

// listOf names n consecutive registers from v in the arrangement of elements of format f.
func listOf(f spec.Format, v vreg, n int) string {
	arr := "S4"
	if f != spec.F32 {
		arr = "H4"
	}
	var r []string
	for i := 0; i < n; i++ {
		r = append(r, fmt.Sprintf("V%d.%s", int(v)+i, arr))
	}
	return "[" + strings.Join(r, ", ") + "]"
}

// widen turns the 16-bit lanes of V(v).4H, loaded from x or res, into float32 in V(v).4S.
func (e *emitter) widen(v vreg) {
	switch e.in() {
	case spec.BF16:
		e.word(shll16(v, v))
	case spec.F16:
		e.word(fcvtl(v, v))
	}
}

// narrow puts the rounding of the float32 lanes of V(v) to format f into V(d) (.4H for a 16-bit
// f); tmp are three scratch registers (bfloat16). exact says v already holds values of f. f is
// the input format for h stored to res, the output format for dst.
func (e *emitter) narrow(f spec.Format, d, v vreg, tmp [3]vreg, exact bool) {
	switch {
	case f == spec.F32:
		if d != v {
			e.op("VMOV V%d.B16, V%d.B16", v, d)
		}
	case f == spec.F16:
		e.word(fcvtn(d, v))
	case exact:
		e.word(shrn16(d, v))
	default:
		e.bf16Round(v, tmp)
		e.word(shrn16(d, tmp[2]))
	}
}

// round replaces the float32 lanes of V(v) by their rounding to the 16-bit output format (flagRN
// rounds x*inv to the format y is stored in); tmp are three scratch registers.
func (e *emitter) round(v vreg, tmp [3]vreg) {
	switch e.out() {
	case spec.F16:
		e.word(fcvtn(v, v))
		e.word(fcvtl(v, v))
	case spec.BF16:
		e.bf16Round(v, tmp)
		e.op("VAND V26.B16, V%d.B16, V%d.B16", tmp[2], v)
	}
}

// bf16Round leaves in tmp[2] the float32 bits of V(v) rounded to nearest even at bit 16 (the top
// half is the bfloat16), and the quiet NaN 0x7fc00000 where V(v) is NaN: add 0x7fff plus the lowest
// kept bit as integers, which carries into the exponent where it must.
func (e *emitter) bf16Round(v vreg, tmp [3]vreg) {
	t, m, o := tmp[0], tmp[1], tmp[2]
	e.op("VUSHR $16, V%d.S4, V%d.S4", v, t)
	e.op("VAND V24.B16, V%d.B16, V%d.B16", t, t)
	e.op("VADD V25.S4, V%d.S4, V%d.S4", t, t)
	e.op("VADD V%d.S4, V%d.S4, V%d.S4", v, t, t)
	e.word(fcmeq4s(m, v, v)) // all ones where v is not NaN
	e.op("VMOV V27.B16, V%d.B16", o)
	e.op("VBIT V%d.B16, V%d.B16, V%d.B16", m, t, o) // o = m ? t : NaN
}

func (e *emitter) op(format string, args ...any) { fmt.Fprintf(&e.b, "\t"+format+"\n", args...) }
func (e *emitter) label(l string)                { fmt.Fprintf(&e.b, "%s:\n", l) }
func (e *emitter) comment(c string)              { fmt.Fprintf(&e.b, "\n\t// %s\n", c) }

// roundIfRN rounds the vectors vs to dst's format in place when the job has flagRN
// (RoundNormalized), for the variants that take it (spec.Variant.Rounds): one branch for the
// vectors, always going the same way, instead of a second copy of the function.
func (e *emitter) roundIfRN(tmp [3]vreg, vs ...vreg) {
	if !e.v.Rounds() {
		return
	}
	skip := e.fresh("notrn")
	e.op("TST $%d, %s", spec.FlagRN, rFlags)
	e.op("BEQ %s", skip)
	for _, v := range vs {
		e.round(v, tmp)
	}
	e.label(skip)
}

// oneLoop reports whether a pass over elements of eb bytes has one loop for rows with and without
// flagPF, which tests the flag per iteration, rather than a loop for each: for 16-bit elements,
// whose conversions hide the test, as on amd64 (asm/amd64 oneLoop has the measurement). The sum
// pass asks about the input (eb), the scale pass about the output (ob), whose narrowing it does.
func oneLoop(eb int) bool { return eb == 2 }

// fresh returns a new label name starting with p.
func (e *emitter) fresh(p string) string {
	e.labels++
	return fmt.Sprintf("%s%d", p, e.labels)
}

// word emits an instruction the Go assembler lacks, with its text as the comment.
func (e *emitter) word(enc uint32, text string) { e.op("WORD $0x%08x // %s", enc, text) }

func kernel(name string, v spec.Variant) string {
	e := &emitter{v: v, eb: v.Format.Bytes(), ob: v.Format.OutBytes()}
	fmt.Fprintf(&e.b, "\n// func %s%s\n", name, spec.Signature)
	fmt.Fprintf(&e.b, "TEXT ·%s(SB), %s\n", name, frame)
	e.prologue()
	e.label("row")
	e.pickRows()
	e.sumRows()
	e.sumAddRow()
	if v.Layer {
		e.centerRow()
	}
	e.invOne()
	if !v.Layer {
		e.invGroup()
	}
	e.scaleRows()
	e.label("ret")
	e.op("MOVD %s, ret+24(FP)", rDone)
	e.op("RET")
	return e.b.String()
}

func (e *emitter) prologue() {
	j := spec.Job
	e.op("MOVD j+0(FP), R16")
	e.op("MOVD %s(R16), %s", j.Dst, rDst)
	e.op("MOVD %s(R16), %s", j.X, rX)
	e.op("MOVD %s(R16), %s", j.W, rW)
	e.op("MOVD %s(R16), %s", j.Res, rRes)
	e.op("MOVD %s(R16), %s", j.Inv, rInv)
	e.op("MOVD %s(R16), %s", j.D, rD)
	e.op("MOVD %s(R16), %s", j.Stride, rStride)
	e.op("LSL $%d, %s, %s", shift(e.eb), rStride, rStride)
	e.op("MOVD %s(R16), R10", j.DstStride)
	e.op("LSL $%d, R10, R10", shift(e.ob))
	e.op("MOVD R10, %d(RSP)", offDstStride)
	e.op("MOVWU %s(R16), %s", j.Flags, rFlags)
	e.comment("With a residual the scale pass reads h from res: res and x trade registers.")
	e.op("CBZ %s, rowsset", rRes)
	e.op("ORR $%d, %s, %s", flagRS, rFlags, rFlags)
	e.op("MOVD %s, R10", rX)
	e.op("MOVD %s, %s", rRes, rX)
	e.op("MOVD R10, %s", rRes)
	e.label("rowsset")
	e.comment("c, added to the weight: 1 with flagOffset, else -0 (spec.Variant.Body).")
	e.op("MOVW $0x80000000, R10")
	e.op("TBZ $%d, %s, weightadd", bits.TrailingZeros(spec.FlagOffset), rFlags)
	e.op("MOVW $0x3f800000, R10")
	e.label("weightadd")
	e.op("VDUP R10, V28.S4")
	if e.out() == spec.BF16 {
		e.comment("Constants of bfloat16 rounding: 1, 0x7fff, 0xffff0000, the quiet NaN.")
		for i, c := range []uint32{1, 0x7fff, 0xffff0000, 0x7fc00000} {
			e.op("MOVW $0x%08x, R10", c)
			e.op("VDUP R10, V%d.S4", 24+i)
		}
	}
	e.divisor(offFd, offRd)
	e.comment("Rows ahead for prefetching: the next one for long rows, eight for short ones.")
	e.op("MOVD %s, %s", rStride, rPfScale)
	e.op("CMP $%d, %s", spec.GroupMax, rD)
	e.op("BGT longrows")
	e.op("LSL $3, %s, %s", rPfScale, rPfScale)
	e.label("longrows")
	e.op("LSL $1, %s, %s", rPfScale, rPfSum) // the sum pass runs a row ahead of the scale pass
	e.comment("Start at row from.")
	e.op("MOVD from+8(FP), %s", rDone)
	e.op("MOVD to+16(FP), %s", rTo)
	e.op("MOVD $0, %s", rSkip)
	e.op("MUL %s, %s, R10", rDone, rStride)
	e.op("ADD R10, %s, %s", rX, rX)
	e.op("ADD R10, %s, %s", rRes, rRes) // without a residual, never read
	e.op("MOVD %d(RSP), R10", offDstStride)
	e.op("MUL %s, R10, R10", rDone)
	e.op("ADD R10, %s, %s", rDst, rDst)
}

// shift is log2 of an element size: 2 for float32, 1 for 16-bit elements.
func shift(bytes int) int { return bits.TrailingZeros(uint(bytes)) }

// pickRows sets rPend to the rows the sum pass does: four (a group) or one. Layer functions do
// one row at a time and pick the sum pass: centerRow's with flagCenter, else RMSNorm's.
func (e *emitter) pickRows() {
	e.op("CMP %s, %s", rTo, rDone)
	e.op("BGE ret")
	e.op("MOVD $1, %s", rPend)
	if e.v.Layer {
		e.op("TBZ $%d, %s, notcentered", bits.TrailingZeros(spec.FlagCenter), rFlags)
		e.op("TBNZ $%d, %s, meanaddsum", bits.TrailingZeros(flagRS), rFlags)
		e.op("B meansum")
		e.label("notcentered")
		e.op("TBNZ $%d, %s, addsum", bits.TrailingZeros(flagRS), rFlags)
		return
	}
	e.op("TBNZ $%d, %s, addsum", bits.TrailingZeros(flagRS), rFlags)
	e.op("CBZ %s, trygroup", rSkip)
	e.op("SUB $1, %s, %s", rSkip, rSkip)
	e.op("B sum")
	e.label("trygroup")
	e.op("CMP $%d, %s", spec.GroupMax, rD)
	e.op("BGT sum")
	e.op("SUB %s, %s, R10", rDone, rTo)
	e.op("CMP $%d, R10", group)
	e.op("BLT sum")
	e.op("MOVD $%d, %s", group, rPend)
}

// sumRows sums the squares of the picked rows: a group's rows leave their four partly reduced
// partials each in the stack slots, one row goes on to invOne with them in V0.
func (e *emitter) sumRows() {
	e.label("sum")
	e.op("MOVD %s, R10", rX)
	if e.v.Layer {
		e.sumPass("", false, squares)
		e.tree4()
		e.toInvOne()
		return
	}
	e.op("MOVD $0, R23") // byte offset of the row's slot
	e.label("sumrow")
	e.sumPass("", false, squares)
	e.tree4()
	e.op("CMP $1, %s", rPend)
	e.op("BEQ invone")
	e.op("ADD $%d, RSP, R12", offQ)
	e.op("ADD R23, R12, R12")
	e.op("VST1 [V0.S4], (R12)")
	e.op("ADD %s, R14, R10", rStride) // R14: the row's start, kept by sumRow
	e.op("ADD $16, R23, R23")
	e.op("CMP $%d, R23", 16*group)
	e.op("BLT sumrow")
	e.op("B invgroup")
}

// sumAddRow is the sum pass of a row with a residual: h = x + res, stored to res, and the sum of
// the squares of h, which it leaves in V0 for invOne.
func (e *emitter) sumAddRow() {
	e.label("addsum")
	e.op("MOVD %s, R10", rRes) // the job's x
	e.op("MOVD %s, R11", rX)   // the job's res
	e.sumPass("add", true, squares)
	e.tree4()
	e.toInvOne()
}

// toInvOne ends RMSNorm's sum pass of one row. In a Layer function, whose scale pass subtracts
// m in V31 (the row's mean with flagCenter), it sets m = +0 first: x - (+0) is x for every x,
// -0 included.
func (e *emitter) toInvOne() {
	if e.v.Layer {
		e.op("VEOR V31.B16, V31.B16, V31.B16")
	}
	e.op("B invone")
}

// centerRow (Layer) is the sum pass of a row with flagCenter: s, the sum of the row's elements
// (with a residual, of h = x + res, stored to res as by sumAddRow), the float64 path for an s
// that is not finite (h already stored), m = s/d into all lanes of V31, and the sum of the
// squares of x - m, left in V0 for invOne.
func (e *emitter) centerRow() {
	e.label("meansum")
	e.op("MOVD %s, R10", rX)
	e.sumPass("mean", false, plain)
	e.op("B mean")
	e.label("meanaddsum")
	e.op("MOVD %s, R10", rRes) // the job's x
	e.op("MOVD %s, R11", rX)   // the job's res
	e.sumPass("meanadd", true, plain)
	e.label("mean")
	e.tree4()
	e.comment("h = 2 and h = 1: s in F0; a row whose s is ±Inf or NaN (s - s is not 0) takes the float64 path.")
	e.tree21()
	e.op("FSUBS F0, F0, F16")
	e.op("FCMPS $(0.0), F16")
	e.op("BNE ret")
	e.comment("m = s/d in all lanes of V31.")
	e.divD(0, 1, offFd, offRd, "m")
	e.op("VDUP V1.S[0], V31.S4")
	e.op("MOVD %s, R10", rX) // h with a residual (see prologue)
	e.sumPass("dev", false, centered)
	e.tree4()
	e.op("B invone")
}

// sumRow accumulates the row at R10 into V0-V15; on the sum pass of residual jobs it also stores
// h = x + res at R11. It leaves the row's start in R14.
func (e *emitter) sumRow() {
	res := e.res
	e.comment([...]string{
		squares:  "Sum of squares: element i goes to partial i%64, lane i%4 of V(i%64/4).",
		plain:    "Sum of the elements: element i goes to partial i%64, lane i%4 of V(i%64/4).",
		centered: "Sum of the squares of x - m: element i goes to partial i%64, lane i%4 of V(i%64/4).",
	}[e.kind])
	e.op("MOVD R10, R14")
	for k := 0; k < 16; k++ {
		e.op("VEOR V%d.B16, V%d.B16, V%d.B16", k, k, k)
	}
	e.op("MOVD %s, R12", rD)
	e.op("MOVD $0, R24") // where h of a copied row end goes back to (0: nowhere)
	if oneLoop(e.eb) {
		e.op("ADD %s, R10, R13", rPfSum) // the row prefetched with flagPF
		e.label(e.l("sum64"))
		e.op("CMP $%d, R12", block)
		e.op("BLT %s", e.l("sumtail"))
		e.op("TST $%d, %s", spec.FlagPF, rFlags)
		e.op("BNE %s", e.l("sumpf"))
		e.label(e.l("sumblock"))
		e.block(res)
		e.op("B %s", e.l("sum64"))
		e.label(e.l("sumpf")) // out of the loop's way: the flag is usually clear
		for off := 0; off < e.eb*block; off += 64 {
			e.op("PRFM %d(R13), PLDL1KEEP", off)
		}
		e.op("ADD $%d, R13, R13", e.eb*block)
		e.op("B %s", e.l("sumblock"))
	} else {
		e.op("TST $%d, %s", spec.FlagPF, rFlags)
		e.op("ADD %s, R10, R13", rPfSum) // the row prefetched
		e.op("BNE %s", e.l("sumpf"))
		e.label(e.l("sum64"))
		e.op("CMP $%d, R12", block)
		e.op("BLT %s", e.l("sumtail"))
		e.block(res)
		e.op("B %s", e.l("sum64"))
		e.label(e.l("sumpf"))
		e.op("CMP $%d, R12", block)
		e.op("BLT %s", e.l("sumtail"))
		for off := 0; off < e.eb*block; off += 64 {
			e.op("PRFM %d(R13), PLDL1KEEP", off)
		}
		e.op("ADD $%d, R13, R13", e.eb*block)
		e.block(res)
		e.op("B %s", e.l("sumpf"))
	}

	e.label(e.l("sumtail"))
	e.comment("Fewer than 64 elements: copied to a zero-padded block on the stack, summed as a whole block (zeros add +0).")
	e.op("CBZ R12, %s", e.l("summed"))
	e.op("ADD $%d, RSP, R13", offSlotX)
	e.zeroBlock("R13")
	e.copyElems("R10", "R13", "R12", e.eb)
	if e.kind == centered {
		// A padding lane's x - m would be -m: the block subtracts m only in the lanes of the
		// row's elements (0 - 0 is +0 in the others, whose squares add +0).
		e.comment("m in the lanes of the row's elements, +0 in the padding: the block subtracts these.")
		e.op("ADD $%d, RSP, R11", offSlotR)
		e.zeroBytes("R11", 4*block)
		e.fillM("R11", "R12")
		e.op("ADD $%d, RSP, R10", offSlotX)
		e.blockOf(false, true)
		e.label(e.l("summed"))
		return
	}
	if res {
		e.op("MOVD R11, R24")
		e.op("ADD $%d, RSP, R13", offSlotR)
		e.zeroBlock("R13")
		e.copyElems("R11", "R13", "R12", e.eb)
		e.op("MOVD R12, R25")
		e.op("ADD $%d, RSP, R11", offSlotR)
	}
	e.op("ADD $%d, RSP, R10", offSlotX)
	e.op("MOVD $%d, R12", block)
	e.op("B %s", e.l("sum64")) // one block; the count then reaches 0
	e.label(e.l("summed"))
	if res {
		e.op("CBZ R24, %s", e.l("hback"))
		e.op("ADD $%d, RSP, R13", offSlotR)
		e.copyElems("R13", "R24", "R25", e.eb)
		e.label(e.l("hback"))
	}
}

// block adds the squares of 64 elements at R10 (post-incremented) to V0-V15 and counts them off
// R12; with res they are h = x + res (rounded to the input format: not at all for float32
// rows), stored to res at R11 first. In a sum pass of another kind (e.kind) it adds the elements
// themselves (plain) or the squares of x - m (centered: m in V31).
func (e *emitter) block(res bool) { e.blockOf(res, false) }

// blockOf is block; with mSlot (centered, the tail of a row) it subtracts the 64 floats at R11
// (post-incremented) in place of V31.
func (e *emitter) blockOf(res, mSlot bool) {
	vb := 4 * e.eb // bytes of one vector's lanes
	for j := 0; j < 4; j++ {
		e.op("VLD1.P %d(R10), %s", 4*vb, e.list(16, 4))
		for i := vreg(0); i < 4; i++ {
			e.widen(16 + i)
		}
		if res {
			e.op("VLD1 (R11), %s", e.list(20, 4))
			for i := vreg(0); i < 4; i++ {
				e.widen(20 + i)
				e.word(fadd4s(16+i, 16+i, 20+i))
				if e.in16() {
					// h rounded to the format: its 16-bit lanes to V(20+i) for res, widened in V(16+i).
					e.narrow(e.in(), 20+i, 16+i, [3]vreg{29, 30, 31}, false) // V29-V31 are free while summing
					e.op("VMOV V%d.B16, V%d.B16", 20+i, 16+i)
					e.widen(16 + i)
				}
			}
			h := vreg(16) // float32: h itself; 16-bit: its rounding, in V20-V23
			if e.in16() {
				h = 20
			}
			e.op("VST1.P %s, %d(R11)", e.list(h, 4), 4*vb)
		}
		if e.kind == centered {
			m := [4]vreg{31, 31, 31, 31}
			if mSlot {
				e.op("VLD1.P 64(R11), [V20.S4, V21.S4, V22.S4, V23.S4]")
				m = [4]vreg{20, 21, 22, 23}
			}
			for i := vreg(0); i < 4; i++ {
				e.word(fsub4s(16+i, 16+i, m[i]))
			}
		}
		if e.kind != plain {
			for i := vreg(0); i < 4; i++ {
				e.word(fmul4s(16+i, 16+i, 16+i))
			}
		}
		for i := vreg(0); i < 4; i++ {
			acc := vreg(4*j) + i
			e.word(fadd4s(acc, acc, 16+i))
		}
	}
	e.op("SUB $%d, R12, R12", block)
}

// zeroBlock clears the 64-element slot at p.
func (e *emitter) zeroBlock(p string) { e.zeroBytes(p, e.eb*block) }

// zeroBytes clears n bytes at p, a multiple of 64.
func (e *emitter) zeroBytes(p string, n int) {
	e.op("VEOR V16.B16, V16.B16, V16.B16")
	e.op("VEOR V17.B16, V17.B16, V17.B16")
	e.op("VEOR V18.B16, V18.B16, V18.B16")
	e.op("VEOR V19.B16, V19.B16, V19.B16")
	e.op("MOVD %s, R17", p)
	for off := 0; off < n; off += 64 {
		e.op("VST1.P [V16.S4, V17.S4, V18.S4, V19.S4], 64(R17)")
	}
}

// fillM stores m (lane 0 of V31) as the first n floats at p, four at a time and then one at a
// time; it moves neither p nor n (it uses R16 and R17).
func (e *emitter) fillM(p, n string) { e.fill(p, n, 31) }

// fill is fillM for lane 0 of v.
func (e *emitter) fill(p, n string, v vreg) {
	vec, one, done := e.fresh("fillvec"), e.fresh("fillone"), e.fresh("filled")
	e.op("MOVD %s, R17", p)
	e.op("MOVD %s, R16", n)
	e.label(vec)
	e.op("CMP $4, R16")
	e.op("BLT %s", one)
	e.op("VST1.P [V%d.S4], 16(R17)", v)
	e.op("SUB $4, R16, R16")
	e.op("B %s", vec)
	e.label(one)
	e.op("CBZ R16, %s", done)
	e.op("FMOVS F%d, (R17)", v)
	e.op("ADD $4, R17, R17")
	e.op("SUB $1, R16, R16")
	e.op("B %s", one)
	e.label(done)
}

// copyElems copies n elements of eb bytes from src to dst, 16 bytes at a time and then one
// element at a time; it moves neither pointer (it copies them to R15 and R17; n is kept).
func (e *emitter) copyElems(src, dst, n string, eb int) {
	vec, one, done := e.fresh("copyvec"), e.fresh("copyone"), e.fresh("copied")
	per := 16 / eb
	e.op("MOVD %s, R15", src)
	e.op("MOVD %s, R17", dst)
	e.op("MOVD %s, R16", n)
	e.label(vec)
	e.op("CMP $%d, R16", per)
	e.op("BLT %s", one)
	e.op("VLD1.P 16(R15), [V20.B16]")
	e.op("VST1.P [V20.B16], 16(R17)")
	e.op("SUB $%d, R16, R16", per)
	e.op("B %s", vec)
	e.label(one)
	e.op("CBZ R16, %s", done)
	if eb == 4 {
		e.op("MOVWU.P 4(R15), R26")
		e.op("MOVW.P R26, 4(R17)")
	} else {
		e.op("MOVHU.P 2(R15), R26")
		e.op("MOVH.P R26, 2(R17)")
	}
	e.op("SUB $1, R16, R16")
	e.op("B %s", one)
	e.label(done)
}

// invOne finishes one row from the four partials in V0: t = ss/d + eps, the float64 path for t
// outside [2^-100, MaxFloat32] or NaN, inv = 1/sqrt(t) into F29, the stack slot and, when asked,
// the job's inv[done].
func (e *emitter) invOne() {
	e.label("invone")
	e.comment("h = 2 and h = 1: ss in F0.")
	e.tree21()
	e.comment("t = ss/d + eps; rows with t outside [2^-100, MaxFloat32] take the float64 path.")
	e.divD(0, 1, offFd, offRd, "r")
	e.tInRange()
	e.op("FSQRTS F1, F1")
	e.op("FMOVS $1.0, F16")
	e.op("FDIVS F1, F16, F29")
	e.op("FMOVS F29, %d(RSP)", offInvs)
	e.comment("Report 1/rms if asked.")
	if !e.v.Layer {
		e.op("CBZ %s, scale", rInv)
		e.op("FMOVS F29, (%s)(%s<<2)", rInv, rDone)
		e.op("B scale")
		return
	}
	e.op("CBZ %s, noinv", rInv)
	e.op("FMOVS F29, (%s)(%s<<2)", rInv, rDone)
	e.label("noinv")
	e.comment("Report the mean if asked: m, +0 without flagCenter.")
	e.op("MOVD j+0(FP), R16")
	e.op("MOVD %s(R16), R16", spec.Job.Mean)
	e.op("CBZ R16, scale")
	e.op("FMOVS F31, (R16)(%s<<2)", rDone)
	e.op("B scale")
}

// invGroup finishes four rows at once: h = 2 and 1 with ZIP and pairwise adds, t and the range
// test for all four (a group with a row outside it is redone a row at a time, which stops at that
// row), and the four inv, which go to the stack slot and, when asked, to the job's inv.
func (e *emitter) invGroup() {
	e.label("invgroup")
	e.op("ADD $%d, RSP, R12", offQ)
	e.op("VLD1 (R12), [V16.S4, V17.S4, V18.S4, V19.S4]")
	e.comment("h = 2 for rows A B and C D: [a0 a1 b0 b1] + [a2 a3 b2 b3]; h = 1: pairwise adds give [A B C D].")
	e.op("VZIP1 V17.D2, V16.D2, V20.D2")
	e.op("VZIP2 V17.D2, V16.D2, V21.D2")
	e.word(fadd4s(20, 20, 21))
	e.op("VZIP1 V19.D2, V18.D2, V22.D2")
	e.op("VZIP2 V19.D2, V18.D2, V23.D2")
	e.word(fadd4s(22, 22, 23))
	e.word(faddp4s(16, 20, 22))

	e.comment("t = ss/d + eps for the four rows; any t outside [2^-100, MaxFloat32] leaves the group path.")
	e.op("TST $%d, %s", flagRD, rFlags)
	e.op("BEQ gdivide")
	e.op("ADD $%d, RSP, R12", offRd)
	e.op("VLD1R (R12), [V20.S4]")
	e.word(fmul4s(16, 16, 20))
	e.op("B gdivided")
	e.label("gdivide")
	e.op("ADD $%d, RSP, R12", offFd)
	e.op("VLD1R (R12), [V20.S4]")
	e.word(fdiv4s(16, 16, 20))
	e.label("gdivided")
	e.op("MOVD j+0(FP), R16")
	e.op("ADD $%s, R16, R12", spec.Job.Eps)
	e.op("VLD1R (R12), [V21.S4]")
	e.word(fadd4s(16, 16, 21))
	e.op("MOVW $0x%08x, R16", spec.TLowBits)
	e.op("VDUP R16, V22.S4")
	e.word(fcmge4s(23, 16, 22)) // t >= 2^-100, false for NaN
	e.op("MOVW $0x%08x, R16", spec.TMaxBits)
	e.op("VDUP R16, V22.S4")
	e.word(fcmge4s(22, 22, 16)) // MaxFloat32 >= t
	e.op("VAND V22.B16, V23.B16, V23.B16")
	e.op("VMOV V23.D[0], R16")
	e.op("VMOV V23.D[1], R17")
	e.op("AND R17, R16, R16")
	e.op("CMN $1, R16") // all ones plus one is zero
	e.op("BEQ ginrange")
	e.op("MOVD $%d, %s", group, rSkip)
	e.op("B row")
	e.label("ginrange")
	e.word(fsqrt4s(16, 16))
	e.op("FMOVS $1.0, F17")
	e.op("VDUP V17.S[0], V17.S4")
	e.word(fdiv4s(30, 17, 16))
	e.op("ADD $%d, RSP, R12", offInvs)
	e.op("VST1 [V30.S4], (R12)")
	e.comment("Report 1/rms if asked.")
	e.op("CBZ %s, scale", rInv)
	e.op("ADD %s<<2, %s, R16", rDone, rInv)
	e.op("VST1 [V30.S4], (R16)")
}

// scaleRows scales the rPend rows from row done with the inv in the stack slot, and moves on.
func (e *emitter) scaleRows() {
	e.label("scale")
	e.op("MOVD $0, R23")
	e.label("scalerow")
	e.op("ADD $%d, RSP, R12", offInvs)
	e.op("ADD R23<<2, R12, R12")
	e.op("VLD1R (R12), [V29.S4]")
	e.scaleRow(rX) // h with a residual (see prologue)
	e.op("ADD %s, %s, %s", rStride, rX, rX)
	e.op("ADD %s, %s, %s", rStride, rRes, rRes)
	e.op("MOVD %d(RSP), R10", offDstStride)
	e.op("ADD R10, %s, %s", rDst, rDst)
	e.op("ADD $1, %s, %s", rDone, rDone)
	e.op("ADD $1, R23, R23")
	e.op("CMP %s, R23", rPend)
	e.op("BLT scalerow")
	e.op("B row")
}

// scaleRow writes y = (src*inv)*w, (src*inv)*(1+w) with flagOffset, or src*inv when w is nil, for
// one row, inv in V29. With flagPF it prefetches the row rPfScale bytes further on as it goes.
func (e *emitter) scaleRow(src string) {
	e.comment("y = (src*inv)*w, rounded after each multiply.")
	e.op("MOVD %s, R10", src)
	e.op("MOVD %s, R13", rW)
	e.op("MOVD %s, R14", rDst)
	e.op("MOVD %s, R12", rD)
	if e.v.Layer {
		// Every Layer row subtracts m and adds a bias: m = +0 without flagCenter, and -0s in place
		// of a nil bias (y + -0 is y for every y, -0 included), read from negZero over and over.
		e.comment("Layer: y = ((src-m)*inv)*w + bias; bias at R24, advanced by R25 vectors (0: -0s).")
		e.op("MOVD j+0(FP), R16")
		e.op("MOVD %s(R16), R24", spec.Job.Bias)
		e.op("MOVD $1, R25")
		e.op("CBNZ R24, biasset")
		e.op("MOVD $%s(SB), R24", negZero)
		e.op("MOVD $0, R25")
		e.label("biasset")
	}
	if oneLoop(e.ob) {
		e.op("ADD %s, R10, R15", rPfScale) // the row prefetched with flagPF
		// A loop for each weight form, as on amd64, where a test per iteration measured 5%
		// slower (avx512, binary16 rows in L1). A job without a weight has w nil.
		e.op("CBZ %s, loop16noweight", rW)
		e.op("TBNZ $%d, %s, loop16offset", bits.TrailingZeros(spec.FlagOffset), rFlags)
		e.scaleLoop16("", spec.Weighted)
		e.scaleLoop16("offset", spec.Offset)
		e.scaleLoop16("noweight", spec.Unweighted)
	} else {
		// A loop for each memory mode and weight form, chosen once per row.
		loop := func(label string, pf bool, mode spec.Mode) {
			e.label(label)
			e.op("CMP $16, R12")
			e.op("BLT loop4")
			if pf {
				e.op("PRFM (R15), PLDL1KEEP")
				e.op("ADD $64, R15, R15")
			}
			e.scale16(mode)
			e.op("B %s", label)
		}
		forms := func(label string, pf bool) {
			e.op("CBZ %s, %snoweight", rW, label)
			e.op("TBNZ $%d, %s, %soffset", bits.TrailingZeros(spec.FlagOffset), rFlags, label)
			loop(label, pf, spec.Weighted)
			loop(label+"offset", pf, spec.Offset)
			loop(label+"noweight", pf, spec.Unweighted)
		}
		e.op("TST $%d, %s", spec.FlagPF, rFlags)
		e.op("BEQ nopf16")
		e.op("ADD %s, R10, R15", rPfScale)
		forms("pf16", true)
		e.label("nopf16")
		forms("loop16", false)
	}

	e.label("loop4")
	e.op("CMP $4, R12")
	e.op("BLT part")
	e.op("VLD1.P %d(R10), %s", 4*e.eb, e.list(16, 1))
	e.widen(16)
	e.scaleVec(16, 20, "VLD1.P 16(R13), [V20.S4]", "VLD1 (R24), [V21.S4]", "ADD R25<<4, R24, R24")
	e.storeVecs(16, 1, "R14", true)
	e.op("SUB $4, R12, R12")
	e.op("B loop4")

	e.label("part")
	e.comment("The last 1-3 elements, through copies on the stack.")
	e.op("CBZ R12, scaled")
	e.op("ADD $%d, RSP, R11", offSlotX)
	e.copyElems("R10", "R11", "R12", e.eb)
	e.op("ADD $%d, RSP, R11", offSlotX+16)
	nw := e.fresh("nowcopy")
	e.op("CBZ %s, %s", rW, nw)
	e.copyElems("R13", "R11", "R12", 4)
	e.label(nw)
	if e.v.Layer {
		e.op("ADD $%d, RSP, R11", offSlotX+32)
		e.copyElems("R24", "R11", "R12", 4) // -0s from negZero without a bias
	}
	e.op("ADD $%d, RSP, R11", offSlotX)
	e.op("VLD1 (R11), %s", e.list(16, 1))
	e.widen(16)
	e.op("ADD $16, R11, R11")
	e.scaleVec(16, 20, "VLD1 (R11), [V20.S4]", "ADD $16, R11, R13", "VLD1 (R13), [V21.S4]")
	e.storeVecs(16, 1, "R11", false)
	e.copyElems("R11", "R14", "R12", e.ob)
	e.label("scaled")
}

// scaleVec turns x in Vx into (x*inv)*(w + c), loading w into Vw with loadW (c in V28: 1 with
// flagOffset, else -0), or into x*inv when the job has no weight (w nil): for the ends of rows,
// where a branch costs less than a copy per weight form. With flagRN (RoundNormalized), x*inv is
// rounded to dst's format first. A Layer function subtracts m (V31) from x first and adds the
// bias, which the instructions loadB load into V21, last.
func (e *emitter) scaleVec(x, w vreg, loadW string, loadB ...string) {
	if e.v.Layer {
		e.word(fsub4s(x, x, 31))
	}
	e.word(fmul4s(x, x, 29))
	e.roundIfRN([3]vreg{21, 22, 23}, x)
	skip := e.fresh("noweight")
	e.op("CBZ %s, %s", rW, skip)
	e.op("%s", loadW)
	e.word(fadd4s(w, w, 28))
	e.word(fmul4s(x, x, w))
	e.label(skip)
	if e.v.Layer {
		for _, l := range loadB {
			e.op("%s", l)
		}
		e.word(fadd4s(x, x, 21))
	}
}

// storeVecs narrows n vectors from V(v) to dst's format and stores them at base
// (post-incremented when post).
func (e *emitter) storeVecs(v vreg, n int, base string, post bool) {
	for i := vreg(0); int(i) < n; i++ {
		e.narrow(e.out(), v+i, v+i, [3]vreg{20, 21, 22}, false)
	}
	if post {
		e.op("VST1.P %s, %d(%s)", e.outList(v, n), 4*n*e.ob, base)
	} else {
		e.op("VST1 %s, (%s)", e.outList(v, n), base)
	}
}

// scaleLoop16 is the loop of the scale pass into 16-bit rows over 16 elements at a time, labelled
// loop16<suffix>, applying the weight form mode; with flagPF it prefetches from R15 as it goes.
func (e *emitter) scaleLoop16(suffix string, mode spec.Mode) {
	loop, body, pf := "loop16"+suffix, "body16"+suffix, "pf16"+suffix
	e.label(loop)
	e.op("CMP $16, R12")
	e.op("BLT loop4")
	e.op("TST $%d, %s", spec.FlagPF, rFlags)
	e.op("BNE %s", pf)
	e.label(body)
	e.scale16(mode)
	e.op("B %s", loop)
	e.label(pf) // out of the loop's way: the flag is usually clear
	e.op("PRFM (R15), PLDL1KEEP")
	e.op("ADD $64, R15, R15")
	e.op("B %s", body)
}

// scale16 scales 16 elements at R10 into R14, weight at R13, with the weight form mode (a
// function serves every form, spec.Variant.Body, with a loop for each).
func (e *emitter) scale16(mode spec.Mode) {
	e.op("VLD1.P %d(R10), %s", 16*e.eb, e.list(16, 4))
	for i := vreg(0); i < 4; i++ {
		e.widen(16 + i)
		if e.v.Layer {
			e.word(fsub4s(16+i, 16+i, 31))
		}
		e.word(fmul4s(16+i, 16+i, 29))
	}
	if mode != spec.Unweighted { // flagRN comes only with a weight
		e.roundIfRN([3]vreg{20, 21, 22}, 16, 17, 18, 19)
	}
	if mode != spec.Unweighted {
		e.op("VLD1.P 64(R13), [V20.S4, V21.S4, V22.S4, V23.S4]")
		for i := vreg(0); i < 4; i++ {
			if mode == spec.Offset {
				e.word(fadd4s(20+i, 20+i, 28))
			}
			e.word(fmul4s(16+i, 16+i, 20+i))
		}
	}
	if e.v.Layer {
		e.op("VLD1 (R24), [V20.S4, V21.S4, V22.S4, V23.S4]")
		e.op("ADD R25<<6, R24, R24")
		for i := vreg(0); i < 4; i++ {
			e.word(fadd4s(16+i, 16+i, 20+i))
		}
	}
	e.storeVecs(16, 4, "R14", true)
	e.op("SUB $16, R12, R12")
}

// negZero is 64 bytes of float32 -0, the bias of a Layer job without one (see scaleRow).
const negZero = "negzero<>"

// negZeroData returns the assembler directives that lay out negZero.
func negZeroData() string {
	var b strings.Builder
	for off := 0; off < 64; off += 8 {
		fmt.Fprintf(&b, "DATA %s+%d(SB)/8, $0x8000000080000000\n", negZero, off)
	}
	fmt.Fprintf(&b, "GLOBL %s(SB), RODATA|NOPTR, $64\n", negZero)
	return b.String()
}

// divisor stores fd = float32(d) at fd(RSP) and, when d is a power of two, rd = 1/d at rd(RSP)
// with flagRD set in rFlags, so that x/d can be x*rd, the same correctly rounded value.
func (e *emitter) divisor(fd, rd int) {
	e.comment("fd = float32(d); rd = 1/d when d is a power of two, so that ss/d is ss*rd exactly.")
	e.op("SCVTFS %s, F16", rD)
	e.op("FMOVS F16, %d(RSP)", fd)
	e.op("SUB $1, %s, R10", rD)
	e.op("TST R10, %s", rD)
	e.op("BNE notpow2")
	e.op("RBIT %s, R10", rD)
	e.op("CLZ R10, R10")
	e.op("MOVD $127, R11")
	e.op("SUB R10, R11, R11")
	e.op("LSL $23, R11, R11")
	e.op("MOVW R11, %d(RSP)", rd)
	e.op("ORR $%d, %s, %s", flagRD, rFlags, rFlags)
	e.label("notpow2")
}

// divD sets F(dst) = F(src)/d, rounded once: src*rd when d is a power of two, else a division
// by fd (see divisor). l prefixes its labels. It uses F17.
func (e *emitter) divD(src, dst, fd, rd int, l string) {
	e.op("TST $%d, %s", flagRD, rFlags)
	e.op("BEQ %sdivide", l)
	e.op("FMOVS %d(RSP), F17", rd)
	e.op("FMULS F17, F%d, F%d", src, dst)
	e.op("B %sdivided", l)
	e.label(l + "divide")
	e.op("FMOVS %d(RSP), F17", fd)
	e.op("FDIVS F17, F%d, F%d", src, dst)
	e.label(l + "divided")
}

// tInRange adds eps to t in F1 and branches to ret, leaving the row to the float64 path, when t
// is outside [2^-100, MaxFloat32] or NaN. It uses R16, F16 and F17.
func (e *emitter) tInRange() {
	e.op("MOVD j+0(FP), R16")
	e.op("FMOVS %s(R16), F17", spec.Job.Eps)
	e.op("FADDS F17, F1, F1")
	e.op("MOVW $0x%08x, R16", spec.TLowBits)
	e.op("FMOVS R16, F16")
	e.op("FCMPS F16, F1")
	e.op("BLT ret") // t < 2^-100 or unordered
	e.op("MOVW $0x%08x, R16", spec.TMaxBits)
	e.op("FMOVS R16, F16")
	e.op("FCMPS F16, F1")
	e.op("BGT ret")
}

// tree4 runs the halving tree's steps h = 32, 16, 8, 4 on the partials in V0-V15 (V_k holds
// p[4k..4k+3]), leaving four partials in V0.
func (e *emitter) tree4() {
	e.comment("Halving tree: h = 32, 16, 8, 4 on vectors, leaving four partials in V0.")
	for _, h := range []vreg{8, 4, 2, 1} {
		for k := vreg(0); k < h; k++ {
			e.word(fadd4s(k, k, k+h))
		}
	}
}

// tree21 runs the steps h = 2 (EXT and a vector FADD) and h = 1 (a scalar FADDP) on the four
// partials in V0, leaving the sum in F0. It uses V16.
func (e *emitter) tree21() {
	e.op("VEXT $8, V0.B16, V0.B16, V16.B16")
	e.word(fadd4s(0, 0, 16))
	e.word(faddpScalar(0, 0))
}
