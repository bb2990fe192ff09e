package main

import (
	"fmt"

	"github.com/gosimd/rmsnorm/asm/internal/spec"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// A backward function does one row at a time (float32 rows only). There are two: without a weight,
// and with one, whose w' = w + c serves both forms (c = 1 under flagOffset, -0 without; see
// spec.BackwardVariant.Body). Its main loops, the ones a row in the cache spends its time in, come in a
// copy per form, chosen by flagOffset before each loop: with a plain weight they multiply by w
// itself, as a function of that form alone would. The rest (the non-temporal loops, whose rows
// wait on memory anyway, the heads and the ends of rows) is shared, with w + c:
//
//	sums:   ss of the row (x*x) and c (g*x, g = dy*w'), each in the 64 partials of the contract;
//	        AVX-512 has the registers to form both in one pass, AVX2 makes two. AVX2's RMSNorm
//	        functions form c alone for a row whose job has Inv (eps >= 2^-100, d < 2^26), with
//	        its largest |x|: at most 2^48, the row is on the float32 path whatever its ss, which
//	        it then skips (classLaterRMS in classlater.go)
//	inv:    t = ss/d + eps, its range test (outside [2^-100, MaxFloat32]: return the row for the
//	        float64 path), inv = 1/sqrt(t) or Inv[r]; s = ((inv*inv)*c)/d
//	dx:     dx = inv*(g - x*s) per element, and q = dy*(x*inv) into the row's block of the
//	        weight gradient: one loop for each of the three things a row can do with q (below);
//	        in AVX2's RMSNorm functions under FlagPipe, the same loop also forms the next row's
//	        ss and c, and that row skips the sums (pipeLoop)
//
// The weight-gradient operation of row r, with first = r%32 == 0 and last = r%32 == 31 or the
// call's last row: without a DW nothing; with flagFuse (one worker) P = q (first), P += q,
// DW += P + q (last) or DW += q (first and last), P being one row of d floats at acc; without it
// P = q (first) or P += q, P being block r/32's slot at acc. DW += q is P += q with DW as P, and
// DW += P + q is P += q followed by DW += P (closeBlock): the same roundings in the same order.

// gradOp is what a row's dx loop does with its weight-gradient products q.
type gradOp int

const (
	opNone gradOp = iota // no DW
	opSet                // P = q
	opAdd                // P = P + q (with DW as P for a block of one row)
)

var opNames = [...]string{"none", "set", "add"}

// bgen builds one backward function.
type bgen struct {
	*gen
	mode spec.Mode // Offset (a weight: w' = w + c, see spec.BackwardVariant.Body) or Unweighted
	dy   GPVirtual // row `done` of dy
	pAcc GPVirtual // the row's P (ops other than none; DW itself for a block of one row)
	dwp  GPVirtual // DW when the row closes its block with flagFuse (closeBlock), else 0

	// AVX2: the partials of ss and of c spilled to the stack while the last elements of a row (a
	// partial vector) are added one at a time, and the scalar inv, s and c. The backward pipe
	// (backPipes) also keeps the next row's partials there: c's as it forms them, ss's at the end.
	accSlot        [2]Mem
	invx, sx, onex VecVirtual

	// The centered body of a Layer function (layer_backward.go): center while it is emitted; the
	// row's inv and, from the sums of g and g*n, a = sum(g)/d in every lane.
	center   bool
	invv, av VecVirtual

	// bp starts the labels of the pieces a function emits twice (the Layer functions: the
	// RMSNorm body without flagCenter, the centered one with it); "" in the RMSNorm functions.
	bp string

	// The pipe of the AVX2 RMSNorm functions (backPipes; see pipeLoop and pipedSums): piped is 1
	// from the pipe that summed the next row to the point where that row takes its partials (its
	// ss at accSlot[0], its c at accSlot[1]), else 0; accs are the accumulators of the sum passes,
	// which the partials are loaded into. The partials wait on the stack, not in registers: registers
	// live from the pipe to the next row would be live through every path of the function.
	piped Mem
	accs  [2][]VecVirtual
	layer bool // a Layer function (spec.BackwardVariant.Layer)

	// The row's class decided after its sums of g and g*n (defersClass): deferred is 1 from the
	// point a row skips its class passes to the point it has passed or taken them; maxv, while
	// the sums are emitted, gathers the largest |x| of the row as raw bits.
	deferred Mem
	maxv     VecVirtual
}

// backPipes reports whether the function has the backward pipe (FlagPipe): the AVX2 RMSNorm
// functions. AVX-512 forms ss and c in one pass already; the Layer functions have none. (The
// forward functions' pipe is gen.pipes.)
func (b *bgen) backPipes() bool { return b.s == avx2 && !b.layer }

// bl returns the label name, with the prefix of the body being emitted.
func (b *bgen) bl(name string) string { return b.bp + name }

func backward(s *isa, bv spec.BackwardVariant) {
	m := bv.Mode
	name := s.name + bv.FuncName()
	TEXT(name, NOSPLIT, spec.AvoSig)
	for _, l := range spec.BackwardDoc(name, bv) {
		Comment(l)
	}
	b := &bgen{gen: &gen{s: s, v: spec.Variant{Format: spec.F32, Mode: m}, eb: 4}, mode: m, layer: bv.Layer}
	b.done, b.dstStrideB = AllocLocal(8), AllocLocal(8)
	if b.backPipes() {
		b.piped = AllocLocal(8)
	}
	b.fd, b.rd = AllocLocal(4), AllocLocal(4)
	if b.defersClass() {
		b.deferred = AllocLocal(8)
	}
	if !s.masked {
		b.accSlot = [2]Mem{AllocLocal(4 * block), AllocLocal(4 * block)}
		if bv.Layer {
			// The forward's sum passes (gen.sumSquares) copy the end of a row to a slot: the
			// first partials' slot, free until the sums of g, keeps the frame within NOSPLIT's.
			b.slotX, b.tailN = b.accSlot[0], AllocLocal(8)
		}
	}
	b.prologue()

	Label("row")
	t := GP64()
	MOVQ(b.done, t)
	CMPQ(t, b.to())
	JAE(LabelRef("ret"))
	if bv.Layer {
		TESTL(U32(spec.FlagCenter), b.flags())
		JNZ(LabelRef("centered"))
	}
	b.rmsRow(bv.Layer)
	if bv.Layer {
		Label("centered")
		b.bp = "ln"
		b.centeredRow()
		b.bp = ""
	}
	b.epilogue()
}

// rmsRow emits the RMSNorm body: a row's sums, inv and s, its bias gradient (withDB: a Layer
// function's rows without flagCenter), dx and the weight-gradient operation, then the next row.
func (b *bgen) rmsRow(withDB bool) {
	s := b.s
	var ss, c VecVirtual
	switch {
	case s == avx512:
		acc := b.sums("sum", true, true)
		ss, c = s.partial(acc[0]), s.partial(acc[1])
		ss = s.finish1(ss)
	case b.backPipes():
		ss, c = b.pipedSums()
	default: // AVX2's Layer functions: c after the range test of ss
		acc := b.sums("sumss", true, false)
		ss = s.finish1(s.partial(acc[0]))
	}
	inv := b.invRow(ss)
	switch {
	case s == avx512:
		c = s.finish1(c)
	case !b.backPipes():
		acc := b.sums("sumc", false, true)
		c = s.finish1(s.partial(acc[1]))
	}
	Comment("s = ((inv*inv)*c)/d")
	a := XMM()
	VMULSS(inv, inv, a)
	VMULSS(c, a, a)
	sv := XMM()
	b.divideByD(a, sv, false)
	if withDB {
		b.dbRow()
	}
	b.dxRow(inv, sv)
	b.nextRow()
}

// pipedSums emits the sums of a row in the functions with the pipe (backPipes): ss and c, each
// reduced to lane 0 of the register returned, both before the range test of invRow (the
// functions without the pipe test ss before they form c), so that a row the pipe summed (piped)
// joins the others in one place: its partials come from the stack. One test of piped per row.
func (b *bgen) pipedSums() (ss, c VecVirtual) {
	s := b.s
	for k := range b.accs {
		b.accs[k] = make([]VecVirtual, block/s.lanes)
		for i := range b.accs[k] {
			b.accs[k][i] = s.vec()
		}
	}
	CMPQ(b.piped, U8(0))
	JNE(LabelRef("pipedrow"))
	b.classLaterRMS()
	Label("sumboth")
	pss := s.partial(b.sums("sumss", true, false)[0])
	pc := s.partial(b.sums("sumc", false, true)[1])
	JMP(LabelRef("summed"))
	Label("pipedrow")
	Comment("The pipe summed this row: its partials from the stack.")
	MOVQ(U32(0), b.piped)
	for k := range b.accs[0] {
		VMOVUPS(b.accSlot[0].Offset(k*s.vbytes()), b.accs[0][k])
		VMOVUPS(b.accSlot[1].Offset(k*s.vbytes()), b.accs[1][k])
	}
	s.partial(b.accs[0]) // into accs[0][0], pss
	s.partial(b.accs[1]) // into accs[1][0], pc
	Label("summed")
	return s.finish1(pss), s.finish1(pc)
}

// nextRow moves the row pointers on by a row and goes back to row.
func (b *bgen) nextRow() {
	Comment("Next row.")
	ADDQ(b.strideB, b.x)
	ADDQ(b.dstStrideB, b.dst)
	ADDQ(b.strideB, b.dy)
	INCQ(b.done)
	JMP(LabelRef("row"))
}

// prologue loads the job's pointers, float32(d) and 1/d (see gen.prologue), and moves to row from.
func (b *bgen) prologue() {
	b.j = Load(Param("j"), GP64()).(GPVirtual)
	b.dst, b.x, b.dy = GP64(), GP64(), GP64()
	MOVQ(b.field(spec.Job.Dst), b.dst)
	MOVQ(b.field(spec.Job.X), b.x)
	MOVQ(b.field(spec.Job.DY), b.dy)
	if b.mode != spec.Unweighted {
		b.w = GP64()
		MOVQ(b.field(spec.Job.W), b.w)
	}
	b.strideB = GP64()
	MOVQ(b.field(spec.Job.Stride), b.strideB)
	SHLQ(U8(2), b.strideB)
	ds := GP64() // dx rows are dstStride apart: 0 when the caller wants no DX (one scratch row)
	MOVQ(b.field(spec.Job.DstStride), ds)
	SHLQ(U8(2), ds)
	MOVQ(ds, b.dstStrideB)

	b.divisor()
	if b.backPipes() {
		MOVQ(U32(0), b.piped)
	}

	Comment("Start at row from.")
	off := Load(Param("from"), GP64()).(GPVirtual)
	MOVQ(off, b.done)
	doff := GP64()
	MOVQ(off, doff)
	IMULQ(b.dstStrideB, doff)
	ADDQ(doff, b.dst)
	IMULQ(b.strideB, off)
	ADDQ(off, b.x)
	ADDQ(off, b.dy)
}

// sums forms, in one pass over the row, the 64 partials of ss (withSS) and of c (withC); it
// returns the accumulators of each (nil for the one not formed, and for g's of a centered row on
// AVX2, which it leaves at accSlot[0]: see centeredRow).
func (b *bgen) sums(name string, withSS, withC bool) [2][]VecVirtual {
	s := b.s
	if b.center {
		Comment(fmt.Sprintf("Partial sums (g %v, g*n %v): element i goes to partial i%%64.", withSS, withC))
	} else {
		Comment(fmt.Sprintf("Partial sums (ss %v, c %v): element i goes to partial i%%64.", withSS, withC))
	}
	var acc [2][]VecVirtual
	// gSlot: AVX2's centered rows form both sums in one pass, g's partials on the stack at
	// accSlot[0] (see centeredRow).
	gSlot := b.center && withSS && withC && !s.masked
	if gSlot {
		z := s.vec()
		s.zero(z)
		for k := 0; k < block/s.lanes; k++ {
			VMOVUPS(z, b.accSlot[0].Offset(k*s.vbytes()))
		}
	}
	for k, on := range []bool{withSS, withC} {
		if !on || (k == 0 && gSlot) {
			continue
		}
		acc[k] = b.accs[k]
		if acc[k] == nil {
			acc[k] = make([]VecVirtual, block/s.lanes)
			for i := range acc[k] {
				acc[k][i] = s.vec()
			}
		}
		for i := range acc[k] {
			s.zero(acc[k][i])
		}
	}
	var one VecVirtual
	grads := withC || b.center // the pass forms g
	if grads && b.mode == spec.Offset {
		one = s.vec()
		b.setC(one)
	}
	// add accumulates the vector of elements at i (plus disp bytes), read with ld (through the
	// k-mask km at the end of a row, else nil).
	add := func(i GPVirtual, disp int, ld func(m Mem, v VecVirtual), km Op) {
		k := disp / s.vbytes() % (block / s.lanes)
		if b.center {
			b.centeredAdd(acc, gSlot, k, i, disp, ld, km, one)
			return
		}
		xv := s.vec()
		ld(b.at(b.x, i, disp), xv)
		b.trackMax(xv)
		if withSS {
			t := s.vec()
			VMULPS(xv, xv, t)
			VADDPS(t, acc[0][k], acc[0][k])
		}
		if withC {
			g := b.grad(i, disp, ld, one)
			VMULPS(xv, g, g)
			VADDPS(g, acc[1][k], acc[1][k])
		}
	}
	full := func(m Mem, v VecVirtual) { VMOVUPS(m, v) }
	i, lim := GP64(), GP64()
	XORQ(i, i)
	MOVQ(b.d(), lim)
	SUBQ(U32(block), lim)
	var pf []GPVirtual    // the next row's x (and dy), prefetched along the way (see below)
	var ahead []GPVirtual // under flagAhead, the rows this pass reads, prefetched aheadBytes on
	loop := func(l string) {
		Label(l)
		CMPQ(i, lim)
		JG(LabelRef(name + "tail"))
		for _, p := range pf {
			for off := 0; off < block*4; off += 64 {
				prefetch(b.at(p, i, off))
			}
		}
		for _, p := range ahead {
			for off := 0; off < block*4; off += 64 {
				prefetch(b.at(p, i, aheadBytes+off))
			}
		}
		for disp := 0; disp < block*4; disp += s.vbytes() {
			add(i, disp, full, nil)
		}
		ADDQ(U32(block), i)
		JMP(LabelRef(l))
	}
	if b.center && withC {
		// A centered row's pass over x and dy reads them from the cache: under flagPF (rows from
		// memory) a copy of its loops prefetches the next row's x, which the next row's first
		// pass would otherwise wait for. A copy rather than a test per block, which measured
		// 3-4% slower on avx512 rows in L1.
		TESTL(U32(spec.FlagPF), b.flags())
		JZ(LabelRef(name + "nopf"))
		px := GP64()
		MOVQ(b.x, px)
		ADDQ(b.strideB, px)
		pf = []GPVirtual{px}
		if b.maxv != nil {
			// A row whose class waits (classLater) skips the centered pass that prefetches its
			// dy: this pass prefetches the next row's.
			pdy := GP64()
			MOVQ(b.dy, pdy)
			ADDQ(b.strideB, pdy)
			pf = append(pf, pdy)
		}
		b.formLoops(name+"pfloop", loop)
		pf = nil
		Label(name + "nopf")
	}
	if !b.center {
		// Under flagAhead (rows from memory, on the CPUs of streamrule.Ahead: see aheadBytes) a copy of the loops
		// prefetches the rows it reads aheadBytes ahead of its loads: x, and dy when it forms g.
		// On AVX2 without Inv the first pass reads only x, from memory; the pass over x and dy
		// then finds x in the cache (its prefetches of x cost an instruction each) and reads dy
		// from memory. AVX-512's single pass prefetches both from memory.
		TESTL(U32(spec.FlagAhead), b.flags())
		JZ(LabelRef(name + "noahead"))
		ahead = []GPVirtual{b.x}
		if withC {
			ahead = append(ahead, b.dy)
		}
		if grads {
			b.formLoops(name+"aheadloop", loop)
		} else {
			loop(name + "aheadloop")
		}
		ahead = nil
		Label(name + "noahead")
	}
	if grads {
		b.formLoops(name+"loop", loop)
	} else {
		loop(name + "loop")
	}

	Label(name + "tail")
	Comment("Fewer than 64 elements remain: whole vectors, then one partial vector (its other lanes add +0).")
	rem := GP64()
	MOVQ(b.d(), rem)
	SUBQ(i, rem)
	done := name + "done"
	for k := 0; k < block/s.lanes; k++ {
		l := fmt.Sprintf("%spart%d", name, k)
		CMPQ(rem, U32((k+1)*s.lanes))
		JL(LabelRef(l))
		add(i, k*s.vbytes(), full, nil)
		if k == block/s.lanes-1 {
			JMP(LabelRef(done)) // unreachable: fewer than 64 remain
		}
	}
	if s.masked {
		for k := 0; k < block/s.lanes; k++ {
			Label(fmt.Sprintf("%spart%d", name, k))
			n := GP64()
			MOVQ(rem, n)
			SUBQ(U32(k*s.lanes), n)
			JZ(LabelRef(done))
			p := b.part(n)
			add(i, k*s.vbytes(), p.load, p.(maskPart).k)
			JMP(LabelRef(done))
		}
		Label(done)
		return acc
	}
	// AVX2: the last rem%8 elements one at a time, each into its partial in a copy of the
	// accumulators on the stack (element i+j goes to partial j, i being a multiple of 64).
	j := GP64()
	for k := 0; k < block/s.lanes; k++ {
		Label(fmt.Sprintf("%spart%d", name, k))
		MOVQ(U32(k*s.lanes), j)
		if k < block/s.lanes-1 {
			JMP(LabelRef(name + "scalar"))
		}
	}
	Label(name + "scalar")
	CMPQ(j, rem)
	JGE(LabelRef(done))
	for a := range acc {
		for k, v := range acc[a] { // none for g with gSlot: its partials are there already
			VMOVUPS(v, b.accSlot[a].Offset(k*s.vbytes()))
		}
	}
	e := GP64() // the element, i+j
	Label(name + "scalarloop")
	LEAQ(Mem{Base: i, Index: j, Scale: 1}, e)
	xs := XMM()
	VMOVSS(b.at(b.x, e, 0), xs)
	if b.maxv != nil {
		t := s.vec()
		s.zero(t) // all of t written (the load below also zeroes the other lanes, but only its low half is the operand)
		VMOVSS(b.at(b.x, e, 0), t.AsX())
		b.trackMax(t)
	}
	slot := func(a int) Mem { return Mem{Base: b.accSlot[a].Base, Disp: b.accSlot[a].Disp, Index: j, Scale: 4} }
	if b.center {
		b.centeredScalar(xs, e, slot, one, withSS, withC)
	}
	if withSS && !b.center {
		t := XMM()
		VMULSS(xs, xs, t)
		VADDSS(slot(0), t, t)
		VMOVSS(t, slot(0))
	}
	if withC && !b.center {
		g := XMM()
		VMOVSS(b.at(b.dy, e, 0), g)
		if b.mode != spec.Unweighted {
			wv := XMM()
			VMOVSS(b.atW(e, 0), wv)
			if b.mode == spec.Offset {
				VADDSS(one.AsX(), wv, wv)
			}
			VMULSS(wv, g, g)
		}
		VMULSS(xs, g, g)
		VADDSS(slot(1), g, g)
		VMOVSS(g, slot(1))
	}
	INCQ(j)
	CMPQ(j, rem)
	JL(LabelRef(name + "scalarloop"))
	for a := range acc {
		for k, v := range acc[a] {
			VMOVUPS(b.accSlot[a].Offset(k*s.vbytes()), v)
		}
	}
	Label(done)
	return acc
}

// slotPartials loads the 64 partials at slot into new registers and returns them.
func (b *bgen) slotPartials(slot Mem) []VecVirtual {
	acc := make([]VecVirtual, block/b.s.lanes)
	for k := range acc {
		acc[k] = b.s.vec()
		VMOVUPS(slot.Offset(k*b.s.vbytes()), acc[k])
	}
	return acc
}

// part returns the masked reader and writer of the first n (1..lanes-1) elements of a vector
// (AVX-512; AVX2 does its partial vectors one element at a time).
func (b *bgen) part(n GPVirtual) part {
	tab := GP64()
	LEAQ(kmaskAVX512, tab)
	k := K()
	KMOVW(Mem{Base: tab, Index: n, Scale: 2}, k)
	return maskPart{k}
}

// grad returns g = dy*w' for the vector of elements at i (plus disp bytes), read with ld.
func (b *bgen) grad(i GPVirtual, disp int, ld func(m Mem, v VecVirtual), one VecVirtual) VecVirtual {
	return b.gradAt(b.dy, i, disp, ld, one)
}

// gradAt is grad for the row of dy at dy (the pipe's next row).
func (b *bgen) gradAt(dy, i GPVirtual, disp int, ld func(m Mem, v VecVirtual), one VecVirtual) VecVirtual {
	s := b.s
	g := s.vec()
	ld(b.at(dy, i, disp), g)
	switch b.mode {
	case spec.Weighted: // a plain weight's own main loop (formLoops)
		wv := s.vec()
		ld(b.atW(i, disp), wv)
		VMULPS(wv, g, g)
	case spec.Offset: // w' = w + c
		wv := s.vec()
		ld(b.atW(i, disp), wv)
		VADDPS(one, wv, wv)
		VMULPS(wv, g, g)
	}
	return g
}

// formLoops emits, in the function with a weight, the main loop at label l twice: first a copy
// for a plain weight (b.mode Weighted: g = dy*w), taken without flagOffset, then l itself with
// w + c. loop emits a loop at the label it is given; both copies leave it the same way. Without
// a weight there is one loop.
func (b *bgen) formLoops(l string, loop func(l string)) {
	if b.mode != spec.Offset {
		loop(l)
		return
	}
	Comment("A plain weight's main loop multiplies by w itself.")
	TESTL(U32(spec.FlagOffset), b.flags())
	JNZ(LabelRef(l))
	b.mode = spec.Weighted
	loop(l + "w")
	b.mode = spec.Offset
	loop(l)
}

// invRow finishes ss: t = ss/d + eps, the range test, and inv = 1/sqrt(t) or the job's Inv[done],
// in lane 0 of the register returned.
func (b *bgen) invRow(ss VecVirtual) VecVirtual {
	t := b.tInRange(ss)
	inv := XMM()
	ip := GP64()
	MOVQ(b.inv(), ip)
	TESTQ(ip, ip)
	JZ(LabelRef(b.bl("computeinv")))
	r := GP64()
	MOVQ(b.done, r)
	VMOVSS(Mem{Base: ip, Index: r, Scale: 4}, inv)
	JMP(LabelRef(b.bl("haveinv")))
	Label(b.bl("computeinv"))
	VSQRTSS(t, t, t)
	VMOVSS(constOne, inv)
	VDIVSS(t, inv, inv)
	Label(b.bl("haveinv"))
	return inv
}

// dxRow writes dx for the row and does its weight-gradient operation.
func (b *bgen) dxRow(inv, sx VecVirtual) {
	s := b.s
	invv, sv := s.vec(), s.vec()
	VBROADCASTSS(inv, invv)
	VBROADCASTSS(sx, sv)
	var one VecVirtual
	if b.mode == spec.Offset {
		one = s.vec()
		b.setC(one)
		b.onex = one.AsX().(VecVirtual)
	}
	b.invx, b.sx = invv.AsX().(VecVirtual), sv.AsX().(VecVirtual)
	if b.mode == spec.Unweighted {
		b.dxLoop(opNone, invv, sv, one)
		Label(b.bl("rowdone"))
		return
	}
	Comment("Which weight-gradient operation this row does.")
	b.dwp, b.pAcc = GP64(), GP64()
	b.pickOp(b.dwp, b.pAcc, spec.Job.DW, spec.Job.Acc, "", func(op gradOp) string { return b.bl("dx" + opNames[op]) }, func(c string) string { return c })

	for _, op := range []gradOp{opNone, opSet, opAdd} {
		b.dxLoop(op, invv, sv, one)
	}
	Label(b.bl("rowdone"))
}

// pickOp jumps to the label that to gives for the operation the row does with its products for a
// sum (DW, or DB) at the job's field sumField whose partial sums are at accField: none without
// it; set or add into its P, which it leaves in p, with sum left non-zero only when the row
// closes its block with flagFuse (closeBlock). pre starts its own labels; cm words its comments.
func (b *bgen) pickOp(sum, p GPVirtual, sumField, accField, pre string, to func(gradOp) string, cm func(string) string) {
	MOVQ(b.field(sumField), sum)
	TESTQ(sum, sum)
	JZ(LabelRef(to(opNone)))
	r, pos := GP64(), GP64()
	MOVQ(b.done, r)
	MOVQ(r, pos)
	ANDQ(U8(spec.GradBlock-1), pos)
	MOVQ(b.field(accField), p)
	last := GP64() // 1 when the row closes its block
	XORQ(last, last)
	CMPQ(pos, U8(spec.GradBlock-1))
	JE(LabelRef(b.bl(pre + "islast")))
	INCQ(r)
	CMPQ(r, b.field(spec.Job.Rows))
	JNE(LabelRef(b.bl(pre + "notlast")))
	Label(b.bl(pre + "islast"))
	MOVQ(U32(1), last)
	Label(b.bl(pre + "notlast"))
	TESTL(U32(spec.FlagFuse), b.flags())
	JNZ(LabelRef(b.bl(pre + "fused")))
	Comment(cm("Each block in its slot: P at acc + (row/32)*d*4. dwp = 0: no row closes a block here."))
	XORQ(sum, sum)
	blk := GP64()
	MOVQ(b.done, blk)
	SHRQ(U8(5), blk)
	IMULQ(b.d(), blk)
	LEAQ(Mem{Base: p, Index: blk, Scale: 4}, p)
	TESTQ(pos, pos)
	JZ(LabelRef(to(opSet)))
	JMP(LabelRef(to(opAdd)))
	Label(b.bl(pre + "fused"))
	TESTQ(pos, pos)
	JNZ(LabelRef(b.bl(pre + "fusednotfirst")))
	TESTQ(last, last)
	JZ(LabelRef(to(opSet)))
	Comment(cm("A block of one row: DW += q, which is P += q with DW as P."))
	MOVQ(sum, p)
	XORQ(sum, sum)
	JMP(LabelRef(to(opAdd)))
	Label(b.bl(pre + "fusednotfirst"))
	Comment(cm("P += q; the block's last row keeps dwp, and its DW += P follows."))
	TESTQ(last, last)
	JNZ(LabelRef(to(opAdd)))
	XORQ(sum, sum)
	JMP(LabelRef(to(opAdd)))
}

// closeBlock ends the add pass of a row (opAdd) that closes its block with flagFuse, told by a
// DW pointer left non-zero: DW += P, P now holding P + q, for DW + (P + q) as the contract
// orders it. It is one more pass over d floats of P and DW, once per block of 32 rows, where a
// loop of its own for that row (and one for a block of one row) took about 8 KB of each function.
func (b *bgen) closeBlock() {
	s := b.s
	TESTQ(b.dwp, b.dwp)
	JZ(LabelRef(b.bl("rowdone")))
	Comment("The block's last row: DW += P.")
	i, lim := GP64(), GP64()
	XORQ(i, i)
	MOVQ(b.d(), lim)
	SUBQ(U32(s.lanes), lim)
	at := func(base, i GPVirtual) Mem { return Mem{Base: base, Index: i, Scale: 4} }
	Label(b.bl("closeloop"))
	CMPQ(i, lim)
	JG(LabelRef(b.bl("closepart")))
	p := s.vec()
	VMOVUPS(at(b.pAcc, i), p)
	VADDPS(at(b.dwp, i), p, p)
	VMOVUPS(p, at(b.dwp, i))
	ADDQ(U32(s.lanes), i)
	JMP(LabelRef(b.bl("closeloop")))
	Label(b.bl("closepart"))
	n := GP64()
	MOVQ(b.d(), n)
	SUBQ(i, n)
	JZ(LabelRef(b.bl("rowdone")))
	if s.masked {
		// i is the row's last whole vector's end: the partial vector is at i.
		m := b.part(n)
		p, w := s.vec(), s.vec()
		m.load(at(b.pAcc, i), p)
		m.load(at(b.dwp, i), w)
		VADDPS(p, w, w)
		m.store(w, at(b.dwp, i))
		JMP(LabelRef(b.bl("rowdone")))
		return
	}
	Label(b.bl("closetailloop")) // the last 1..7 elements one at a time
	t := XMM()
	VMOVSS(at(b.pAcc, i), t)
	VADDSS(at(b.dwp, i), t, t)
	VMOVSS(t, at(b.dwp, i))
	INCQ(i)
	CMPQ(i, b.d())
	JL(LabelRef(b.bl("closetailloop")))
	JMP(LabelRef(b.bl("rowdone")))
}

// dxLoop emits the dx pass of a row for one weight-gradient operation, then jumps to rowdone
// (the add pass through closeBlock).
// With flagNT, dx goes out with non-temporal stores from its first vector-aligned element on.
func (b *bgen) dxLoop(op gradOp, invv, sv, one VecVirtual) {
	s := b.s
	name := b.bl("dx" + opNames[op])
	Label(name)
	i, lim := GP64(), GP64()
	XORQ(i, i)
	MOVQ(b.d(), lim)
	SUBQ(U32(unroll*s.lanes), lim)
	full := func(m Mem, v VecVirtual) { VMOVUPS(m, v) }
	fullSt := func(v VecVirtual, m Mem) { VMOVUPS(v, m) }
	TESTL(U32(spec.FlagNT), b.flags())
	JNZ(LabelRef(name + "nt"))
	if b.backPipes() {
		b.pipeLoop(op, name+"st", invv, sv, one, fullSt)
	}
	var next []GPVirtual // under FlagNext, the next row's x and dy, prefetched along the way
	loop := func(l string, dxSt func(VecVirtual, Mem)) {
		Label(l)
		CMPQ(i, lim)
		JG(LabelRef(name + "one"))
		for _, p := range next {
			for off := 0; off < unroll*s.vbytes(); off += 64 {
				prefetch(b.at(p, i, off))
			}
		}
		for u := 0; u < unroll; u++ {
			b.dxVec(op, i, u*s.vbytes(), invv, sv, one, full, fullSt, dxSt)
		}
		ADDQ(U32(unroll*s.lanes), i)
		JMP(LabelRef(l))
	}
	b.formLoops(name+"loop", func(l string) { loop(l, fullSt) })

	Label(name + "nt")
	Comment("Up to the first vector-aligned element of dx with a partial vector, then non-temporal stores.")
	// Under FlagNext (rows from memory; the Go side sets it where streamrule.Ahead or
	// streamrule.Next says so) the loop prefetches the next row's x and dy while this row's dx
	// goes out, so that memory is not idle while the row is worked from the cache, as the forward
	// pipe does; that row's sum pass then finds them there.
	if b.backPipes() {
		b.pipeLoop(op, name, invv, sv, one, func(v VecVirtual, m Mem) { VMOVNTPS(v, m) })
	}
	ahead := !b.center
	body := name + "ntloop"
	if ahead {
		body = name + "ntbody"
	}
	h := GP64()
	MOVQ(b.dst, h)
	NEGQ(h)
	ANDQ(U32(s.vbytes()-1), h)
	SHRQ(U8(2), h)
	JZ(LabelRef(body))
	CMPQ(h, b.d())
	JLE(LabelRef(name + "head"))
	MOVQ(b.d(), h)
	Label(name + "head")
	if s.masked {
		hp := b.part(h)
		b.dxVec(op, i, 0, invv, sv, one, hp.load, hp.store, hp.store)
		ADDQ(h, i)
	} else {
		Label(name + "headloop") // i counts up from 0 to h
		b.dxScalar(op, i)
		INCQ(i)
		CMPQ(i, h)
		JL(LabelRef(name + "headloop"))
	}
	ntSt := func(v VecVirtual, m Mem) { VMOVNTPS(v, m) }
	if ahead {
		Label(body)
		TESTL(U32(spec.FlagNext), b.flags())
		JZ(LabelRef(name + "ntloop"))
		px, pdy := GP64(), GP64()
		MOVQ(b.x, px)
		ADDQ(b.strideB, px)
		MOVQ(b.dy, pdy)
		ADDQ(b.strideB, pdy)
		next = []GPVirtual{px, pdy}
		loop(name+"ntaheadloop", ntSt)
		next = nil
	}
	loop(name+"ntloop", ntSt)

	Label(name + "one")
	ADDQ(U32((unroll-1)*s.lanes), lim)
	Label(name + "oneloop")
	CMPQ(i, lim)
	JG(LabelRef(name + "part"))
	b.dxVec(op, i, 0, invv, sv, one, full, fullSt, fullSt)
	ADDQ(U32(s.lanes), i)
	JMP(LabelRef(name + "oneloop"))
	Label(name + "part")
	n := GP64()
	MOVQ(b.d(), n)
	SUBQ(i, n)
	JZ(LabelRef(b.bl("rowdone" + opNames[op])))
	if s.masked {
		p := b.part(n)
		b.dxVec(op, i, 0, invv, sv, one, p.load, p.store, p.store)
	} else {
		Label(name + "tailloop") // the last 1..7 elements one at a time
		b.dxScalar(op, i)
		INCQ(i)
		CMPQ(i, b.d())
		JL(LabelRef(name + "tailloop"))
	}
	Label(b.bl("rowdone" + opNames[op]))
	if op == opAdd {
		b.closeBlock()
		return
	}
	JMP(LabelRef(b.bl("rowdone")))
}

// dxVec does one vector of elements at i (plus disp bytes): dx = inv*(g - x*s), and q = dy*(x*inv)
// into P or DW as op says; ld and st read and write the row's vectors (whole or partial), dxSt
// stores dx.
func (b *bgen) dxVec(op gradOp, i GPVirtual, disp int, invv, sv, one VecVirtual, ld func(Mem, VecVirtual), st, dxSt func(VecVirtual, Mem)) {
	if b.center {
		b.centeredDx(op, i, disp, invv, sv, one, ld, st, dxSt)
		return
	}
	s := b.s
	xv, dyv := s.vec(), s.vec()
	ld(b.at(b.x, i, disp), xv)
	ld(b.at(b.dy, i, disp), dyv)
	g := b.weighDY(dyv, i, disp, ld, one)
	t := s.vec()
	VMULPS(sv, xv, t)
	if b.mode == spec.Unweighted {
		VSUBPS(t, g, t)
	} else {
		VSUBPS(t, g, g)
		t = g
	}
	VMULPS(invv, t, t)
	if op != opNone {
		q := s.vec()
		VMULPS(invv, xv, q)
		VMULPS(q, dyv, q)
		b.gradOut(op, q, i, disp, ld, st)
	}
	dxSt(t, b.at(b.dst, i, disp)) // after every read of dy: dx may be dy
}

// weighDY returns g = dy*w' for dy in dyv and the weight vector at i (plus disp bytes), read
// with ld: dy*w, or dy*(w + c) with c in one (Offset), or dy itself without a weight.
func (b *bgen) weighDY(dyv VecVirtual, i GPVirtual, disp int, ld func(Mem, VecVirtual), one VecVirtual) VecVirtual {
	if b.mode == spec.Unweighted {
		return dyv
	}
	s := b.s
	g, wv := s.vec(), s.vec()
	ld(b.atW(i, disp), wv)
	if b.mode == spec.Offset {
		VADDPS(one, wv, wv)
	}
	VMULPS(wv, dyv, g)
	return g
}

// weighDYScalar is weighDY for one element, its weight at w, c in lane 0 of one.
func (b *bgen) weighDYScalar(dyv VecVirtual, w Mem, one Op) VecVirtual {
	if b.mode == spec.Unweighted {
		return dyv
	}
	g, wv := XMM(), XMM()
	VMOVSS(w, wv)
	if b.mode == spec.Offset {
		VADDSS(one, wv, wv)
	}
	VMULSS(wv, dyv, g)
	return g
}

// gradOut does op (set or add) with the weight-gradient products q of the vector at i (plus
// disp bytes) and the row's P, read with ld and written with st.
func (b *bgen) gradOut(op gradOp, q VecVirtual, i GPVirtual, disp int, ld func(Mem, VecVirtual), st func(VecVirtual, Mem)) {
	at := Mem{Base: b.pAcc, Index: i, Scale: 4, Disp: disp}
	switch op {
	case opSet:
		st(q, at)
	case opAdd:
		p := b.s.vec()
		ld(at, p)
		VADDPS(q, p, p)
		st(p, at)
	}
}

// gradOutScalar is gradOut for one element, q, whose P is at p.
func (b *bgen) gradOutScalar(op gradOp, q VecVirtual, p Mem) {
	switch op {
	case opSet:
		VMOVSS(q, p)
	case opAdd:
		VADDSS(p, q, q)
		VMOVSS(q, p)
	}
}

// dxScalar is dxVec for the one element i, in scalar instructions (AVX2's partial vectors): the
// same operations in the same order, so the same bits.
func (b *bgen) dxScalar(op gradOp, i GPVirtual) {
	if b.center {
		b.centeredDxScalar(op, i)
		return
	}
	at := func(base GPVirtual) Mem { return Mem{Base: base, Index: i, Scale: 4} }
	xv, dyv := XMM(), XMM()
	VMOVSS(at(b.x), xv)
	VMOVSS(at(b.dy), dyv)
	g := b.weighDYScalar(dyv, at(b.w), b.onex)
	t := XMM()
	VMULSS(b.sx, xv, t)
	VSUBSS(t, g, t)
	VMULSS(b.invx, t, t)
	if op != opNone {
		q := XMM()
		VMULSS(b.invx, xv, q)
		VMULSS(q, dyv, q)
		b.gradOutScalar(op, q, at(b.pAcc))
	}
	VMOVSS(t, at(b.dst)) // after every read of dy: dx may be dy
}

// pipeLoop emits the pipe of the dx pass (FlagPipe; the Go side sets it on the CPUs of
// streamrule.BackwardPipe for d a multiple of 64 and dx rows 32-byte aligned, tested again here,
// d above zero too), in two copies: dx out with non-temporal stores (FlagNT), and in place with
// ordinary ones (dxSt). When the call has a row after this one, one loop writes this row's dx and
// does its weight-gradient operation op, and also forms the next row's two sums, ss in registers
// and c at accSlot[1] (AVX2 has registers for the one, not both), block by block in the order of
// the sum passes (+0 plus the first product is that product); ss goes to accSlot[0] at the end.
// That row then skips both sum passes (piped). Each row from memory is read once in this loop and
// once more from the cache, where the three passes of a row without the pipe read x three times
// and dy twice, while the next row waited. The next row's elements are loaded before this row's
// dx (and P) of the same elements is stored: in place that store is to dy, and either way a load
// after a store a row before at the same offset in the page waits on it (the other order measured
// slower than no pipe). Each block prefetches aheadBytes further on in the next row's x and dy
// (past its end the row after: a prefetch never faults).
func (b *bgen) pipeLoop(op gradOp, name string, invv, sv, one VecVirtual, dxSt func(VecVirtual, Mem)) {
	s := b.s
	no := name + "nopipe"
	TESTL(U32(spec.FlagPipe), b.flags())
	JZ(LabelRef(no))
	d := b.pipeRowChecks(no)
	TESTQ(d, d) // the loop tests i < d after its first block
	JZ(LabelRef(no))
	Comment("The pipe: this row's dx and the next row's sums in one loop.")
	nx, ndy := GP64(), GP64()
	MOVQ(b.x, nx)
	ADDQ(b.strideB, nx)
	MOVQ(b.dy, ndy)
	ADDQ(b.strideB, ndy)
	ss := make([]VecVirtual, block/s.lanes)
	for k := range ss {
		ss[k] = s.vec()
		s.zero(ss[k])
	}
	cs := b.accSlot[1]
	z := s.vec()
	s.zero(z)
	for k := range ss {
		VMOVUPS(z, cs.Offset(k*s.vbytes()))
	}
	i := GP64()
	XORQ(i, i)
	full := func(m Mem, v VecVirtual) { VMOVUPS(m, v) }
	fullSt := func(v VecVirtual, m Mem) { VMOVUPS(v, m) }
	loop := func(l string) {
		Label(l)
		for _, p := range []GPVirtual{nx, ndy} {
			for off := 0; off < block*4; off += 64 {
				prefetch(b.at(p, i, aheadBytes+off))
			}
		}
		for k := range ss {
			disp := k * s.vbytes()
			xv, sq := s.vec(), s.vec()
			VMOVUPS(b.at(nx, i, disp), xv)
			VMULPS(xv, xv, sq)
			VADDPS(sq, ss[k], ss[k])
			g := b.gradAt(ndy, i, disp, full, one)
			VMULPS(xv, g, g)
			VADDPS(cs.Offset(disp), g, g)
			VMOVUPS(g, cs.Offset(disp))
			b.dxVec(op, i, disp, invv, sv, one, full, fullSt, dxSt)
		}
		ADDQ(U32(block), i)
		CMPQ(i, b.d())
		JB(LabelRef(l))
		JMP(LabelRef(name + "piped"))
	}
	b.formLoops(name+"pipeloop", loop)
	Label(name + "piped")
	for k, a := range ss {
		VMOVUPS(a, b.accSlot[0].Offset(k*s.vbytes()))
	}
	MOVQ(U32(1), b.piped)
	JMP(LabelRef(b.bl("rowdone" + opNames[op])))
	Label(no)
}
