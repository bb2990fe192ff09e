package main

import (
	"fmt"
	"math/bits"

	"github.com/gosimd/rmsnorm/asm/internal/spec"
)

// The backward kernel functions, one with a weight (w + c in place of w serves both forms, c = 1
// with flagOffset, else -0: spec.BackwardVariant.Body) and one without (and the same two for the
// Layer variants, layer_backward.go): the package doc's Backward contract, bit for bit as
// runGenericBackward, one row at a time in three passes over it:
//
//  1. the sum of squares, exactly as the forward (V0-V15 the 64 partials, the tail of a row
//     through the zero-padded slot on the stack), t and its range test (rows outside it return
//     to the Go side's float64 path), and inv (from t, or the job's Inv[r]);
//  2. c, the sum of float32(g*x) in the 64 partials and the same tree (g = dy*w, dy*(1+w) or
//     dy), the tail through zero-padded slots for x, dy and w (zeros add +0, and a partial that
//     starts at +0 is never -0, so they change nothing), then s = ((inv*inv)*c)/d;
//  3. dx = inv*(g - x*s) and, with a weight gradient, q = dy*(x*inv) added to the block's
//     partial sum P or to DW the way the row's place in its block of 32 says (accumulate in
//     generic_backward.go); one loop per such operation, 16 floats, then 4, then one at a time
//     with scalar instructions, so that nothing past a slice is read or written. DW += q is
//     P += q with DW as P, and DW += P + q (the block's last row with flagFuse) is P += q
//     followed by DW += P: the same roundings in the same order, with two loops fewer.
//
// Every product, sum and difference is its own rounded FMUL, FADD or FSUB (never FMLA or FMLS).
// DX may be DY: each element's dy is loaded before its dx is stored.

// Registers besides those of the forward (kernel.go): R3 the dy row (the forward's res), R19 DW,
// R20 acc, R22 rows; in pass 3 R14 the dx pointer, R15 the P pointer (DW for a block of one row),
// R16 the DW pointer when the row closes its block (else 0). Vector: V29 inv and V30 s (all
// lanes), V28 c (w + c: 1 with flagOffset, else -0). The Layer functions (layer_backward.go) add
// R25 DB and R26 its partial sums in dbRow, V31 m and, in the centered body, V30 b and V12 a.
const (
	rDY, rDW, rAcc, rRows = "R3", "R19", "R20", "R22"
	// rDXStride is the bytes between dx rows: the job's dstStride, 0 when the caller wants no DX
	// (every row's dx goes to one scratch row).
	rDXStride = "R21"
)

// Stack frame of a backward function.
const (
	bOffFd     = 8                 // float32(d)
	bOffRd     = bOffFd + 4        // 1/d when d is a power of two
	bSlotX     = bOffRd + 4        // 64 floats: the end of a row of x, zero-padded to a block
	bSlotDY    = bSlotX + 4*block  // the same for dy
	bSlotW     = bSlotDY + 4*block // the same for w
	bFrameLen  = bSlotW + 4*block - 8
	vInv, vS   = vreg(29), vreg(30) // inv and s in all lanes
	vC         = vreg(28)           // c in all lanes, added to w: 1 with flagOffset, else -0
	firstConst = vreg(28)           // V28 and up hold constants: the same register in every lane of a body
)

func backward(name string, b spec.BackwardVariant) string {
	e := &emitter{v: spec.Variant{Format: spec.F32, Mode: b.Mode, Layer: b.Layer}, eb: 4, ob: 4}
	frame := bFrameLen
	if b.Layer {
		frame = lFrameLen
	}
	fmt.Fprintf(&e.b, "\n// func %s%s\n", name, spec.Signature)
	fmt.Fprintf(&e.b, "TEXT ·%s(SB), $%d-%d\n", name, frame, spec.ArgFrameLen)
	e.bwdPrologue()
	e.label("row")
	e.op("CMP %s, %s", rTo, rDone)
	e.op("BGE ret")
	if b.Layer {
		e.op("TBNZ $%d, %s, lncentered", bits.TrailingZeros(spec.FlagCenter), rFlags)
	}
	e.bwdSumSquares()
	e.bwdInv()
	e.bwdDot()
	e.bwdS()
	if b.Layer {
		e.dbRow()
	}
	e.bwdGrad()
	e.label("next")
	e.op("ADD %s, %s, %s", rDXStride, rDst, rDst)
	e.op("ADD %s, %s, %s", rStride, rX, rX)
	e.op("ADD %s, %s, %s", rStride, rDY, rDY)
	e.op("ADD $1, %s, %s", rDone, rDone)
	e.op("B row")
	e.label("ret")
	e.op("MOVD %s, ret+24(FP)", rDone)
	e.op("RET")
	if b.Layer {
		e.bp = "ln"
		e.centeredRow()
		e.bp = ""
	}
	return e.b.String()
}

// weighted reports whether the function has a weight (Weighted or Offset).
func (e *emitter) weighted() bool { return e.v.Mode != spec.Unweighted }

func (e *emitter) bwdPrologue() {
	j := spec.Job
	e.op("MOVD j+0(FP), R16")
	e.op("MOVD %s(R16), %s", j.Dst, rDst)
	e.op("MOVD %s(R16), %s", j.X, rX)
	e.op("MOVD %s(R16), %s", j.DY, rDY)
	e.op("MOVD %s(R16), %s", j.Inv, rInv)
	e.op("MOVD %s(R16), %s", j.D, rD)
	e.op("MOVD %s(R16), %s", j.Stride, rStride)
	e.op("LSL $2, %s, %s", rStride, rStride)
	e.op("MOVD %s(R16), %s", j.DstStride, rDXStride)
	e.op("LSL $2, %s, %s", rDXStride, rDXStride)
	e.op("MOVWU %s(R16), %s", j.Flags, rFlags)
	if e.weighted() || e.v.Layer { // Layer: rRows for the bias gradient's blocks too
		e.op("MOVD %s(R16), %s", j.W, rW)
		e.op("MOVD %s(R16), %s", j.DW, rDW)
		e.op("MOVD %s(R16), %s", j.Acc, rAcc)
		e.op("MOVD %s(R16), %s", j.Rows, rRows)
	}
	if e.v.Layer {
		// The forward's sum passes, which the centered body shares, would prefetch at the
		// forward's distance (rPfSum is rDXStride here): no prefetch on NEON's backward pass.
		e.comment("No flagPF: this function does not prefetch.")
		e.op("MOVD $%d, R10", spec.FlagPF)
		e.op("BIC R10, %s, %s", rFlags, rFlags)
	}
	if e.v.Mode == spec.Offset {
		e.comment("c, added to the weight: 1 with flagOffset, else -0 (spec.BackwardVariant.Body).")
		e.op("MOVW $0x80000000, R10")
		e.op("TBZ $%d, %s, weightadd", bits.TrailingZeros(spec.FlagOffset), rFlags)
		e.op("MOVW $0x3f800000, R10")
		e.label("weightadd")
		e.op("VDUP R10, V%d.S4", vC)
	}
	e.divisor(bOffFd, bOffRd)
	e.comment("Start at row from.")
	e.op("MOVD from+8(FP), %s", rDone)
	e.op("MOVD to+16(FP), %s", rTo)
	e.op("MUL %s, %s, R10", rDone, rDXStride)
	e.op("ADD R10, %s, %s", rDst, rDst)
	e.op("MUL %s, %s, R10", rDone, rStride)
	e.op("ADD R10, %s, %s", rX, rX)
	e.op("ADD R10, %s, %s", rDY, rDY)
}

// zeroPartials clears V0-V15.
func (e *emitter) zeroPartials() {
	for k := 0; k < 16; k++ {
		e.op("VEOR V%d.B16, V%d.B16, V%d.B16", k, k, k)
	}
}

// bwdSumSquares is pass 1: the row's sum of squares into F0, the forward's blocks of 64 (block in
// kernel.go) and its tail through the zero-padded slot, which pass 2 reuses.
func (e *emitter) bwdSumSquares() {
	e.comment("Pass 1, the sum of squares: element i goes to partial i%64, lane i%4 of V(i%64/4).")
	e.zeroPartials()
	e.op("MOVD %s, R10", rX)
	e.op("MOVD %s, R12", rD)
	e.label("ss64")
	e.op("CMP $%d, R12", block)
	e.op("BLT sstail")
	e.block(false)
	e.op("B ss64")
	e.label("sstail")
	e.comment("Fewer than 64 elements: copied to a zero-padded block on the stack, summed as a whole block.")
	e.op("CBZ R12, ssdone")
	e.op("ADD $%d, RSP, R13", bSlotX)
	e.zeroBlock("R13")
	e.copyElems("R10", "R13", "R12", 4)
	e.op("ADD $%d, RSP, R10", bSlotX)
	e.op("MOVD $%d, R12", block)
	e.op("B ss64") // one block; the count then reaches 0
	e.label("ssdone")
	e.tree4()
	e.tree21()
}

// bwdInv classifies the row by t = ss/d + eps (the float64 path returns) and sets V29 to inv:
// 1/sqrt(t), or the job's Inv[r] when it has one.
func (e *emitter) bwdInv() {
	e.comment("t = ss/d + eps; rows with t outside [2^-100, MaxFloat32] take the float64 path.")
	e.divD(0, 1, bOffFd, bOffRd, e.bl("t"))
	e.tInRange()
	e.comment("inv = 1/sqrt(t), or Inv[r] when the job has it.")
	e.op("CBZ %s, %s", rInv, e.bl("sqrt"))
	e.op("FMOVS (%s)(%s<<2), F%d", rInv, rDone, vInv)
	e.op("B %s", e.bl("haveinv"))
	e.label(e.bl("sqrt"))
	e.op("FSQRTS F1, F1")
	e.op("FMOVS $1.0, F16")
	e.op("FDIVS F1, F16, F%d", vInv)
	e.label(e.bl("haveinv"))
	e.op("VDUP V%d.S[0], V%d.S4", vInv, vInv)
}

// bwdDot is pass 2: c, the sum of float32(g*x) in the 64 partials and the tree, into F0.
func (e *emitter) bwdDot() {
	e.comment("Pass 2, c = the sum of g*x: the product of element i goes to partial i%64.")
	e.startSums()
	e.label("dot64")
	e.formLoops("dotloop", func(l string) {
		e.label(l)
		e.op("CMP $%d, R12", block)
		e.op("BLT dottail")
		e.dotBlock()
		e.op("B %s", l)
	})
	e.label("dottail")
	e.comment("The tail as in pass 1: dy and w copied to zero-padded blocks; the slot still holds x's.")
	e.op("CBZ R12, dotdone")
	e.op("ADD $%d, RSP, R14", bSlotDY)
	e.zeroBlock("R14")
	e.copyElems("R11", "R14", "R12", 4)
	e.op("MOVD R14, R11")
	if e.weighted() {
		e.op("ADD $%d, RSP, R14", bSlotW)
		e.zeroBlock("R14")
		e.copyElems("R13", "R14", "R12", 4)
		e.op("MOVD R14, R13")
	}
	e.op("ADD $%d, RSP, R10", bSlotX)
	e.op("MOVD $%d, R12", block)
	e.op("B dot64")
	e.label("dotdone")
	e.tree4()
	e.tree21()
}

// startSums clears the partials and points R10, R11 and R13 at the row's x, dy and w, R12 at
// its length, for a pass that sums over them.
func (e *emitter) startSums() {
	e.zeroPartials()
	e.op("MOVD %s, R10", rX)
	e.op("MOVD %s, R11", rDY)
	if e.weighted() {
		e.op("MOVD %s, R13", rW)
	}
	e.op("MOVD %s, R12", rD)
}

// formLoops emits, in the function with a weight, the main loop at label l twice: first a copy
// for a plain weight (e.v.Mode Weighted: g = dy*w), taken without flagOffset, then l itself with
// w + c. loop emits a loop at the label it is given; both copies leave it the same way. A row in
// the cache spends its time in these loops, which with a plain weight then multiply by w itself,
// as a function of that form alone would; the rest of the function, short, is shared. Without a
// weight there is one loop.
func (e *emitter) formLoops(l string, loop func(l string)) {
	if e.v.Mode != spec.Offset {
		loop(l)
		return
	}
	e.op("TBNZ $%d, %s, %s", bits.TrailingZeros(spec.FlagOffset), rFlags, l)
	e.v.Mode = spec.Weighted
	loop(l + "w")
	e.v.Mode = spec.Offset
	loop(l)
}

// dotBlock adds float32(g*x) of 64 elements (x at R10, dy at R11, w at R13, all post-incremented)
// to V0-V15 and counts them off R12.
func (e *emitter) dotBlock() {
	for j := 0; j < 4; j++ {
		e.op("VLD1.P 64(R10), %s", e.list(16, 4))
		e.op("VLD1.P 64(R11), %s", e.list(20, 4))
		if e.weighted() {
			e.op("VLD1.P 64(R13), %s", e.list(24, 4))
		}
		if e.weighted() {
			if e.v.Mode == spec.Offset {
				for i := vreg(0); i < 4; i++ {
					e.word(fadd4s(24+i, 24+i, vC)) // w + c, rounded
				}
			}
			for i := vreg(0); i < 4; i++ {
				e.word(fmul4s(20+i, 20+i, 24+i)) // g = dy*w'
			}
		}
		for i := vreg(0); i < 4; i++ {
			e.word(fmul4s(16+i, 20+i, 16+i)) // g*x
		}
		for i := vreg(0); i < 4; i++ {
			acc := vreg(4*j) + i
			e.word(fadd4s(acc, acc, 16+i))
		}
	}
	e.op("SUB $%d, R12, R12", block)
}

// bwdS sets V30 to s = ((inv*inv)*c)/d, c in F0.
func (e *emitter) bwdS() {
	e.comment("s = ((inv*inv)*c)/d, rounded after each operation.")
	e.op("FMULS F%d, F%d, F1", vInv, vInv)
	e.op("FMULS F0, F1, F1")
	e.divD(1, 1, bOffFd, bOffRd, "s")
	e.op("VDUP V1.S[0], V%d.S4", vS)
}

// Pass 3's treatment of the weight-gradient products q of a row (accumulate in
// generic_backward.go): P is the block's partial sum, at acc (flagFuse) or at the block's slot.
type gradOp int

const (
	opNone gradOp = iota // no weight gradient
	opSet                // the block's first row: P = q
	opAdd                // P += q; then, with R16 not zero, DW += P (the block's last row with flagFuse)
)

var gradOpLabel = [...]string{"dxonly", "dwset", "dwadd"}

// bwdGrad is pass 3: it picks the row's gradOp and runs its loop, which ends at next (the add
// loop through closeBlock).
func (e *emitter) bwdGrad() {
	if e.center {
		e.comment("Pass 5: dx = inv*((g - a) - n*b), and q = dy*n into the weight gradient.")
	} else {
		e.comment("Pass 3: dx = inv*(g - x*s), and q = dy*(x*inv) into the weight gradient.")
	}
	e.op("MOVD %s, R10", rX)
	e.op("MOVD %s, R11", rDY)
	e.op("MOVD %s, R14", rDst)
	e.op("MOVD %s, R12", rD)
	if !e.weighted() {
		e.gradLoop(opNone)
		return
	}
	e.op("MOVD %s, R13", rW)
	e.pickOp(rDW, rAcc, func(op gradOp) string { return e.bl(gradOpLabel[op]) }, "", func(c string) string { return c })
	for op := opNone; op <= opAdd; op++ {
		e.gradLoop(op)
	}
	e.closeBlock()
}

// pickOp branches to the label that to gives for the operation the row does with its products for
// a sum (DW, or DB) at register sum whose partial sums start at register acc: none without the
// sum (sum is 0); else set or add into P, left in R15, with R16 the sum when the row closes its
// block with flagFuse (else 0). pre starts its own labels, cm words its comments. It uses R23
// and R24.
func (e *emitter) pickOp(sum, acc string, to func(gradOp) string, pre string, cm func(string) string) {
	e.op("CBZ %s, %s", sum, to(opNone))
	e.comment("The row's place in its block of 32: first (r%32 == 0), last (r%32 == 31 or the last row).")
	e.op("MOVD ZR, R16")
	e.op("AND $%d, %s, R23", spec.GradBlock-1, rDone)
	e.op("TST $%d, %s", spec.FlagFuse, rFlags)
	e.op("BNE %s", e.bl(pre+"fuse"))
	e.comment("Without flagFuse, P is the block's own slot: acc + (r/32)*d floats.")
	e.op("LSR $%d, %s, R24", 5, rDone)
	e.op("MUL %s, R24, R24", rD)
	e.op("ADD R24<<2, %s, R15", acc)
	e.op("CBZ R23, %s", to(opSet))
	e.op("B %s", to(opAdd))
	e.label(e.bl(pre + "fuse"))
	e.op("MOVD %s, R15", acc)
	e.op("ADD $1, %s, R24", rDone)
	e.op("CMP %s, R24", rRows)
	e.op("BEQ %s", e.bl(pre+"fuselast"))
	e.op("CMP $%d, R23", spec.GradBlock-1)
	e.op("BEQ %s", e.bl(pre+"fuselast"))
	e.op("CBZ R23, %s", to(opSet))
	e.op("B %s", to(opAdd))
	e.label(e.bl(pre + "fuselast"))
	e.op("CBNZ R23, %s", e.bl(pre+"fuseclose"))
	e.comment(cm("A block of one row: DW += q, which is P += q with DW as P."))
	e.op("MOVD %s, R15", sum)
	e.op("B %s", to(opAdd))
	e.label(e.bl(pre + "fuseclose"))
	e.comment(cm("The block's last row: P += q, then DW += P (R16 not zero)."))
	e.op("MOVD %s, R16", sum)
	e.op("B %s", to(opAdd))
}

// closeBlock ends pass 3 of a row whose add (opAdd) closes its block with flagFuse, told by R16
// (DW) not zero: DW += P, P now holding P + q. A loop of its own for that row, and one for a
// block of one row, took twice its size; this is one more pass over d floats of P and DW, once per
// block of 32 rows.
func (e *emitter) closeBlock() {
	// V12 here is DW's first vector, not a centered row's a (vA), which the dx loops are done with.
	center := e.center
	e.center = false
	defer func() { e.center = center }()
	e.label(e.bl("dwaddend"))
	e.op("CBZ R16, next")
	e.op("MOVD %s, R15", rAcc)
	e.op("MOVD %s, R12", rD)
	const p, dw = 8, 12
	body := func(nv int) {
		e.load(nv, "R15", p, true)
		e.load(nv, "R16", dw, false)
		e.arith(nv, "add", dw, dw, p)
		e.store(nv, "R16", dw)
	}
	e.loops(e.bl("close"), body, "next", false)
}

// loops emits l's loops over R12 elements: body(4) on 16 floats at a time, then body(1) on 4,
// then body(0) on one at a time; they end at exit. With forms, the 16-float loop is a main loop
// of pass 3, which formLoops doubles in the function with a weight.
func (e *emitter) loops(l string, body func(nv int), exit string, forms bool) {
	loop16 := func(l16 string) {
		e.label(l16)
		e.op("CMP $16, R12")
		e.op("BLT %s4", l)
		body(4)
		e.op("SUB $16, R12, R12")
		e.op("B %s", l16)
	}
	if forms {
		e.formLoops(l+"16", loop16)
	} else {
		loop16(l + "16")
	}
	e.label(l + "4")
	e.op("CMP $4, R12")
	e.op("BLT %s1", l)
	body(1)
	e.op("SUB $4, R12, R12")
	e.op("B %s4", l)
	e.label(l + "1")
	e.comment("The last 1-3 elements one at a time, the same operations on scalars.")
	e.op("CBZ R12, %s", exit)
	body(0)
	e.op("SUB $1, R12, R12")
	e.op("B %s1", l)
}

// gradLoop emits pass 3's loop for op: 16 floats at a time, then 4, then one; it ends at next,
// or for opAdd at closeBlock.
func (e *emitter) gradLoop(op gradOp) {
	l := e.bl(gradOpLabel[op])
	e.label(l)
	exit := "next"
	if op == opAdd {
		exit = e.bl("dwaddend")
	}
	e.loops(l, func(nv int) { e.gradBody(op, nv) }, exit, true)
}

// gradBody does nv vectors of four floats (or one float when nv == 0) of pass 3 for op. x is
// at R10, dy at R11, w at R13, dx at R14 and P at R15 (DW for a block of one row), all
// post-incremented. Registers of vector i: x V16+i, dy V20+i, w then g V24+i, dx V0+i, q V4+i,
// P V8+i (closeBlock: P V8+i, DW V12+i).
func (e *emitter) gradBody(op gradOp, nv int) {
	const x, dy, w, dx, q = 16, 20, 24, 0, 4
	e.load(nv, "R10", x, true)
	e.load(nv, "R11", dy, true)
	g := vreg(dy)
	if e.weighted() {
		e.load(nv, "R13", w, true)
		if e.v.Mode == spec.Offset {
			e.arith(nv, "add", w, w, vC) // w + c
		}
		e.arith(nv, "mul", w, dy, w) // g = dy*w'
		g = w
	}
	if e.center {
		e.centeredGrad(op, nv, g)
		return
	}
	e.arith(nv, "mul", dx, x, vS)    // x*s
	e.arith(nv, "sub", dx, g, dx)    // g - x*s
	e.arith(nv, "mul", dx, vInv, dx) // inv*(g - x*s)
	e.store(nv, "R14", dx)           // after every load of dy: DX may be DY
	if op == opNone {
		return
	}
	e.arith(nv, "mul", q, x, vInv) // x*inv
	e.arith(nv, "mul", q, dy, q)   // q = dy*(x*inv)
	e.gradOut(op, nv, q)
}

// gradOut does op (set or add) with the products in the registers from q (nv vectors, or one
// float) and P at R15 (post-incremented), using the registers from V8.
func (e *emitter) gradOut(op gradOp, nv int, q vreg) {
	const p = 8
	switch op {
	case opSet:
		e.store(nv, "R15", q)
	case opAdd:
		e.load(nv, "R15", p, false)
		e.arith(nv, "add", p, p, q)
		e.store(nv, "R15", p)
	}
}

// arith emits d = a op b (op "add", "sub" or "mul", rounded) on nv vectors from the registers
// given, or on one scalar when nv == 0. Registers from V28 up are constants, the same for every
// vector.
func (e *emitter) arith(nv int, op string, d, a, b vreg) {
	if nv == 0 {
		// The Go assembler's order: FSUBS Fm, Fn, Fd is Fd = Fn - Fm.
		e.op("F%sS F%d, F%d, F%d", map[string]string{"add": "ADD", "sub": "SUB", "mul": "MUL"}[op], b, a, d)
		return
	}
	enc := map[string]func(d, n, m vreg) (uint32, string){"add": fadd4s, "sub": fsub4s, "mul": fmul4s}[op]
	at := func(r vreg, i int) vreg {
		if r >= firstConst || (e.center && r == vA) {
			return r
		}
		return r + vreg(i)
	}
	for i := 0; i < nv; i++ {
		e.word(enc(at(d, i), at(a, i), at(b, i)))
	}
}

// load loads nv vectors (or one float when nv == 0) from base into the registers from v,
// post-incrementing base when post.
func (e *emitter) load(nv int, base string, v vreg, post bool) {
	switch {
	case nv == 0 && post:
		e.op("FMOVS.P 4(%s), F%d", base, v)
	case nv == 0:
		e.op("FMOVS (%s), F%d", base, v)
	case post:
		e.op("VLD1.P %d(%s), %s", 16*nv, base, e.list(v, nv))
	default:
		e.op("VLD1 (%s), %s", base, e.list(v, nv))
	}
}

// store stores nv vectors (or one float when nv == 0) from the registers from v to base and
// post-increments base.
func (e *emitter) store(nv int, base string, v vreg) {
	if nv == 0 {
		e.op("FMOVS.P F%d, 4(%s)", v, base)
		return
	}
	e.op("VST1.P %s, %d(%s)", e.list(v, nv), 16*nv, base)
}
