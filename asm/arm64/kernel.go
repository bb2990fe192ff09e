package main

import (
	"fmt"
	"strings"

	"github.com/gosimd/rmsnorm/asm/internal/spec"
)

// Registers. General purpose: R0 dst row, R1 x row, R2 w, R3 res row, R4 inv, R5 d, R6 rows,
// R7 stride in bytes, R8 flags, R9 rows done; R10-R17 are scratch (R18 is the platform register,
// R26-R30 belong to the Go toolchain). Vector: V0-V15 the 64 partial sums, V16-V23 scratch,
// V24-V27 the partly reduced sums of a group, V28 ones (1+w), V29 inv (lane 0 is the scalar F29),
// V30 the four inv of a group.
const (
	rDst, rX, rW, rRes, rInv, rD, rRows, rStride, rFlags, rDone = "R0", "R1", "R2", "R3", "R4", "R5", "R6", "R7", "R8", "R9"
)

// frame offsets of the arguments (asmdecl checks them).
const frame = "$0-96"

// emitter collects the text of one function.
type emitter struct {
	b strings.Builder
	v spec.Variant
}

func (e *emitter) op(format string, args ...any) { fmt.Fprintf(&e.b, "\t"+format+"\n", args...) }
func (e *emitter) label(l string)                { fmt.Fprintf(&e.b, "%s:\n", l) }
func (e *emitter) comment(c string)              { fmt.Fprintf(&e.b, "\n\t// %s\n", c) }

// word emits an instruction the Go assembler lacks, with its text as the comment.
func (e *emitter) word(enc uint32, text string) { e.op("WORD $0x%08x // %s", enc, text) }

func kernel(name string, v spec.Variant) string {
	e := &emitter{v: v}
	fmt.Fprintf(&e.b, "\n// func %s%s\n", name, stubSignature)
	fmt.Fprintf(&e.b, "TEXT ·%s(SB), NOSPLIT, %s\n", name, frame)
	e.op("MOVD dst+0(FP), %s", rDst)
	e.op("MOVD x+8(FP), %s", rX)
	e.op("MOVD w+16(FP), %s", rW)
	e.op("MOVD res+24(FP), %s", rRes)
	e.op("MOVD inv+32(FP), %s", rInv)
	e.op("MOVD d+40(FP), %s", rD)
	e.op("MOVD rows+48(FP), %s", rRows)
	e.op("MOVD stride+56(FP), %s", rStride)
	e.op("LSL $2, %s, %s", rStride, rStride)
	e.op("MOVD flags+80(FP), %s", rFlags)
	e.op("MOVD $0, %s", rDone)
	if v.Mode == spec.Offset {
		e.op("FMOVS $1.0, F28")
		e.op("VDUP V28.S[0], V28.S4")
	}
	if !v.Residual {
		e.groupPath()
	}
	e.rowPath()
	e.label("ret")
	e.op("MOVD %s, ret+88(FP)", rDone)
	e.op("RET")
	return e.b.String()
}

// rowPath normalizes one row at a time until the rows are done or a row needs the float64 path.
func (e *emitter) rowPath() {
	e.label("row")
	e.op("CMP %s, %s", rRows, rDone)
	e.op("BGE ret")
	e.sumRow("r", rX)
	e.comment("Halving tree: h = 32, 16, 8, 4 on vectors, then 2 and 1 in V0.")
	e.treeToVector()
	e.op("VEXT $8, V0.B16, V0.B16, V16.B16")
	e.word(fadd4s(0, 0, 16))
	e.word(faddpScalar(0, 0))
	e.invScalar()
	e.comment("Report 1/rms if asked.")
	e.op("CBZ %s, rscale", rInv)
	e.op("FMOVS F29, (%s)(%s<<2)", rInv, rDone)
	e.label("rscale")
	e.op("VDUP V29.S[0], V29.S4")
	src := rX
	if e.v.Residual {
		src = rRes
	}
	e.scaleRow("r", src, 1)
	e.op("ADD %s, %s, %s", rStride, rX, rX)
	e.op("ADD %s, %s, %s", rStride, rDst, rDst)
	if e.v.Residual {
		e.op("ADD %s, %s, %s", rStride, rRes, rRes)
	}
	e.op("ADD $1, %s, %s", rDone, rDone)
	e.op("B row")
}

// groupPath normalizes rows of up to spec.GroupMax floats four at a time, finishing their trees
// together and computing the four inv with vector instructions. A group holding a row that needs
// the float64 path is left to the one-row path, which recomputes it and stops there.
func (e *emitter) groupPath() {
	e.op("CMP $%d, %s", spec.GroupMax, rD)
	e.op("BGT row")
	e.label("group")
	e.op("SUB %s, %s, R16", rDone, rRows)
	e.op("CMP $4, R16")
	e.op("BLT row")
	e.op("MOVD %s, R17", rX)
	for r := 0; r < 4; r++ {
		e.sumRow(fmt.Sprintf("g%d", r), "R17")
		e.treeToVector()
		e.op("VMOV V0.B16, V%d.B16", 24+r)
		e.op("ADD %s, R17, R17", rStride)
	}
	e.comment("h = 2 for rows A B and C D: [a0 a1 b0 b1] + [a2 a3 b2 b3]; h = 1: pairwise adds give [A B C D].")
	e.op("VZIP1 V25.D2, V24.D2, V16.D2")
	e.op("VZIP2 V25.D2, V24.D2, V17.D2")
	e.word(fadd4s(16, 16, 17))
	e.op("VZIP1 V27.D2, V26.D2, V18.D2")
	e.op("VZIP2 V27.D2, V26.D2, V19.D2")
	e.word(fadd4s(18, 18, 19))
	e.word(faddp4s(16, 16, 18))

	e.comment("t = ss/d + eps for the four rows; any t outside [2^-100, MaxFloat32] leaves the group path.")
	e.op("TST $%d, %s", spec.FlagRD, rFlags)
	e.op("BEQ gdivide")
	e.op("FMOVS rd+72(FP), F20")
	e.op("VDUP V20.S[0], V20.S4")
	e.word(fmul4s(16, 16, 20))
	e.op("B gdivided")
	e.label("gdivide")
	e.op("FMOVS fd+68(FP), F20")
	e.op("VDUP V20.S[0], V20.S4")
	e.word(fdiv4s(16, 16, 20))
	e.label("gdivided")
	e.op("FMOVS eps+64(FP), F21")
	e.op("VDUP V21.S[0], V21.S4")
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
	e.op("BNE row")
	e.word(fsqrt4s(16, 16))
	e.op("FMOVS $1.0, F17")
	e.op("VDUP V17.S[0], V17.S4")
	e.word(fdiv4s(30, 17, 16))

	e.comment("Report 1/rms if asked.")
	e.op("CBZ %s, gscale", rInv)
	e.op("ADD %s<<2, %s, R16", rDone, rInv)
	e.op("VST1 [V30.S4], (R16)")
	e.label("gscale")
	for r := 0; r < 4; r++ {
		e.op("VDUP V30.S[%d], V29.S4", r)
		e.scaleRow(fmt.Sprintf("g%d", r), rX, 8)
		e.op("ADD %s, %s, %s", rStride, rX, rX)
		e.op("ADD %s, %s, %s", rStride, rDst, rDst)
	}
	e.op("ADD $4, %s, %s", rDone, rDone)
	e.op("B group")
}

// sumRow accumulates the row at base into V0-V15; the residual forms also store h = x + res.
func (e *emitter) sumRow(p, base string) {
	res := e.v.Residual
	e.comment("Sum of squares: element i goes to partial i%64, lane i%4 of V(i%64/4).")
	for k := 0; k < 16; k++ {
		e.op("VEOR V%d.B16, V%d.B16, V%d.B16", k, k, k)
	}
	e.op("MOVD %s, R10", base)
	if res {
		e.op("MOVD %s, R11", rRes)
	}
	e.op("MOVD %s, R12", rD)
	e.label(p + "sum64")
	e.op("CMP $64, R12")
	e.op("BLT %stail", p)
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
	e.op("SUB $64, R12, R12")
	e.op("B %ssum64", p)

	e.label(p + "tail")
	e.comment("Fewer than 64 elements: whole vectors to V0, V1, ..., then up to three lanes of one more.")
	for k := vreg(0); k < 16; k++ {
		e.op("CMP $4, R12")
		e.op("BLT %spart%d", p, k)
		e.op("VLD1.P 16(R10), [V16.S4]")
		if res {
			e.op("VLD1 (R11), [V17.S4]")
			e.word(fadd4s(16, 16, 17))
			e.op("VST1.P [V16.S4], 16(R11)")
		}
		e.word(fmul4s(16, 16, 16))
		e.word(fadd4s(k, k, 16))
		e.op("SUB $4, R12, R12")
	}
	e.op("B %ssummed", p) // not reached: fewer than 64 remain
	for k := vreg(0); k < 16; k++ {
		e.label(fmt.Sprintf("%spart%d", p, k))
		e.op("CBZ R12, %ssummed", p)
		for lane := 0; lane < 3; lane++ {
			if lane > 0 {
				e.op("CMP $%d, R12", lane+1)
				e.op("BLT %ssq%d", p, k)
			}
			// A scalar load or operation on F17 zeroes the rest of V17.
			e.op("FMOVS.P 4(R10), F17")
			if res {
				e.op("FMOVS (R11), F18")
				e.op("FADDS F18, F17, F17")
				e.op("FMOVS.P F17, 4(R11)")
			}
			if lane == 0 {
				e.op("VMOV V17.B16, V16.B16")
			} else {
				e.op("VMOV V17.S[0], V16.S[%d]", lane)
			}
		}
		e.label(fmt.Sprintf("%ssq%d", p, k))
		e.word(fmul4s(16, 16, 16))
		e.word(fadd4s(k, k, 16))
		if k < 15 {
			e.op("B %ssummed", p)
		}
	}
	e.label(p + "summed")
}

// treeToVector applies h = 32, 16, 8, 4 to V0-V15, leaving four partials in V0.
func (e *emitter) treeToVector() {
	for _, h := range []vreg{8, 4, 2, 1} { // h = 32, 16, 8, 4 partials
		for k := vreg(0); k < h; k++ {
			e.word(fadd4s(k, k, k+h))
		}
	}
}

// invScalar computes t = ss/d + eps from ss in F0, returns for the float64 path when t is outside
// [2^-100, MaxFloat32] or NaN, and leaves inv = 1/sqrt(t) in F29.
func (e *emitter) invScalar() {
	e.comment("t = ss/d + eps; rows with t outside [2^-100, MaxFloat32] take the float64 path.")
	e.op("TST $%d, %s", spec.FlagRD, rFlags)
	e.op("BEQ rdivide")
	e.op("FMOVS rd+72(FP), F16")
	e.op("FMULS F16, F0, F1")
	e.op("B rdivided")
	e.label("rdivide")
	e.op("FMOVS fd+68(FP), F16")
	e.op("FDIVS F16, F0, F1")
	e.label("rdivided")
	e.op("FMOVS eps+64(FP), F16")
	e.op("FADDS F16, F1, F1")
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
}

// scaleRow writes y = (src*inv)*w (or the variant's form) for one row, inv in V29 (all lanes)
// and F29. With flagPF it prefetches the row `ahead` rows further on as it goes.
func (e *emitter) scaleRow(p, src string, ahead int) {
	e.comment("y = (src*inv)*w, rounded after each multiply.")
	e.op("MOVD %s, R10", src)
	e.op("MOVD %s, R13", rW)
	e.op("MOVD %s, R14", rDst)
	e.op("MOVD %s, R12", rD)
	e.op("TST $%d, %s", spec.FlagPF, rFlags)
	e.op("BEQ %sloop16", p)
	shift := map[int]int{1: 0, 2: 1, 4: 2, 8: 3}[ahead]
	e.op("ADD %s<<%d, R10, R15", rStride, shift)
	e.label(p + "pf16")
	e.op("CMP $16, R12")
	e.op("BLT %sloop4", p)
	e.op("PRFM (R15), PLDL1KEEP")
	e.op("ADD $64, R15, R15")
	e.scale16()
	e.op("B %spf16", p)
	e.label(p + "loop16")
	e.op("CMP $16, R12")
	e.op("BLT %sloop4", p)
	e.scale16()
	e.op("B %sloop16", p)

	e.label(p + "loop4")
	e.op("CMP $4, R12")
	e.op("BLT %sone", p)
	e.op("VLD1.P 16(R10), [V16.S4]")
	e.word(fmul4s(16, 16, 29))
	if e.v.Mode != spec.Unweighted {
		e.op("VLD1.P 16(R13), [V20.S4]")
		if e.v.Mode == spec.Offset {
			e.word(fadd4s(20, 20, 28))
		}
		e.word(fmul4s(16, 16, 20))
	}
	e.op("VST1.P [V16.S4], 16(R14)")
	e.op("SUB $4, R12, R12")
	e.op("B %sloop4", p)

	e.label(p + "one")
	e.op("CBZ R12, %sdone", p)
	e.op("FMOVS.P 4(R10), F16")
	e.op("FMULS F29, F16, F16")
	if e.v.Mode != spec.Unweighted {
		e.op("FMOVS.P 4(R13), F20")
		if e.v.Mode == spec.Offset {
			e.op("FADDS F28, F20, F20")
		}
		e.op("FMULS F20, F16, F16")
	}
	e.op("FMOVS.P F16, 4(R14)")
	e.op("SUB $1, R12, R12")
	e.op("B %sone", p)
	e.label(p + "done")
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
