package main

import (
	"github.com/gosimd/rmsnorm/asm/internal/spec"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// hasOneRow reports whether the function of v starts with the one-row path (oneRow): the
// functions of float32 rows into float32 rows. Forward, Norm.Forward and the plain Apply, with or
// without a residual, call the row function (rowFunc) for a single row of their own; the one-row
// path takes the single rows that come with a job: with Inv, rows strided apart, row r of a call
// split by Workers, the rows after a float64 path's restart, and with flagRows every row of a call.
func (g *gen) hasOneRow() bool {
	return g.v.Format == spec.F32 && !g.v.Layer && !g.cvt
}

// oneRow emits the path of the short calls that come with a job (a single row of Forward's
// kind goes to the row function instead: rowFunc): one row (to = from+1), d a multiple of 64,
// a plain weight, no residual, no flags (no 1+w, no prefetch or non-temporal stores), Inv or not;
// and, with flagRows alone (the Go side sets it for the in-cache calls streamrule.Rows picks: rows
// of at most spec.RowsMax, or up to spec.GroupMax where a rule says so, or longer than
// spec.GroupMax), every row of the call, one at a time, instead of the general path's groups of
// four or its own rows; with flagRows, flagNT and flagPF (streamed calls of rows of at most
// spec.RowsMax, or up to spec.GroupMax, where the rule says so), every row of the call with
// non-temporal stores and a prefetch ahead in the sum pass. Anything else jumps to general,
// the function's usual path. The row takes the same operations in the same order as on that path
// (the same blocks, partial, finish1, t and its range, inv, and (x*inv)*w), so the bits are the
// same; what it saves is the bookkeeping of groups, tails, weight forms and memory modes, and the
// stack slots that carry it. Measured on an Emerald Rapids (one row called in a loop), the
// AVX-512 function took 19.5 ns at 1x128 with the general path alone and 15.1 with this one,
// where a function with only this path's loops takes 13.8 ns and the bench-anchors C kernel
// 13.9; Forward on the AVX2 function went from 29.1 to 25.2 ns, and from 385 to 368 at 1x4096
// (bench/results/intel-emerald-rapids.txt).
func (g *gen) oneRow(general string) {
	Comment("One row (or, with flagRows, every row of the call: alone in cache, with flagNT and flagPF streamed), d a multiple of 64, a plain weight, no residual: the short path.")
	from := Load(Param("from"), GP64()).(GPVirtual)
	to := GP64()
	MOVQ(g.to(), to)
	CMPQ(g.field(spec.Job.Res), U8(0))
	JNE(LabelRef(general))
	fl := GP32()
	MOVL(g.flags(), fl)
	TESTL(fl, fl)
	JNZ(LabelRef("rowsflag"))
	n := GP64()
	MOVQ(to, n)
	SUBQ(from, n)
	CMPQ(n, U8(1))
	JNE(LabelRef(general))
	g.rowPath("one", general, from, to, rowSingle)

	// With flags, rows to do (not the empty range of the float64 path's restart after a job's
	// last row). flagRows alone: the same, looped over the rows. A copy of its own, so that the
	// single row pays nothing for the loop (measured: 0.3-0.9 ns more at 1x128 with one copy for
	// both).
	Label("rowsflag")
	CMPQ(from, to)
	JAE(LabelRef(general))
	CMPL(fl, U32(spec.FlagRows))
	JNE(LabelRef("streamflag"))
	g.rowPath("rows", general, from, to, rowsInCache)

	// flagRows with flagNT and flagPF (streamed rows of at most spec.RowsMax or a rule's Short,
	// streamrule's RowRule.Stream): the loop again, its sum pass prefetching rowsAheadBytes ahead, dst written
	// with non-temporal stores.
	Label("streamflag")
	CMPL(fl, U32(spec.FlagRows|spec.FlagNT|spec.FlagPF))
	JNE(LabelRef(general))
	g.rowPath("stream", general, from, to, rowsStreamed)
}

// rowsAheadBytes is how far ahead of its loads the sum pass of streamed rows on the one-row path
// (rowsStreamed) prefetches them. Measured on a Zen 3 (the one CPU whose rule streams rows this
// way: see streamrule.Rows), Forward out of place, a scratch copy of the loop against Forward
// (the kernel's groups), alternated in one process, 25 rounds, the median of the rounds' time ratios in
// three runs: 65536x64 0.74-0.76 at 4, 8 and 16 KiB ahead alike; 32768x128 4 KiB 0.94-0.95,
// 8 KiB 0.93-0.95, 16 KiB 0.91-0.95, but 1 KiB 1.01-1.02 and 2 KiB 0.96-1.01 (two and four rows
// of 128 ahead: the hardware's own prefetches are that far already).
const rowsAheadBytes = 8192

// rowsMode is how the one-row path's code for rows runs: a single row, every row of a call in
// cache, or every row of a streamed call.
type rowsMode int

const (
	rowSingle    rowsMode = iota // the call's one row
	rowsInCache                  // flagRows alone: every row of the call
	rowsStreamed                 // flagRows, flagNT, flagPF: every row, prefetched, non-temporal stores
)

// rowPath emits the rows of the one-row path from row from: the row alone, or every row up to to
// (mode). Its labels start with p.
func (g *gen) rowPath(p, general string, from, to GPVirtual, mode rowsMode) {
	loop := mode != rowSingle
	d := GP64()
	MOVQ(g.d(), d)
	TESTQ(U32(block-1), d)
	JNZ(LabelRef(general))
	TESTQ(d, d) // never 0 here (the entry points reject it), but 0 would pass the test above
	JZ(LabelRef(general))
	w := GP64()
	MOVQ(g.field(spec.Job.W), w)
	TESTQ(w, w)
	JZ(LabelRef(general))

	// The row from of x and dst, and with loop the bytes between rows.
	r := rowRegs{d: d, w: w, x: GP64(), dst: GP64(), from: from, to: to}
	t := GP64()
	MOVQ(g.field(spec.Job.X), r.x)
	MOVQ(g.field(spec.Job.Dst), r.dst)
	if loop {
		r.sx, r.sd = GP64(), GP64()
		MOVQ(g.field(spec.Job.Stride), r.sx)
		SHLQ(U8(2), r.sx)
		MOVQ(r.sx, t)
		IMULQ(from, t)
		ADDQ(t, r.x)
		MOVQ(g.field(spec.Job.DstStride), r.sd)
		SHLQ(U8(2), r.sd)
		MOVQ(r.sd, t)
		IMULQ(from, t)
		ADDQ(t, r.dst)
	} else {
		MOVQ(g.field(spec.Job.Stride), t)
		IMULQ(from, t)
		LEAQ(Mem{Base: r.x, Index: t, Scale: 4}, r.x)
		MOVQ(g.field(spec.Job.DstStride), t)
		IMULQ(from, t)
		LEAQ(Mem{Base: r.dst, Index: t, Scale: 4}, r.dst)
	}
	if mode == rowsStreamed {
		// The non-temporal stores need dst rows aligned to the vector; the Go side does not check
		// it, so rows that are not take the general path, which streams them its own way.
		TESTQ(U32(g.s.vbytes()-1), r.dst)
		JNZ(LabelRef(general))
		TESTQ(U32(g.s.vbytes()-1), r.sd)
		JNZ(LabelRef(general))
	}
	r.ip = GP64()
	MOVQ(g.inv(), r.ip)
	g.rowBody(p, r, g.eps(), mode, func(bool) { g.rowsReturn(from, mode) })
}

// rowRegs are the registers of the rows of the one-row path (rowBody): d, the weight, the row of
// x and dst being done, and with a loop over rows the bytes between rows (sx, sd), the row's
// index (from) and the end (to). ip is where inv of row from goes (Inv), a register holding nil or
// the address, or none at all (rowFunc, which has no Inv). res, in the row function's residual
// body only, is the residual's row: h = x + res goes there and is normalized in place of x. buf,
// in rowFuncF16Buf only, is the float32 copy of the row the sum pass writes and the scale pass
// reads.
type rowRegs struct {
	d, w, x, dst, sx, sd, from, to, ip, res, buf GPVirtual
	rn                                           bool // RoundNormalized: x*inv rounded to the row's format before the weight (16-bit rows)
}

// rowBody emits the arithmetic of the one-row path for the rows r describes: the sum of squares,
// inv (or the jump to the float64 path's exit) and the scale loop, then ret(true) after the last
// row and, at the exit for a row out of range, ret(false). eps is where the epsilon is read.
func (g *gen) rowBody(p string, r rowRegs, eps Op, mode rowsMode, ret func(ok bool)) {
	loop := mode != rowSingle
	if loop && r.res != nil {
		panic("rowBody: a residual in a loop over rows")
	}
	d, w, x, dst := r.d, r.w, r.x, r.dst

	// float32(d) and its reciprocal, off the sum's critical path: 1/d is exact when d is a power
	// of two, and ss*(1/d) is then ss/d bit for bit.
	fd, rd := XMM(), XMM()
	VMOVSS(constOne, fd) // a load, which writes the whole register: no dependency on its old value
	VCVTSI2SSQ(d, fd, fd)
	VMOVSS(constOne, rd)
	VDIVSS(fd, rd, rd)

	if loop {
		Label(p + "row")
	}
	Comment("Sum of squares: element i goes to partial i%64; the first block sets the partials.")
	acc := g.acc
	vb := g.s.vbytes()
	ahead := func(m Mem) { // streamed rows: the lines of the block's bytes rowsAheadBytes on
		if mode == rowsStreamed {
			for off := 0; off < block*4; off += 64 {
				m.Disp = rowsAheadBytes + off
				prefetch(m)
			}
		}
	}
	// h = x + res, as the residual pass of the general path forms it (addResidual), stored to res.
	addRes := func(v VecVirtual, m Mem) {
		if r.res != nil {
			m.Base = r.res
			VADDPS(m, v, v)
			VMOVUPS(v, m)
		}
	}
	// x's vectors: vs bytes each (vb for float32 rows, half that for 16-bit ones), widened by load.
	vs, eb := g.vstep(), uint8(g.eb)
	// bfloat16 rows on AVX-512 widen in even and odd halves, as the job's path does (evenodd.go),
	// and put the partials back in order after the pass.
	eo := g.evenOdd()
	if eo {
		if r.res != nil || r.buf != nil || loop {
			panic("rowBody: even and odd halves with a residual, a copy or a loop over rows")
		}
		g.highW = g.s.vec()
		VPBROADCASTD(bfConsts[g.s.name].high, g.highW)
		defer func() { g.highW = nil }()
	}
	ahead(Mem{Base: x})
	for k, a := range acc {
		if eo {
			if k%2 == 0 {
				g.accumulateHalves(acc, k, Mem{Base: x, Disp: vs * k}, true)
			}
			continue
		}
		g.load(Mem{Base: x, Disp: vs * k}, a)
		addRes(a, Mem{Base: x, Disp: vb * k})
		if r.buf != nil {
			VMOVUPS(a, Mem{Base: r.buf, Disp: vb * k})
		}
		VMULPS(a, a, a)
	}
	i := GP64()
	MOVQ(U32(block), i)
	sumLoop, summed := p+"sumloop", p+"summed"
	CMPQ(i, d)
	JAE(LabelRef(summed))
	Label(sumLoop)
	ahead(Mem{Base: x, Index: i, Scale: 4})
	v := g.s.vec()
	for k, a := range acc {
		if eo {
			if k%2 == 0 {
				g.accumulateHalves(acc, k, Mem{Base: x, Index: i, Scale: eb, Disp: vs * k}, false)
			}
			continue
		}
		g.load(Mem{Base: x, Index: i, Scale: eb, Disp: vs * k}, v)
		addRes(v, Mem{Base: x, Index: i, Scale: 4, Disp: vb * k})
		if r.buf != nil {
			VMOVUPS(v, Mem{Base: r.buf, Index: i, Scale: 4, Disp: vb * k})
		}
		g.square(a, v, false) // float16 on AVX-512 adds with an FMA, as the job's path does (fusedSquares)
	}
	ADDQ(U32(block), i)
	CMPQ(i, d)
	JB(LabelRef(sumLoop))
	Label(summed)
	if eo {
		g.unpermuteEvenOdd(acc)
	}
	ss := g.s.finish1(g.s.partial(acc))

	Comment("t = ss/d + eps (ss*(1/d) when d is a power of two, the same bits); t outside [2^-100, MaxFloat32] returns the row for the float64 path.")
	tt := XMM()
	div, divided, fail := p+"div", p+"divided", p+"float64"
	m := GP64()
	LEAQ(Mem{Base: d, Disp: -1}, m)
	TESTQ(d, m)
	JNZ(LabelRef(div))
	VMULSS(rd, ss, tt)
	JMP(LabelRef(divided))
	Label(div)
	VDIVSS(fd, ss, tt)
	Label(divided)
	VADDSS(eps, tt, tt)
	VUCOMISS(constLo, tt)
	JCS(LabelRef(fail))
	VUCOMISS(constMax, tt)
	JHI(LabelRef(fail))
	VSQRTSS(tt, tt, tt)
	inv := XMM()
	VMOVSS(constOne, inv)
	VDIVSS(tt, inv, inv)

	scale := p + "scale"
	if r.ip != nil {
		Comment("Report 1/rms if asked.")
		TESTQ(r.ip, r.ip)
		JZ(LabelRef(scale))
		VMOVSS(inv, Mem{Base: r.ip, Index: r.from, Scale: 4})
	}
	Label(scale)

	switch {
	case r.res != nil:
		Comment("y = (h*inv)*w, rounded after each multiply: h, stored to res, in place of x.")
	case r.buf != nil:
		Comment("y = (x*inv)*w, rounded after each multiply: x from the float32 copy.")
	default:
		Comment("y = (x*inv)*w, rounded after each multiply.")
	}
	src := x
	if r.res != nil {
		src = r.res
	}
	if g.out() == spec.BF16 { // the rounding's constants, and the avx512bf16 functions' VPERMW indexes
		g.loadBF16Consts(r.rn) // 0xffff0000 for RoundNormalized's rounding alone
		g.loadWidenConsts()
	}
	iv := g.s.vec()
	VBROADCASTSS(inv, iv)
	// scaleLoop emits the scale pass, its labels starting with lp.
	scaleLoop := func(lp string) {
		XORQ(i, i)
		// 16-bit rows on AVX-512 widen x one iteration ahead, as the job's path does (convertsAhead):
		// the first iteration's here, the next one's after the products of this one.
		var xs []VecVirtual
		if g.in16() && g.s == avx512 && r.buf == nil {
			xs = make([]VecVirtual, unroll)
			for k := range xs {
				xs[k] = g.s.vec()
				g.loadAt(Mem{Base: src, Index: i, Scale: eb, Disp: vs * k}, k, xs[k])
			}
		}
		sloop := lp + "scaleloop"
		Label(sloop)
		ts := make([]VecVirtual, unroll)
		for k := range ts {
			ts[k] = g.s.vec()
			if xs != nil {
				VMULPS(iv, xs[k], ts[k])
			} else if r.buf != nil {
				VMULPS(Mem{Base: r.buf, Index: i, Scale: 4, Disp: vb * k}, iv, ts[k])
			} else {
				g.mulLoad(Mem{Base: src, Index: i, Scale: eb, Disp: vs * k}, iv, ts[k])
			}
		}
		if xs != nil {
			// Only if the row has another iteration (d is a multiple of 64): never past the row.
			next, last := GP64(), lp+"last"
			LEAQ(Mem{Base: i, Disp: unroll * g.s.lanes}, next)
			CMPQ(next, d)
			JAE(LabelRef(last))
			for k := range xs {
				g.loadAt(Mem{Base: src, Index: i, Scale: eb, Disp: vs * (unroll + k)}, k, xs[k])
			}
			Label(last)
		}
		store := func(v VecVirtual, m Mem) { VMOVUPS(v, m) }
		if mode == rowsStreamed {
			store = func(v VecVirtual, m Mem) { VMOVNTPS(v, m) }
		}
		if r.rn { // round16(x*inv), as roundIfRN on the job's path
			if g.cvt {
				g.roundCvt(ts)
			} else {
				for _, t := range ts {
					g.roundTo(t, g.s.vec(), t)
				}
			}
		}
		for k, tv := range ts {
			VMULPS(Mem{Base: w, Index: i, Scale: 4, Disp: vb * k}, tv, tv)
			switch {
			case !g.out16():
				store(tv, Mem{Base: dst, Index: i, Scale: 4, Disp: vb * k})
			case k%2 == 1: // 16-bit rows go out a pair of vectors at a time, as on the job's path
				g.storePair(ts[k-1], tv, Mem{Base: dst, Index: i, Scale: eb, Disp: vs * (k - 1)})
			}
		}
		ADDQ(U32(unroll*g.s.lanes), i) // a whole number of steps per row: d is a multiple of 64
		CMPQ(i, d)
		JB(LabelRef(sloop))
	}
	if g.flagsChecked() {
		// A row the function read MXCSR for (rowFuncBF16 with cvt: rowFlags): the loop without
		// the classification first, then its flags; when one is set, the row again, classified
		// (bf16flags.go).
		checked, scaled := p+"checked", p+"scaled"
		TESTL(U32(1), g.mx.Offset(4))
		JZ(LabelRef(checked))
		g.fast = true
		scaleLoop(p + "fast")
		g.fast = false
		g.takeFlags(scaled, "A NaN or a subnormal among the lanes narrowed, or one before them: the row again, classified.")
		Label(checked)
		scaleLoop(p)
		Label(scaled)
	} else {
		scaleLoop(p)
	}
	if r.from != nil {
		INCQ(r.from)
	}
	if loop {
		ADDQ(r.sx, x)
		ADDQ(r.sd, dst)
		CMPQ(r.from, r.to)
		JB(LabelRef(p + "row"))
	}
	ret(true)

	Label(fail)
	ret(false)
}

// rowFunc emits prefix+"Row", the function the Go side calls for one float32 row in cache with a
// plain weight and no Inv (Forward, Norm.Forward and Apply of a single row): the one-row path's
// row, taking its pointers, d and eps as arguments instead of from a job (and Apply's row with a
// residual: below). Such a call is mostly
// overhead (a row of 128 is 8 vectors), and the job is most of it: the caller stores its 17
// fields and the function loads them back, which puts a store-to-load forwarding on the way to
// every pointer; with the arguments it loads five words its caller stored. Measured on a Zen 5,
// one row called in a loop: alternated in one process (min ns of 15 rounds), Forward 1x128 19.1
// through the job against 10.4 for Forward's checks and a call of a scratch copy of this function
// (the function alone 8.3), 1x256 23.8 against 15.1, 1x1024 57.3 against 51.7, 1x4096 160
// against 155; BenchmarkOverhead of the builds before and after, run in turn ten times (min ns),
// Forward on avx512 1x128 18.2 -> 12.6, 1x1024 58.9 -> 53.8, on avx2 1x128 19.8 -> 14.9, 1x4096
// 258.6 -> 240.0, and 32x128, which does not take it, unchanged (benchstat). It returns rowNone,
// having written nothing, when d is not a positive multiple of 64, or, for a row without a
// residual, when t = ss/d + eps is out of range (the row then takes the job's path, and the
// float64 path from there).
//
// With res not nil the row is Apply's with a residual (the pre-norm block's call for one token):
// h = x + res, formed and stored to res in the sum pass as the residual pass of the general path
// forms it (addResidual: the same addition, the same order), and normalized in place of x. A
// row whose t is out of range then returns rowHeld: res holds h and nothing else is written, so
// the Go side finishes it on the float64 path from res (job.finish), as it does the rows the
// job's functions hand back.
func rowFunc(s *isa, prefix string) {
	g, r := rowStart(s, prefix, "", spec.F32)
	res := Load(Param("res"), GP64()).(GPVirtual)
	TESTQ(res, res)
	JNZ(LabelRef("residual"))
	g.rowBody("one", r, epsOf(), rowSingle, rowReturn(spec.RowNone))

	Label("residual")
	Comment("With a residual: h = x + res, stored to res, normalized in place of x.")
	r.res = res
	g.rowBody("res", r, epsOf(), rowSingle, rowReturn(spec.RowHeld))
	Label("reject")
	returnInt(spec.RowNone)
}

// rowFuncF16 emits prefix+"RowF16", the row function of one binary16 row in cache with a plain
// weight (ForwardF16 and Norm.ForwardF16 of a single row; res must be nil): rowBody on 16-bit
// rows, the row's vectors widened by VCVTPH2PS and narrowed in pairs by VCVTPS2PH, with the
// operations and the order of the job's path (its sum pass's partials, an FMA per square on
// AVX-512 as fusedSquares, (x*inv)*w), so the bits are the same. Such a call on that path
// spends most of a short row on the job and the general path's bookkeeping, as Forward's did
// before rowFunc. It returns rowNone, having written nothing, when d is not a positive multiple
// of 64 or t = ss/d + eps is out of range (the row then takes the job's path).
//
// With rn it emits prefix+"RowF16RN", the row of a Norm with RoundNormalized: x*inv rounded to
// binary16 (VCVTPS2PH and back) before the weight, as roundIfRN on the job's path.
func rowFuncF16(s *isa, prefix string, rn bool) {
	g, r := rowStart(s, prefix, "F16"+rnSuffix(rn), spec.F16)
	r.rn = rn
	g.rowBody("one", r, epsOf(), rowSingle, rowReturn(spec.RowNone))
	Label("reject")
	returnInt(spec.RowNone)
}

// rowFuncBF16 emits prefix+"RowBF16", rowFuncF16 for bfloat16 rows (ForwardBF16,
// Norm.ForwardBF16 and ApplyBF16 of a single row in cache with a plain weight): the sum pass widens
// x in even and odd halves and puts the partials back in order (evenodd.go), the scale pass widens
// x one iteration ahead and narrows pairs of vectors as the job's path does (with cvt,
// VCVTNE2PS2BF16 with every pair classified first, its subnormal and NaN lanes rounded exactly:
// packCvt; else the integer rounding), so the bits are the same. With cvt, a row longer than
// spec.GroupMax out of place takes the loop without the classification first and reads MXCSR's
// flags after it, redoing a flagged row with the classification, as such a row does on the job's
// path (rowFlags, bf16flags.go). Measured on a Zen 5 (the test binaries of v0.2.17 and of this
// function alternated eight times, benchstat), ForwardBF16 with avx512+bf16: 1x128 30.5 -> 22.3 ns
// (-27%), 1x1024 81.4 -> 71.3 (-12%), 1x4096 209.8 -> 197.2 (-6%); with avx512 alone (the
// integer rounding, forced) 1x128 -10%, 1x512 -14%, 1x1024 -11%, 1x4096 -7%. A first version
// that classified every row took 8% longer at 1x4096 than the job's path. AVX2 has none: its
// job's path unpacks the row's words out of order in both passes (unpacks, scaleUnpacks), which
// this body does not, and no AVX2-only machine was at hand to measure a row function against it.
//
// With rn it emits prefix+"RowBF16RN", the row of a Norm with RoundNormalized: x*inv rounded to
// bfloat16 before the weight, as roundIfRN on the job's path (with cvt, a pair of vectors through
// packCvt and widened back; the loop without the classification then takes rows longer than
// rnFlagsAbove, as a row alone with RoundNormalized does on the job's path).
func rowFuncBF16(s *isa, prefix string, cvt, rn bool) {
	g, r := rowStart(s, prefix, "BF16"+rnSuffix(rn), spec.BF16)
	g.cvt, r.rn = cvt, rn
	if g.flagsChecked() {
		g.mx = AllocLocal(8)
		g.rowFlags(r)
	}
	g.rowBody("one", r, epsOf(), rowSingle, rowReturn(spec.RowNone))
	Label("reject")
	returnInt(spec.RowNone)
	g.flushCold()
}

// rnSuffix is the suffix of the row kinds of RoundNormalized (spec.RowKinds).
func rnSuffix(rn bool) string {
	if rn {
		return "RN"
	}
	return ""
}

// rowStart begins the row function prefix+"Row"+kind (spec.RowKinds) of rows in format f: its
// gen, and the registers of its d, x, dst and w, after a jump to reject unless d is a positive
// multiple of 64.
func rowStart(s *isa, prefix, kind string, f spec.Format) (*gen, rowRegs) {
	fl := NOSPLIT
	if kind == "F16Buf" {
		fl = 0 // a frame of 16 KiB: the function checks its stack (morestack) as Go functions do
	}
	TEXT(prefix+"Row"+kind, fl, spec.RowAvoSig)
	for _, l := range spec.RowDoc(prefix+"Row"+kind, kind) {
		Comment(l)
	}
	g := &gen{s: s, v: spec.Variant{Format: f}, eb: f.Bytes()}
	g.allocAcc()
	r := rowRegs{d: Load(Param("d"), GP64()).(GPVirtual)}
	TESTQ(U32(block-1), r.d)
	JNZ(LabelRef("reject"))
	TESTQ(r.d, r.d)
	JZ(LabelRef("reject"))
	r.x = Load(Param("x"), GP64()).(GPVirtual)
	r.dst = Load(Param("dst"), GP64()).(GPVirtual)
	r.w = Load(Param("w"), GP64()).(GPVirtual)
	return g, r
}

// f16BufMax is the longest row rowFuncF16Buf takes: its copy of the row, in float32, is on its
// stack, 16 KiB.
const f16BufMax = 4096

// rowFuncF16Buf emits prefix+"RowF16Buf", rowFuncF16's row through a float32 copy on the stack
// (AVX-512), for the rows streamrule.F16Buffer gives it: the sum pass stores each widened vector
// of x there beside squaring it (the store port is idle in that pass), and the scale pass reads
// the copy instead of widening x again, so a row takes two conversions per vector instead of
// three (VCVTPH2PS and VCVTPS2PH share the adder-side pipes with each other on Zen 5; see
// bench/results/amd-zen5-turin.txt). The copy is the widened values themselves, so the bits are
// rowFuncF16's. Rows longer than f16BufMax return rowNone, having written nothing.
func rowFuncF16Buf(s *isa, prefix string) {
	g, r := rowStart(s, prefix, "F16Buf", spec.F16)
	buf := AllocLocal(4*f16BufMax + 64)
	CMPQ(r.d, U32(f16BufMax))
	JA(LabelRef("reject"))
	Comment("The copy starts on a 64-byte boundary: a vector per cache line.")
	r.buf = GP64()
	buf.Disp += 63
	LEAQ(buf, r.buf)
	ANDQ(I32(-64), r.buf)
	g.rowBody("buf", r, epsOf(), rowSingle, rowReturn(spec.RowNone))
	Label("reject")
	returnInt(spec.RowNone)
}

// epsOf is the row function's eps argument, as a memory operand.
func epsOf() Mem {
	b, err := Param("eps").Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}

// rowReturn is rowBody's ret for the row function: rowDone after the row, else out (the result
// of a row that needs the float64 path).
func rowReturn(out int) func(ok bool) {
	return func(ok bool) {
		VZEROUPPER()
		v := out
		if ok {
			v = spec.RowDone
		}
		returnInt(v)
	}
}

// returnInt stores v as the row function's result and returns.
func returnInt(v int) {
	b, err := ReturnIndex(0).Resolve()
	if err != nil {
		panic(err)
	}
	MOVQ(U32(v), b.Addr)
	RET()
}

// rowsReturn returns row from, the first one not done, after fencing the non-temporal stores of
// streamed rows.
func (g *gen) rowsReturn(from GPVirtual, mode rowsMode) {
	if mode == rowsStreamed {
		SFENCE() // order the non-temporal stores before whatever the caller does next
	}
	VZEROUPPER()
	Store(from, ReturnIndex(0))
	RET()
}
