package main

import (
	"fmt"
	"strings"

	"github.com/gosimd/rmsnorm/asm/internal/spec"
)

// Registers. General purpose: R0 dst row, R1 x row, R2 w, R3 res row, R4 inv, R5 d, R6 to,
// R7 stride in bytes, R8 flags (plus flagRD), R9 rows done (the row at R0, R1, R3), R19 rows to
// do one at a time after a failed group, R20 rows to scale, R21 pfSum, R22 pfScale; R10-R17 and
// R23-R25 are scratch (R18 is the platform register, R26-R30 belong to the Go toolchain).
// Vector: V0-V15 the 64 partial sums, V16-V23 scratch, V24 eps, V25 float32(d), V26 1/d (lane 0 each), V28 ones
// (1+w), V29 inv (all lanes).
const (
	rDst, rX, rW, rRes, rInv, rD, rTo, rStride, rFlags, rDone = "R0", "R1", "R2", "R3", "R4", "R5", "R6", "R7", "R8", "R9"
	rSkip, rPend, rPfSum, rPfScale                            = "R19", "R20", "R21", "R22"
)

const (
	block  = 64     // elements of a row that fill the 64 partial sums once
	group  = 4      // rows per group on the short-row path
	flagRD = 1 << 8 // d is a power of two: ss/d is ss*rd
)

// Stack frame: the locals start at 8(RSP) (0(RSP) holds the return address).
const (
	offQ     = 8                      // 4 x 16 bytes: the partials of a group's rows
	offInvs  = offQ + 64              // 4 float32: inv of the rows being scaled
	offSlotX = offInvs + 16           // 64 elements: the end of a row, zero-padded to a block
	offSlotR = offSlotX + 4*block     // the same for res (residual variants)
	frameLen = offSlotR + 4*block - 8 // bytes of locals
)

var frame = fmt.Sprintf("$%d-%d", frameLen, spec.ArgFrameLen)

// emitter collects the text of one function.
type emitter struct {
	b      strings.Builder
	v      spec.Variant
	labels int
}

func (e *emitter) op(format string, args ...any) { fmt.Fprintf(&e.b, "\t"+format+"\n", args...) }
func (e *emitter) label(l string)                { fmt.Fprintf(&e.b, "%s:\n", l) }
func (e *emitter) comment(c string)              { fmt.Fprintf(&e.b, "\n\t// %s\n", c) }

// fresh returns a new label name starting with p.
func (e *emitter) fresh(p string) string {
	e.labels++
	return fmt.Sprintf("%s%d", p, e.labels)
}

// word emits an instruction the Go assembler lacks, with its text as the comment.
func (e *emitter) word(enc uint32, text string) { e.op("WORD $0x%08x // %s", enc, text) }

func kernel(name string, v spec.Variant) string {
	e := &emitter{v: v}
	fmt.Fprintf(&e.b, "\n// func %s%s\n", name, spec.Signature)
	fmt.Fprintf(&e.b, "TEXT ·%s(SB), %s\n", name, frame)
	e.prologue()
	e.label("row")
	e.pickRows()
	e.sumRows()
	e.invOne()
	if !v.Residual {
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
	e.op("LSL $2, %s, %s", rStride, rStride)
	e.op("MOVWU %s(R16), %s", j.Flags, rFlags)
	e.op("FMOVS %s(R16), F24", j.Eps)
	if e.v.Mode == spec.Offset {
		e.op("FMOVS $1.0, F28")
		e.op("VDUP V28.S[0], V28.S4")
	}
	e.comment("fd = float32(d); rd = 1/d when d is a power of two, so that ss/d is ss*rd exactly.")
	e.op("SCVTFS %s, F25", rD)
	e.op("SUB $1, %s, R10", rD)
	e.op("TST R10, %s", rD)
	e.op("BNE notpow2")
	e.op("RBIT %s, R10", rD)
	e.op("CLZ R10, R10")
	e.op("MOVD $127, R11")
	e.op("SUB R10, R11, R11")
	e.op("LSL $23, R11, R11")
	e.op("FMOVS R11, F26")
	e.op("ORR $%d, %s, %s", flagRD, rFlags, rFlags)
	e.label("notpow2")
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
	e.op("ADD R10, %s, %s", rDst, rDst)
	e.op("ADD R10, %s, %s", rX, rX)
	if e.v.Residual {
		e.op("ADD R10, %s, %s", rRes, rRes)
	}
}

// pickRows sets rPend to the rows the sum pass does: four (a group) or one.
func (e *emitter) pickRows() {
	e.op("CMP %s, %s", rTo, rDone)
	e.op("BGE ret")
	e.op("MOVD $1, %s", rPend)
	if e.v.Residual {
		return
	}
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
	e.op("MOVD %s, R11", rRes)
	e.op("MOVD $0, R23") // byte offset of the row's slot
	e.label("sumrow")
	e.sumRow()
	e.comment("Halving tree: h = 32, 16, 8, 4 on vectors, leaving four partials in V0.")
	for _, h := range []vreg{8, 4, 2, 1} {
		for k := vreg(0); k < h; k++ {
			e.word(fadd4s(k, k, k+h))
		}
	}
	if e.v.Residual {
		return
	}
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

// sumRow accumulates the row at R10 into V0-V15; the residual forms also store h = x + res at
// R11. It leaves the row's start in R14.
func (e *emitter) sumRow() {
	res := e.v.Residual
	e.comment("Sum of squares: element i goes to partial i%64, lane i%4 of V(i%64/4).")
	e.op("MOVD R10, R14")
	for k := 0; k < 16; k++ {
		e.op("VEOR V%d.B16, V%d.B16, V%d.B16", k, k, k)
	}
	e.op("MOVD %s, R12", rD)
	e.op("MOVD $0, R24") // where h of a copied row end goes back to (0: nowhere)
	e.op("TST $%d, %s", spec.FlagPF, rFlags)
	e.op("ADD %s, R10, R13", rPfSum) // the row prefetched
	e.op("BNE sumpf")
	e.label("sum64")
	e.op("CMP $%d, R12", block)
	e.op("BLT sumtail")
	e.block(res)
	e.op("B sum64")
	e.label("sumpf")
	e.op("CMP $%d, R12", block)
	e.op("BLT sumtail")
	for off := 0; off < 4*block; off += 64 {
		e.op("PRFM %d(R13), PLDL1KEEP", off)
	}
	e.op("ADD $%d, R13, R13", 4*block)
	e.block(res)
	e.op("B sumpf")

	e.label("sumtail")
	e.comment("Fewer than 64 elements: copied to a zero-padded block on the stack, summed as a whole block (zeros add +0).")
	e.op("CBZ R12, summed")
	e.op("ADD $%d, RSP, R13", offSlotX)
	e.zeroBlock("R13")
	e.copyElems("R10", "R13", "R12")
	if res {
		e.op("MOVD R11, R24")
		e.op("ADD $%d, RSP, R13", offSlotR)
		e.zeroBlock("R13")
		e.copyElems("R11", "R13", "R12")
		e.op("MOVD R12, R25")
		e.op("ADD $%d, RSP, R11", offSlotR)
	}
	e.op("ADD $%d, RSP, R10", offSlotX)
	e.op("MOVD $%d, R12", block)
	e.op("B sum64") // one block; the count then reaches 0
	e.label("summed")
	if res {
		e.op("CBZ R24, hback")
		e.op("ADD $%d, RSP, R13", offSlotR)
		e.copyElems("R13", "R24", "R25")
		e.label("hback")
	}
}

// block adds the squares of 64 elements at R10 (post-incremented) to V0-V15 and counts them off
// R12; in the residual variants they are h = x + res, stored to res at R11 first.
func (e *emitter) block(res bool) {
	for j := 0; j < 4; j++ {
		e.op("VLD1.P 64(R10), [V16.S4, V17.S4, V18.S4, V19.S4]")
		if res {
			e.op("VLD1 (R11), [V20.S4, V21.S4, V22.S4, V23.S4]")
			for i := vreg(0); i < 4; i++ {
				e.word(fadd4s(16+i, 16+i, 20+i))
			}
			e.op("VST1.P [V16.S4, V17.S4, V18.S4, V19.S4], 64(R11)")
		}
		for i := vreg(0); i < 4; i++ {
			e.word(fmul4s(16+i, 16+i, 16+i))
		}
		for i := vreg(0); i < 4; i++ {
			acc := vreg(4*j) + i
			e.word(fadd4s(acc, acc, 16+i))
		}
	}
	e.op("SUB $%d, R12, R12", block)
}

// zeroBlock clears the 64-element slot at p.
func (e *emitter) zeroBlock(p string) {
	e.op("VEOR V16.B16, V16.B16, V16.B16")
	e.op("VEOR V17.B16, V17.B16, V17.B16")
	e.op("VEOR V18.B16, V18.B16, V18.B16")
	e.op("VEOR V19.B16, V19.B16, V19.B16")
	e.op("MOVD %s, R17", p)
	for k := 0; k < 4; k++ {
		e.op("VST1.P [V16.S4, V17.S4, V18.S4, V19.S4], 64(R17)")
	}
}

// copyElems copies n float32 from src to dst, four at a time and then one at a time; it moves
// neither pointer (it copies them to R15 and R17; n is kept).
func (e *emitter) copyElems(src, dst, n string) {
	vec, one, done := e.fresh("copyvec"), e.fresh("copyone"), e.fresh("copied")
	e.op("MOVD %s, R15", src)
	e.op("MOVD %s, R17", dst)
	e.op("MOVD %s, R16", n)
	e.label(vec)
	e.op("CMP $4, R16")
	e.op("BLT %s", one)
	e.op("VLD1.P 16(R15), [V20.S4]")
	e.op("VST1.P [V20.S4], 16(R17)")
	e.op("SUB $4, R16, R16")
	e.op("B %s", vec)
	e.label(one)
	e.op("CBZ R16, %s", done)
	e.op("FMOVS.P 4(R15), F20")
	e.op("FMOVS.P F20, 4(R17)")
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
	e.op("VEXT $8, V0.B16, V0.B16, V16.B16")
	e.word(fadd4s(0, 0, 16))
	e.word(faddpScalar(0, 0))
	e.comment("t = ss/d + eps; rows with t outside [2^-100, MaxFloat32] take the float64 path.")
	e.op("TST $%d, %s", flagRD, rFlags)
	e.op("BEQ rdivide")
	e.op("FMULS F26, F0, F1")
	e.op("B rdivided")
	e.label("rdivide")
	e.op("FDIVS F25, F0, F1")
	e.label("rdivided")
	e.op("FADDS F24, F1, F1")
	e.op("MOVW $0x%08x, R16", spec.TLowBits)
	e.op("FMOVS R16, F16")
	e.op("FCMPS F16, F1")
	e.op("BLT ret") // t < 2^-100 or unordered
	e.op("MOVW $0x%08x, R16", spec.TMaxBits)
	e.op("FMOVS R16, F16")
	e.op("FCMPS F16, F1")
	e.op("BGT ret")
	e.op("FSQRTS F1, F1")
	e.op("FMOVS $1.0, F16")
	e.op("FDIVS F1, F16, F29")
	e.op("FMOVS F29, %d(RSP)", offInvs)
	e.comment("Report 1/rms if asked.")
	e.op("CBZ %s, scale", rInv)
	e.op("FMOVS F29, (%s)(%s<<2)", rInv, rDone)
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
	e.op("VDUP V26.S[0], V20.S4")
	e.word(fmul4s(16, 16, 20))
	e.op("B gdivided")
	e.label("gdivide")
	e.op("VDUP V25.S[0], V20.S4")
	e.word(fdiv4s(16, 16, 20))
	e.label("gdivided")
	e.op("VDUP V24.S[0], V21.S4")
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
	src := rX
	if e.v.Residual {
		src = rRes
	}
	e.scaleRow(src)
	e.op("ADD %s, %s, %s", rStride, rX, rX)
	e.op("ADD %s, %s, %s", rStride, rDst, rDst)
	if e.v.Residual {
		e.op("ADD %s, %s, %s", rStride, rRes, rRes)
	}
	e.op("ADD $1, %s, %s", rDone, rDone)
	e.op("ADD $1, R23, R23")
	e.op("CMP %s, R23", rPend)
	e.op("BLT scalerow")
	e.op("B row")
}

// scaleRow writes y = (src*inv)*w (or the variant's form) for one row, inv in V29. With flagPF it
// prefetches the row rPfScale bytes further on as it goes.
func (e *emitter) scaleRow(src string) {
	e.comment("y = (src*inv)*w, rounded after each multiply.")
	e.op("MOVD %s, R10", src)
	e.op("MOVD %s, R13", rW)
	e.op("MOVD %s, R14", rDst)
	e.op("MOVD %s, R12", rD)
	e.op("TST $%d, %s", spec.FlagPF, rFlags)
	e.op("BEQ loop16")
	e.op("ADD %s, R10, R15", rPfScale)
	e.label("pf16")
	e.op("CMP $16, R12")
	e.op("BLT loop4")
	e.op("PRFM (R15), PLDL1KEEP")
	e.op("ADD $64, R15, R15")
	e.scale16()
	e.op("B pf16")
	e.label("loop16")
	e.op("CMP $16, R12")
	e.op("BLT loop4")
	e.scale16()
	e.op("B loop16")

	e.label("loop4")
	e.op("CMP $4, R12")
	e.op("BLT part")
	e.op("VLD1.P 16(R10), [V16.S4]")
	e.scaleVec(16, 20, "VLD1.P 16(R13), [V20.S4]")
	e.op("VST1.P [V16.S4], 16(R14)")
	e.op("SUB $4, R12, R12")
	e.op("B loop4")

	e.label("part")
	e.comment("The last 1-3 elements, through copies on the stack.")
	e.op("CBZ R12, scaled")
	e.op("ADD $%d, RSP, R11", offSlotX)
	e.copyElems("R10", "R11", "R12")
	e.op("ADD $%d, RSP, R11", offSlotX+16)
	if e.v.Mode != spec.Unweighted {
		e.copyElems("R13", "R11", "R12")
	}
	e.op("ADD $%d, RSP, R11", offSlotX)
	e.op("VLD1.P 16(R11), [V16.S4]")
	e.scaleVec(16, 20, "VLD1 (R11), [V20.S4]")
	e.op("VST1 [V16.S4], (R11)")
	e.copyElems("R11", "R14", "R12")
	e.label("scaled")
}

// scaleVec turns x in Vx into (x*inv)*w (or the variant's form), loading w into Vw with loadW.
func (e *emitter) scaleVec(x, w vreg, loadW string) {
	e.word(fmul4s(x, x, 29))
	if e.v.Mode == spec.Unweighted {
		return
	}
	e.op("%s", loadW)
	if e.v.Mode == spec.Offset {
		e.word(fadd4s(w, w, 28))
	}
	e.word(fmul4s(x, x, w))
}

// scale16 scales 16 floats at R10 into R14, weight at R13.
func (e *emitter) scale16() {
	e.op("VLD1.P 64(R10), [V16.S4, V17.S4, V18.S4, V19.S4]")
	for i := vreg(0); i < 4; i++ {
		e.word(fmul4s(16+i, 16+i, 29))
	}
	if e.v.Mode != spec.Unweighted {
		e.op("VLD1.P 64(R13), [V20.S4, V21.S4, V22.S4, V23.S4]")
		for i := vreg(0); i < 4; i++ {
			if e.v.Mode == spec.Offset {
				e.word(fadd4s(20+i, 20+i, 28))
			}
			e.word(fmul4s(16+i, 16+i, 20+i))
		}
	}
	e.op("VST1.P [V16.S4, V17.S4, V18.S4, V19.S4], 64(R14)")
	e.op("SUB $16, R12, R12")
}
