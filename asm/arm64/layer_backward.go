package main

import (
	"strings"

	"github.com/gosimd/rmsnorm/asm/internal/spec"
)

// The backward functions of the Layer variants (LayerNorm: Center, or a bias gradient to sum)
// are the RMSNorm backward function with two more pieces. Rows without flagCenter take the
// RMSNorm body; rows with it the centered one (lncentered), the contract of
// runGenericBackwardCentered, in five passes over the row:
//
//  1. s, the sum of x, and the sum of (x-m)*(x-m) with m = s/d: the forward's own passes
//     (sumPass, plain and centered), so the same float64-path tests; inv = 1/sqrt(ss/d + eps)
//     or Inv[r] (bwdInv), m or Mean[r] (V31);
//  2. the sum of g = dy*w' in the 64 partials, a = sum/d (kept at lOffA while V0-V15 hold the
//     next partials);
//  3. the sum of g*n, n = (x-m)*inv, b = sum/d (V30); the end of a row through zero-padded
//     slots, m and inv among them, so that the padding gives n = (0-0)*0 = +0 whatever Inv and
//     Mean hold;
//  4. dy into the bias gradient's block when the job has DB (dbRow; both bodies), before dx is
//     written, since dx may be dy;
//  5. dx = inv*((g - a) - n*b) and q = dy*n: bwdGrad with centeredGrad's element step, a in
//     all lanes of V12 (free in the dx loops; closeBlock, after them, takes it over).

// Stack frame of a Layer backward function: the RMSNorm one's, then the slots of m and inv for
// the end of a row in pass 3, and a.
const (
	lSlotM    = bSlotW + 4*block // 64 floats: m in the row's lanes, +0 in the padding
	lSlotInv  = lSlotM + 4*block // the same for inv
	lOffA     = lSlotInv + 4*block
	lFrameLen = lOffA    // up to lOffA+8 (lOffA and 4 bytes of padding), less the 8 bytes at 0(RSP)
	vA        = vreg(12) // a in all lanes, in pass 5
)

// The centered body runs the forward's sum passes, whose row ends go through the forward's slots
// (offSlotX, offSlotR): these must lie inside this frame and above fd and rd, which stay live
// through them. A constant below zero does not compile.
const (
	_ uint = offSlotX - (bOffRd + 4)
	_ uint = lFrameLen + 8 - (offSlotR + 4*block)
)

// centeredRow emits the centered body of a row, from the label lncentered to next.
func (e *emitter) centeredRow() {
	e.label("lncentered")
	e.comment("The row's mean and inv as the forward computes them, its float64-path tests included.")
	e.op("MOVD %s, R10", rX)
	e.sumPass("lnmean", false, plain)
	e.tree4()
	e.tree21()
	e.op("FSUBS F0, F0, F16")
	e.op("FCMPS $(0.0), F16")
	e.op("BNE ret")
	e.divD(0, 1, bOffFd, bOffRd, e.bl("m"))
	e.op("VDUP V1.S[0], V31.S4")
	e.op("MOVD %s, R10", rX)
	e.sumPass("lndev", false, centered)
	e.tree4()
	e.tree21()
	e.bwdInv()
	e.comment("Mean[r] in place of m when the job has it.")
	e.op("MOVD j+0(FP), R16")
	e.op("MOVD %s(R16), R17", spec.Job.Mean)
	e.op("CBZ R17, %s", e.bl("havemean"))
	e.op("FMOVS (R17)(%s<<2), F31", rDone)
	e.op("VDUP V31.S[0], V31.S4")
	e.label(e.bl("havemean"))

	e.gradSums(false)
	e.comment("a = sum(g)/d, kept on the stack while pass 3 fills V0-V15.")
	e.divD(0, 1, bOffFd, bOffRd, e.bl("a"))
	e.op("FMOVS F1, %d(RSP)", lOffA)
	e.gradSums(true)
	e.comment("b = sum(g*n)/d in all lanes of V30.")
	e.divD(0, 1, bOffFd, bOffRd, e.bl("b"))
	e.op("VDUP V1.S[0], V%d.S4", vS)
	e.dbRow()
	e.op("FMOVS %d(RSP), F%d", lOffA, vA)
	e.op("VDUP V%d.S[0], V%d.S4", vA, vA)
	e.center = true
	e.bwdGrad()
	e.center = false
}

// gradSums is pass 2 (withN false: the sum of g) or pass 3 (the sum of g*n) of a centered row,
// into F0.
func (e *emitter) gradSums(withN bool) {
	name := e.bl("gsum")
	if withN {
		name = e.bl("gnsum")
		e.comment("Pass 3: the sum of g*n, n = (x-m)*inv: the product of element i goes to partial i%64.")
	} else {
		e.comment("Pass 2: the sum of g = dy*w': element i goes to partial i%64.")
	}
	e.startSums()
	e.label(name + "64")
	e.formLoops(name+"loop", func(l string) {
		e.label(l)
		e.op("CMP $%d, R12", block)
		e.op("BLT %stail", name)
		e.gradSumBlock(withN, false)
		e.op("B %s", l)
	})
	e.label(name + "tail")
	e.comment("Fewer than 64 elements: dy, w (and x, m, inv) copied to zero-padded blocks, summed as a whole block.")
	e.op("CBZ R12, %sdone", name)
	// toSlot copies the row's end at src into the zero-padded slot and points src at it.
	toSlot := func(src string, slot int) {
		e.op("ADD $%d, RSP, R14", slot)
		e.zeroBlock("R14")
		e.copyElems(src, "R14", "R12", 4)
		e.op("MOVD R14, %s", src)
	}
	toSlot("R11", bSlotDY)
	if e.weighted() {
		toSlot("R13", bSlotW)
	}
	if withN {
		toSlot("R10", bSlotX)
	}
	if withN {
		for _, f := range []struct {
			slot int
			v    vreg
		}{{lSlotM, 31}, {lSlotInv, vInv}} {
			e.op("ADD $%d, RSP, R14", f.slot)
			e.zeroBlock("R14")
			e.fill("R14", "R12", f.v)
		}
		e.op("ADD $%d, RSP, R14", lSlotM)
		e.op("ADD $%d, RSP, R15", lSlotInv)
	}
	e.gradSumBlock(withN, true)
	e.label(name + "done")
	e.tree4()
	e.tree21()
}

// gradSumBlock adds 64 elements' g (or g*n, withN) to V0-V15: dy at R11, w at R13, x at R10,
// all post-incremented, and counts them off R12. In the end block (slot), m and inv come from
// the slots at R14 and R15 instead of V31 and V29.
func (e *emitter) gradSumBlock(withN, slot bool) {
	const x, dy, w, t = 16, 20, 24, 24
	for j := 0; j < 4; j++ {
		e.op("VLD1.P 64(R11), %s", e.list(dy, 4))
		if e.weighted() {
			e.op("VLD1.P 64(R13), %s", e.list(w, 4))
			for i := vreg(0); i < 4; i++ {
				if e.v.Mode == spec.Offset {
					e.word(fadd4s(w+i, w+i, vC)) // w + c, rounded
				}
				e.word(fmul4s(dy+i, dy+i, w+i)) // g = dy*w'
			}
		}
		g := vreg(dy)
		if withN {
			e.op("VLD1.P 64(R10), %s", e.list(x, 4))
			m, inv := [4]vreg{31, 31, 31, 31}, [4]vreg{vInv, vInv, vInv, vInv}
			if slot {
				e.op("VLD1.P 64(R14), %s", e.list(t, 4))
				m = [4]vreg{t, t + 1, t + 2, t + 3}
			}
			for i := vreg(0); i < 4; i++ {
				e.word(fsub4s(x+i, x+i, m[i])) // x - m
			}
			if slot {
				e.op("VLD1.P 64(R15), %s", e.list(t, 4))
				inv = [4]vreg{t, t + 1, t + 2, t + 3}
			}
			for i := vreg(0); i < 4; i++ {
				e.word(fmul4s(x+i, x+i, inv[i])) // n = (x-m)*inv
				e.word(fmul4s(x+i, dy+i, x+i))   // g*n
			}
			g = x
		}
		for i := vreg(0); i < 4; i++ {
			acc := vreg(4*j) + i
			e.word(fadd4s(acc, acc, g+i))
		}
	}
	e.op("SUB $%d, R12, R12", block)
}

// centeredGrad is gradBody's step for a centered row, g (dy*w') computed in register g: with
// n = (x-m)*inv, dx = inv*((g - a) - n*b), then q = dy*n into P as op says.
func (e *emitter) centeredGrad(op gradOp, nv int, g vreg) {
	const x, dy, dx, q = 16, 20, 0, 4
	e.arith(nv, "sub", x, x, 31)     // x - m
	e.arith(nv, "mul", x, x, vInv)   // n = (x-m)*inv
	e.arith(nv, "sub", dx, g, vA)    // g - a
	e.arith(nv, "mul", q, x, vS)     // n*b
	e.arith(nv, "sub", dx, dx, q)    // (g - a) - n*b
	e.arith(nv, "mul", dx, vInv, dx) // inv*((g - a) - n*b)
	e.store(nv, "R14", dx)           // after every load of dy: DX may be DY
	if op == opNone {
		return
	}
	e.arith(nv, "mul", q, dy, x) // q = dy*n
	e.gradOut(op, nv, q)
}

// dbWords words pickOp's comments for the bias gradient.
var dbWords = strings.NewReplacer("DW", "DB", " q", " dy").Replace

// dbRow adds the row's dy into the bias gradient's block when the job has DB, as the generic
// kernel's accumulateInto: P = dy for a block's first row, P += dy for the others, DB += P + dy
// for the last with flagFuse (P += dy, then DB += P), DB += dy for a block of one row. R25
// holds DB and R26 its partial sums.
func (e *emitter) dbRow() {
	e.comment("The bias gradient: dy into DB's block, before dx is written (dx may be dy).")
	e.op("MOVD j+0(FP), R16")
	e.op("MOVD %s(R16), R25", spec.Job.DB)
	e.op("MOVD %s(R16), R26", spec.Job.AccB)
	to := func(op gradOp) string { return e.bl([...]string{"dbnone", "dbset", "dbadd"}[op]) }
	e.pickOp("R25", "R26", to, "db", dbWords)
	const dy, p, db = 20, 8, 12
	e.label(to(opSet))
	e.op("MOVD %s, R11", rDY)
	e.op("MOVD %s, R12", rD)
	e.loops(e.bl("dbs"), func(nv int) {
		e.load(nv, "R11", dy, true)
		e.store(nv, "R15", dy)
	}, to(opNone), false)
	e.label(to(opAdd))
	e.op("MOVD %s, R11", rDY)
	e.op("MOVD %s, R12", rD)
	e.loops(e.bl("dba"), func(nv int) {
		e.load(nv, "R11", dy, true)
		e.load(nv, "R15", p, false)
		e.arith(nv, "add", p, p, dy)
		e.store(nv, "R15", p)
	}, e.bl("dbaddend"), false)
	e.label(e.bl("dbaddend"))
	e.op("CBZ R16, %s", to(opNone))
	e.comment("The block's last row: DB += P.")
	e.op("MOVD R26, R15")
	e.op("MOVD %s, R12", rD)
	e.loops(e.bl("dbc"), func(nv int) {
		e.load(nv, "R15", p, true)
		e.load(nv, "R16", db, false)
		e.arith(nv, "add", db, db, p)
		e.store(nv, "R16", db)
	}, to(opNone), false)
	e.label(to(opNone))
}
