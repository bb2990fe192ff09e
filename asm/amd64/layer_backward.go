package main

import (
	"strings"

	"github.com/gosimd/rmsnorm/asm/internal/spec"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The backward functions of the Layer variants (LayerNorm: Center, or a bias gradient to sum)
// are the RMSNorm backward function with two more pieces. Rows without flagCenter take the
// RMSNorm body (rmsRow); rows with it take the centered body, the contract of
// runGenericBackwardCentered:
//
//	sums:  the row's sum s and, with m = s/d, the sum of (x-m)*(x-m): the forward's own passes
//	       (gen.sumSquares), so the same float64-path test; inv = 1/sqrt(ss/d + eps) or Inv[r],
//	       m or Mean[r]. With flagPF (rows from memory) the second pass, which reads x from the
//	       cache, prefetches the row's dy (pfRow; see setBackwardMemoryFlags). On AVX2, a row
//	       whose job has Mean and Inv (eps >= 2^-100, d < 2^26) skips both passes and forms its
//	       grads first, gathering its largest |x|; only an |x| above 2^48, which alone could put
//	       the row on the float64 path, sends it back to these passes (classlater.go)
//	grads: with n = (x-m)*inv and g = dy*w', the 64 partials of g and of g*n in one pass (AVX2,
//	       which has registers for one set of partials beside the loop's own, keeps g's on the
//	       stack); a = sum(g)/d, b = sum(g*n)/d. With flagPF the pass over x and dy prefetches
//	       the next row's x (sums), and a row that skipped its sums the next row's dy too
//	dx:    dx = inv*((g - a) - n*b), and q = dy*n into the weight gradient's block: the RMSNorm
//	       dx loops (dxRow) with a centered element step
//
// Both bodies add dy into the bias gradient's block first when the job has DB (dbRow): a pass
// over dy, which is in L1 by then, before dx is written (dx may be dy).

// centeredRow emits the centered body for one row, then the next row.
func (b *bgen) centeredRow() {
	s := b.s
	fresh := func() []VecVirtual {
		acc := make([]VecVirtual, block/s.lanes)
		for k := range acc {
			acc[k] = s.vec()
		}
		return acc
	}
	b.mv = s.vec()
	var invr VecVirtual // the row's inv for the passes that follow
	defers := b.defersClass()
	if defers {
		invr = XMM()
		b.classLater(invr)
	}
	Label(b.bl("class"))
	Comment("The row's mean and inv as the forward computes them, its float64-path tests included.")
	b.lp, b.op = "lns", accSum
	sum := s.finish1(b.partial(b.sumSquares(fresh(), b.x, nil)))
	b.meanOf(sum)
	b.lp, b.op, b.pfRow = "lnq", accCentered, b.dy
	ss := s.finish1(b.partial(b.sumSquares(fresh(), b.x, nil)))
	b.lp, b.op, b.pfRow = "", accSquares, nil
	inv := b.invRow(ss)
	Comment("Mean[r] in place of m when the job has it.")
	mp := GP64()
	MOVQ(b.field(spec.Job.Mean), mp)
	TESTQ(mp, mp)
	JZ(LabelRef(b.bl("havemean")))
	r := GP64()
	MOVQ(b.done, r)
	VBROADCASTSS(Mem{Base: mp, Index: r, Scale: 4}, b.mv)
	Label(b.bl("havemean"))
	if !defers {
		invr = inv
	} else {
		VMOVAPS(inv, invr)
		CMPQ(b.deferred, U8(0))
		JNE(LabelRef(b.bl("classed"))) // the sums of g and g*n are formed already
	}

	b.center = true
	b.invv = s.vec()
	VBROADCASTSS(invr, b.invv)
	pg, pn := b.gSums(b.bl("gsum"))
	if defers {
		JMP(LabelRef(b.bl("classed")))
		Label(b.bl("gsums"))
		Comment("A row whose class waits: the sums of g and g*n, and the largest |x|.")
		VBROADCASTSS(invr, b.invv)
		b.maxv = s.vec()
		s.zero(b.maxv)
		dg, dn := b.gSums(b.bl("gsumd"))
		VMOVAPS(dg, pg)
		VMOVAPS(dn, pn)
		b.classIfLarge("class")
		Label(b.bl("classed"))
	}
	Comment("a = sum(g)/d and b = sum(g*n)/d")
	a, bc := XMM(), XMM()
	b.divideByD(pg, a, false)
	b.divideByD(pn, bc, false)
	b.av = s.vec()
	VBROADCASTSS(a, b.av)
	b.dbRow()
	if defers {
		inv = b.invv.AsX().(VecVirtual) // inv in lane 0, for either path to the sums
	}
	b.dxRow(inv, bc)
	b.center = false
	b.nextRow()
}

// gSums forms the sums of g and g*n of a centered row in one pass (emitted under name) and returns
// them, each in lane 0 of an XMM register.
func (b *bgen) gSums(name string) (pg, pn VecVirtual) {
	s := b.s
	acc := b.sums(name, true, true)
	if acc[0] == nil { // AVX2: g's partials on the stack, loaded once pn's are reduced
		pn = s.partial(acc[1])
		pg = s.partial(b.slotPartials(b.accSlot[0]))
	} else {
		pg, pn = s.partial(acc[0]), s.partial(acc[1])
	}
	return s.finish1(pg), s.finish1(pn)
}

// centered returns n = (x-m)*inv for the vector of elements at i (plus disp bytes), read with ld;
// with the k-mask km, n is +0 in the lanes past the row, cleared after the product: with Inv
// and Mean from the caller, 0 - m or (0-m)*inv may be infinite or NaN there.
func (b *bgen) centered(i GPVirtual, disp int, ld func(Mem, VecVirtual), km Op, invv VecVirtual) VecVirtual {
	n := b.s.vec()
	ld(b.at(b.x, i, disp), n)
	b.trackMax(n)
	VSUBPS(b.mv, n, n)
	if km != nil {
		VMULPS_Z(invv, n, km, n)
	} else {
		VMULPS(invv, n, n)
	}
	return n
}

// centeredAdd is the step of sums for a vector of a centered row: g (and n when pn is formed)
// from the elements at i plus disp bytes, read with ld through the k-mask km at the end of a row
// (nil elsewhere), then pg (acc[0], or with gSlot its partials at accSlot[0]) += g and pn
// (acc[1]) += g*n. The lanes past the row give g = 0 (dy and w read as zeros) and n = 0, so they
// add +0.
func (b *bgen) centeredAdd(acc [2][]VecVirtual, gSlot bool, k int, i GPVirtual, disp int, ld func(Mem, VecVirtual), km Op, one VecVirtual) {
	g := b.grad(i, disp, ld, one)
	switch {
	case gSlot:
		p := b.accSlot[0].Offset(k * b.s.vbytes())
		t := b.s.vec()
		VADDPS(p, g, t) // g + p: the same bits as p + g
		VMOVUPS(t, p)
	case acc[0] != nil:
		VADDPS(g, acc[0][k], acc[0][k])
	}
	if acc[1] == nil {
		return
	}
	n := b.centered(i, disp, ld, km, b.invv)
	VMULPS(n, g, g)
	VADDPS(g, acc[1][k], acc[1][k])
}

// centeredScalar is centeredAdd for element e alone (AVX2's last elements), x at xs, into the
// partials on the stack at slot(0) (pg, withG) and slot(1) (pn, withGN).
func (b *bgen) centeredScalar(xs VecVirtual, e GPVirtual, slot func(int) Mem, one VecVirtual, withG, withGN bool) {
	dyv := XMM()
	VMOVSS(b.at(b.dy, e, 0), dyv)
	var c Op
	if one != nil {
		c = one.AsX()
	}
	g := b.weighDYScalar(dyv, b.atW(e, 0), c)
	if withG {
		t := XMM()
		VADDSS(slot(0), g, t)
		VMOVSS(t, slot(0))
	}
	if withGN {
		n := XMM()
		VSUBSS(b.mv.AsX(), xs, n)
		VMULSS(b.invv.AsX(), n, n)
		VMULSS(n, g, g)
		VADDSS(slot(1), g, g)
		VMOVSS(g, slot(1))
	}
}

// centeredDx is dxVec for a centered row: dx = inv*((g - a) - n*b), sv holding b, and q = dy*n
// into P or DW as op says.
func (b *bgen) centeredDx(op gradOp, i GPVirtual, disp int, invv, sv, one VecVirtual, ld func(Mem, VecVirtual), st, dxSt func(VecVirtual, Mem)) {
	s := b.s
	n := b.centered(i, disp, ld, nil, invv)
	dyv := s.vec()
	ld(b.at(b.dy, i, disp), dyv)
	g := b.weighDY(dyv, i, disp, ld, one)
	t, u := s.vec(), s.vec()
	VSUBPS(b.av, g, t)
	VMULPS(sv, n, u)
	VSUBPS(u, t, t)
	VMULPS(invv, t, t)
	if op != opNone {
		q := s.vec()
		VMULPS(n, dyv, q)
		b.gradOut(op, q, i, disp, ld, st)
	}
	dxSt(t, b.at(b.dst, i, disp)) // after every read of dy: dx may be dy
}

// centeredDxScalar is centeredDx for the one element i, in scalar instructions (AVX2's partial
// vectors): the same operations in the same order.
func (b *bgen) centeredDxScalar(op gradOp, i GPVirtual) {
	at := func(base GPVirtual) Mem { return Mem{Base: base, Index: i, Scale: 4} }
	n, dyv := XMM(), XMM()
	VMOVSS(at(b.x), n)
	VSUBSS(b.mv.AsX(), n, n)
	VMULSS(b.invx, n, n)
	VMOVSS(at(b.dy), dyv)
	g := b.weighDYScalar(dyv, at(b.w), b.onex)
	t, u := XMM(), XMM()
	VSUBSS(b.av.AsX(), g, t)
	VMULSS(b.sx, n, u)
	VSUBSS(u, t, t)
	VMULSS(b.invx, t, t)
	if op != opNone {
		q := XMM()
		VMULSS(n, dyv, q)
		b.gradOutScalar(op, q, at(b.pAcc))
	}
	VMOVSS(t, at(b.dst)) // after every read of dy: dx may be dy
}

// dbWords words pickOp's comments for the bias gradient.
var dbWords = strings.NewReplacer("DW", "DB", "dwp", "dbp", " q", " dy", "acc +", "accB +").Replace

// dbRow adds the row's dy into the bias gradient when the job has one, as the generic kernel's
// accumulateInto: P = dy for a block's first row, P += dy for the others, DB += P + dy for the
// last with flagFuse (P += dy, then DB += P), DB += dy for a block of one row.
func (b *bgen) dbRow() {
	Comment("Which bias-gradient operation this row does (dy into DB's blocks, before dx is written).")
	dbp, pb := GP64(), GP64()
	to := func(op gradOp) string { return b.bl("db" + opNames[op]) }
	b.pickOp(dbp, pb, spec.Job.DB, spec.Job.AccB, "db", to, dbWords)
	at := func(base, i GPVirtual) Mem { return Mem{Base: base, Index: i, Scale: 4} }
	Label(to(opSet))
	b.eachVec(b.bl("dbsetloop"), func(i GPVirtual, ld func(Mem, VecVirtual), st func(VecVirtual, Mem), vec func() VecVirtual) {
		v := vec()
		ld(at(b.dy, i), v)
		st(v, at(pb, i))
	})
	JMP(LabelRef(to(opNone)))
	Label(to(opAdd))
	b.eachVec(b.bl("dbaddloop"), func(i GPVirtual, ld func(Mem, VecVirtual), st func(VecVirtual, Mem), vec func() VecVirtual) {
		v, p := vec(), vec()
		ld(at(b.dy, i), v)
		ld(at(pb, i), p)
		VADDPS(v, p, p)
		st(p, at(pb, i))
	})
	TESTQ(dbp, dbp)
	JZ(LabelRef(to(opNone)))
	Comment("The block's last row: DB += P.")
	b.eachVec(b.bl("dbcloseloop"), func(i GPVirtual, ld func(Mem, VecVirtual), st func(VecVirtual, Mem), vec func() VecVirtual) {
		p, v := vec(), vec()
		ld(at(pb, i), p)
		ld(at(dbp, i), v)
		VADDPS(p, v, v)
		st(v, at(dbp, i))
	})
	Label(to(opNone))
}

// eachVec emits a loop over the d elements of a row: body for each whole vector from element i,
// with ld and st reading and writing whole vectors in registers from vec, then for the rest: one
// partial vector through a k-mask (AVX-512), or body an element at a time with scalar loads and
// stores and XMM registers (AVX2).
func (b *bgen) eachVec(name string, body func(i GPVirtual, ld func(Mem, VecVirtual), st func(VecVirtual, Mem), vec func() VecVirtual)) {
	s := b.s
	i, lim := GP64(), GP64()
	XORQ(i, i)
	MOVQ(b.d(), lim)
	SUBQ(U32(s.lanes), lim)
	Label(name)
	CMPQ(i, lim)
	JG(LabelRef(name + "part"))
	body(i, func(m Mem, v VecVirtual) { VMOVUPS(m, v) }, func(v VecVirtual, m Mem) { VMOVUPS(v, m) }, s.vec)
	ADDQ(U32(s.lanes), i)
	JMP(LabelRef(name))
	Label(name + "part")
	n := GP64()
	MOVQ(b.d(), n)
	SUBQ(i, n)
	JZ(LabelRef(name + "done"))
	if s.masked {
		p := b.part(n)
		body(i, p.load, p.store, s.vec)
	} else {
		Label(name + "one")
		// XMM registers: a scalar load into a wider one would leave its upper lanes to read,
		// which the allocator would hold from the function's start.
		body(i, func(m Mem, v VecVirtual) { VMOVSS(m, v) }, func(v VecVirtual, m Mem) { VMOVSS(v, m) }, func() VecVirtual { return XMM() })
		INCQ(i)
		CMPQ(i, b.d())
		JL(LabelRef(name + "one"))
	}
	Label(name + "done")
}
