package main

import (
	"fmt"

	"github.com/gosimd/rmsnorm/asm/internal/spec"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// A kernel function runs rows one at a time, or four at a time when they are short (at most
// spec.GroupMax floats, or spec.LongGroupMax for the AVX-512 functions under spec.FlagGroups, and
// not with a residual: a group that meets a row needing the float64 path would have updated res
// for the rows after it; the AVX-512 Layer functions group under spec.FlagGroups only, see
// layer.go). Its parts are emitted once each, but for the sum pass, which comes in two:
//
//	row:    pick a group of four rows or one row
//	sum:    the sum of squares of one row, looped over the rows of a group; each row's partly
//	        reduced partials go to a stack slot (group) or straight on (one row)
//	addsum: with a residual (res not nil), the same for one row of h = x + res, stored to res
//	inv:    the rest of the halving tree and inv = 1/sqrt(ss/d + eps), for one row in scalar
//	        instructions or for four rows in one vector; a row outside [2^-100, MaxFloat32] returns
//	        its index for the float64 path (a group with one is redone a row at a time)
//	scale:  y = (x*inv)*w for each row done, with inv read from a stack slot
//
// The scale pass comes in three memory modes (ordinary, prefetching the rows ahead, and prefetching
// with non-temporal stores), chosen by the job's flags once per row, and each mode's loops in three
// weight forms, chosen by w and flagOffset (spec.Variant.Body); the non-temporal loop of 16-bit
// rows is one loop for all three (byFlag), and the functions of hardwareRows have a second set of
// non-temporal loops, without the prefetch. The sum
// pass of 16-bit rows prefetches two rows ahead under flagPF; that of float32 rows on this path
// never does (the scale pass brings the next row in). The AVX2 functions of float32 rows into
// float32 or float16 rows and of float16 rows into float16, and the AVX-512 ones of float32 rows
// into float32, have a fourth mode, the pipe (FlagPipe, set on Zen 3 and on Sapphire Rapids and
// Emerald Rapids; see streamrule.Pipe): one loop scales a row and sums the next one (LayerNorm's:
// with Center). Every other piece is shared.
//
// The two functions of float32 rows into float32 rows start with a path of their own for the
// commonest short call, one row with a plain weight (onerow.go): a second, plainer copy of the
// sum pass, inv and the scale loop, with the same operations in the same order, which also takes
// every row of a call with flagRows, one at a time: alone in cache, or with flagNT and flagPF
// streamed (non-temporal stores, its sum pass prefetching rowsAheadBytes ahead).

const (
	block  = 64 // elements of a row that fill the 64 partial sums once
	group  = 4  // rows per group on the short-row path
	unroll = 4  // vectors per iteration of the scale loop

	// byFlag, as the weight form of a scale loop, tests w and flagOffset per iteration (see
	// weighLoop).
	byFlag spec.Mode = -1
)

// prefetch is the instruction that brings the rows ahead in. PREFETCHT1 and PREFETCHNTA measured
// the same within noise at 2048x4096 and 16384x4096, float32 and bfloat16, on a Zen 5 (benchstat,
// five interleaved runs), and PREFETCHNTA 4.5% slower at 32768x128: T0 it is.
var prefetch = PREFETCHT0

// aheadBytes is how far ahead of its loads a loop that reads rows from memory prefetches them, in
// bytes, where it does: the pipe (FlagPipe) its next row, and the backward's sum passes under
// FlagAhead (whose CPUs also take FlagNext, with which the dx pass, when dx goes out with
// non-temporal stores, prefetches the next row; see bgen.dxLoop). The hardware prefetchers alone
// leave memory idle part of the time there. The backward's pipe (bgen.pipeLoop) prefetches its
// next row as far ahead; streamrule.BackwardPipe has what that measured. For the first two, on a
// Zen 3 (the only CPU that took either then), the function with the prefetch against the one
// without, alternated in one process (the median of the pairs' time ratios, new/old; the same
// function against itself gave 0.99-1.02):
//
//   - the pipe, Forward, 60 pairs, three runs: PREFETCHT0 1024 bytes ahead 2048x4096
//     0.894-0.941, 16384x4096 0.946-0.970, 512x8192 0.902-0.921, 8192x1024 0.970-0.982;
//     PREFETCHNTA the same within noise; 512 bytes ahead 0.935 and 0.983, 2048 0.905 and 0.994,
//     4096 0.991 and 1.037 (2048x4096, 16384x4096);
//   - Backward with Inv, 40 pairs, the sum pass's prefetches of x and dy alone, without and with
//     DW: 1024 bytes ahead 2048x4096 0.938 and 0.947 in one run, 0.99-1.07 in three later ones,
//     16384x4096 0.86-0.92, 32768x128 0.89-1.0; 2048 ahead 0.960-0.972, 0.860-0.883,
//     0.838-0.871; 512 ahead 0.992-1.005, 0.913-0.926, 0.964-0.985; PREFETCHNTA 1024 ahead the
//     same as T0 within noise. For the whole of FlagAhead see streamrule.Ahead.
const aheadBytes = 1024

// pipePrefetch is how much of the next row, in bytes, LayerNorm's centered pass prefetches in a
// call that pipes (FlagPipe with FlagCenter; every row of it, the first too, is followed by the
// pipe unless it is the last): the pipe's own prefetches bring in the rest, 1 KiB ahead of its
// loads. All of a long row, prefetched while the row before it is read from the cache, is
// more than the 32 KiB L1d of Zen 3 (the CPU this was measured on) holds beside it and the weight and
// bias; none leaves memory idle through the pass, which on short rows is most of the row's time.
// Measured on that Zen 3, LayerNorm (Center, weight, bias), Forward, the avx2 kernel, pipe on
// against off alternated in one process, 60 pairs, the median of the pairs' time ratios (on/off),
// two runs each: the whole row 2048x4096 0.942-0.999, 16384x4096 0.988-0.993, 512x8192
// 0.926-0.929, 8192x1024 0.906-0.928; none 0.852-0.901, 0.796, 0.824-0.831, 0.984-0.986; 1 KiB
// 0.907-0.915, 0.807-0.821, 0.805-0.816, 0.966-1.079; 2 KiB 0.903-0.916, 0.807, 0.797-0.799,
// 0.926-0.962; 4 KiB 0.836-0.919, 0.820-0.826, 0.802-0.809, 0.908-0.913.
//
// Rows of float16 (ForwardF16, whose centered pass otherwise prefetches two rows on, as the sum
// pass of 16-bit rows does) prefetch the first pipePrefetch bytes of the next row the same way.
// That against the first 2 KiB of the row two on, on the same Zen 3, LayerNorm's Norm.ForwardF16,
// pipe on against off, 40 pairs, median ratio, three runs of each build alternated: 2048x4096
// 0.887-0.901 -> 0.853-0.871, 16384x2048 0.993-1.010 -> 0.916-0.957, 16384x1024 and 1024x8192
// the same within noise (0.94-0.96, 0.81-0.86).
const pipePrefetch = 4096

// gen builds one kernel function.
type gen struct {
	s  *isa
	v  spec.Variant
	eb int // bytes per element of x and the residual (4: float32, 2: bfloat16 and binary16); ebOut() for dst

	// lp starts the labels of the sum pass being emitted: "add" for that of residual jobs. ls
	// ends them: "nat" in the in-order copy of a pass for short rows (naturalShort).
	lp, ls string

	// Registers live across the function. With a residual, x holds the job's res and res the
	// job's x: the scale pass reads its rows at x either way, h being stored to res.
	j              GPVirtual // the job
	dst, x, res, w GPVirtual // row `done` of dst, the rows scaled, the rows added; the weight
	strideB        GPVirtual // bytes between row starts in x and res

	// Stack locals.
	done       Mem // the row at dst, x and res
	dstStrideB Mem // bytes between row starts in dst (the job's dstStride)
	fd, rd     Mem // float32(d); 1/d when d is a power of two, else 0
	invs       Mem // inv of the rows being scaled in lanes 0..3 of one packed register
	means      Mem // Layer functions with groups (layerGroups): the group's means, lanes 0..3
	q          Mem // 4 vectors: the partials of a group's rows
	skip, pend Mem // rows to do one at a time after a failed group; rows to scale
	k          Mem // the row being scaled, from 0 to pend
	slotX      Mem // AVX2: the end of a row, copied and zero-padded to a whole block
	slotR      Mem // AVX2, residual: the same for the job's res
	resTail    Mem // AVX2, residual: where h of the copied end goes back to
	tailN      Mem // AVX2: elements in the copied end
	xrRow      Mem // AVX2, 16-bit: the row's x pointer while the sum pass reads the copied end

	// acc are the accumulators of the sum passes, which the pipe and the one-row path (oneRow)
	// fill too.
	acc []VecVirtual

	// zeroW, while a sum pass of bfloat16 rows on AVX2 (unpacks) or an unrolled scale loop of
	// RMSNorm's (scaleUnpacks) is emitted, holds zero words that VPUNPCKLWD and VPUNPCKHWD put
	// under the row's words; packAVX2 leaves out its VPERMQ while it is set.
	zeroW VecVirtual
	// highW, while a sum pass that widens bfloat16 rows in even and odd halves is emitted
	// (evenOdd), holds 0xffff0000 in every lane, which keeps the odd elements of a pair of
	// vectors.
	highW VecVirtual
	// interW, on such a residual pass (the avx512bf16 functions'), holds the VPERMW indexes that
	// interleave the even and odd halves of h back into the row's order (see addHalves).
	interW VecVirtual

	// LayerNorm (spec.Variant.Layer): what the sum pass being emitted adds to the partials, and
	// the row's mean in every lane (+0 without flagCenter) for the centered pass and the scale
	// pass (layer.go).
	op accOp
	mv VecVirtual
	// pfRow, when set, is the row the centered pass prefetches under flagPF instead of the row
	// after it: the backward pass's dy (layer_backward.go).
	pfRow GPVirtual
	// pfAdd, set while the non-temporal scale loops of float32 rows are emitted, holds the row of
	// the rows added (a residual job's x) that prefetchLines brings in beside the next row of h
	// under FlagNext, or 0 (see setPFAdd).
	pfAdd GPVirtual

	bf bfRegs     // AVX-512 bfloat16: the rounding constants
	rc loopRegs   // AVX2 bfloat16: the constants of a scale or conversion loop (holdConsts)
	c  VecVirtual // AVX-512: what the ends of rows add to w (see weightAdd)

	// cvt: bfloat16 is rounded with VCVTNE2PS2BF16 (the avx512bf16 functions, bf16cvt.go). cold
	// holds out-of-line blocks (its fix-ups, and AVX2's NaN paths: packAVX2) until flushCold
	// (bf16cvt.go) places them after the function's RET.
	cvt  bool
	cold []func()
	wide wideRegs // avx512bf16, bfloat16 rows: the VPERMW widening (bf16cvt.go)

	// fast, while the scale loops of flagsChecked are emitted, has packCvt and narrowCvt raise
	// MXCSR's flags instead of classifying their vectors; tail is where the unrolled scale loops
	// being emitted go when done ("scaletail", or fastLoops' check). mx is the stack slot
	// STMXCSR and LDMXCSR go through (bf16flags.go).
	fast bool
	tail string
	mx   Mem

	labels int
}

// label returns a fresh label name starting with p.
func (g *gen) label(p string) string {
	g.labels++
	return fmt.Sprintf("%s%d", p, g.labels)
}

// l returns the name of label name in the sum pass being emitted.
func (g *gen) l(name string) string { return g.lp + name + g.ls }

// add reports whether the sum pass being emitted is that of residual jobs.
func (g *gen) add() bool { return g.lp == "add" }

// field addresses a field of the job.
func (g *gen) field(name string) Mem { return Mem{Symbol: Symbol{Name: name}, Base: g.j} }

func (g *gen) d() Mem     { return g.field(spec.Job.D) }
func (g *gen) eps() Mem   { return g.field(spec.Job.Eps) }
func (g *gen) flags() Mem { return g.field(spec.Job.Flags) }
func (g *gen) inv() Mem   { return g.field(spec.Job.Inv) }
func (g *gen) to() Mem    { return Mem{Symbol: Symbol{Name: "to"}, Base: FramePointer, Disp: 16} }

// kernel emits the function of prefix (s.name, or cvtPrefix with cvt) for v.
func kernel(s *isa, prefix string, v spec.Variant, cvt bool) {
	name := prefix + v.FuncName()
	TEXT(name, NOSPLIT, spec.AvoSig)
	for _, l := range v.Doc(name) {
		Comment(l)
	}
	g := &gen{s: s, v: v, eb: v.Format.Bytes(), cvt: cvt}
	g.locals()
	g.j = Load(Param("j"), GP64()).(GPVirtual)
	if g.hasOneRow() {
		g.allocAcc()
		g.oneRow("general")
		Label("general")
	}
	g.prologue()

	Label("row")
	g.pickRows()
	if g.acc == nil {
		g.allocAcc()
	}
	acc := g.acc
	var p VecVirtual
	if v.Layer {
		p = g.layerSums(acc) // its sum, then its centered squares (layer.go)
	} else {
		p = g.sumRows(acc)
		g.sumAddRow(acc)
	}
	inv := XMM() // the first row's inv, in lane 0, for the scale pass
	if s == avx512 {
		inv = ZMM()
	}
	g.invOne(p, inv)
	g.invGroup(inv) // the RMSNorm functions' groups, and the Layer ones' (layerGroups)
	g.scaleRows(inv)

	g.epilogue()
}

// allocAcc allocates the accumulators of the sum passes. Both leave their partials in the same
// registers for invOne, and the one-row path (oneRow) uses them too.
func (g *gen) allocAcc() {
	g.acc = make([]VecVirtual, block/g.s.lanes)
	for k := range g.acc {
		g.acc[k] = g.s.vec()
	}
}

// epilogue is the label ret: it fences the non-temporal stores when there were any and returns
// the row done, the first one not done. The out-of-line blocks follow it (flushCold).
func (g *gen) epilogue() {
	Label("ret")
	TESTL(U32(spec.FlagNT), g.flags())
	JZ(LabelRef("vzero"))
	SFENCE() // order the non-temporal stores before whatever the caller does next
	Label("vzero")
	VZEROUPPER()
	r := GP64()
	MOVQ(g.done, r)
	Store(r, ReturnIndex(0))
	RET()
	g.flushCold()
}

func (g *gen) locals() {
	// Vectors first, then 8-byte values, then 4-byte ones, so that each is naturally aligned
	// relative to the frame.
	vb := g.s.vbytes()
	g.q = AllocLocal(group * vb)
	if !g.s.masked {
		g.slotX = AllocLocal(block * g.eb)
		g.slotR = AllocLocal(block * g.eb)
	}
	g.invs = AllocLocal(g.s.packedBytes)
	if g.v.Layer {
		g.means = AllocLocal(g.s.packedBytes) // a group's means (layerSums)
	}
	for _, m := range []*Mem{&g.done, &g.dstStrideB, &g.skip, &g.pend, &g.k, &g.tailN, &g.resTail} {
		*m = AllocLocal(8)
	}
	if !g.s.masked && g.oneLoop() {
		g.xrRow = AllocLocal(8)
	}
	if g.flagsChecked() {
		g.mx = AllocLocal(8) // MXCSR, then which of the call's rows may take fastLoops (clearFlags)
	}
	g.fd, g.rd = AllocLocal(4), AllocLocal(4)
}

// prologue loads the job's pointers (g.j is loaded) and sets up the locals.
func (g *gen) prologue() {
	g.dst, g.x, g.res = GP64(), GP64(), GP64()
	MOVQ(g.field(spec.Job.Dst), g.dst)
	MOVQ(g.field(spec.Job.X), g.x)
	MOVQ(g.field(spec.Job.Res), g.res)
	TESTQ(g.res, g.res)
	JZ(LabelRef("rowsset"))
	XCHGQ(g.x, g.res) // the scale pass reads h from the job's res
	Label("rowsset")
	g.w = GP64() // nil for rows without a weight (spec.Variant.Body)
	MOVQ(g.field(spec.Job.W), g.w)
	g.strideB = GP64()
	MOVQ(g.field(spec.Job.Stride), g.strideB)
	SHLQ(U8(map[int]uint8{4: 2, 2: 1}[g.eb]), g.strideB)
	ds := GP64()
	MOVQ(g.field(spec.Job.DstStride), ds)
	SHLQ(U8(map[int]uint8{4: 2, 2: 1}[g.ebOut()]), ds)
	MOVQ(ds, g.dstStrideB)
	g.loadBF16Consts(true)
	g.loadWidenConsts()
	g.clearFlags()

	g.divisor()
	if g.s.masked {
		g.weightAdd()
	}

	Comment("Start at row from.")
	off := Load(Param("from"), GP64()).(GPVirtual)
	MOVQ(off, g.done)
	MOVQ(U32(0), g.skip)
	doff := GP64()
	MOVQ(off, doff)
	IMULQ(g.dstStrideB, doff)
	ADDQ(doff, g.dst)
	IMULQ(g.strideB, off)
	ADDQ(off, g.x)
	ADDQ(off, g.res) // nil plus off without a residual, never read
}

// weightAdd sets c, a vector held through the function, to what the ends of rows add to the
// weight: 1 with flagOffset, else -0 (spec.Variant.Body). AVX-512 only, which has the registers to
// spare (AVX2 sets c per row, in scaleRows). Once per call, and in a register: a test of the flag
// per row measured 2.4% slower on single float32 rows (direct 1x128), and c in a stack slot, one
// more store before the kernel's first load, 5% slower on ApplyResidual 1x4096.
func (g *gen) weightAdd() {
	g.c = g.s.vec()
	g.setC(g.c)
}

// setC broadcasts c to v: 1 with flagOffset, else -0. A branch, not a load indexed by the flag,
// so that a short row's products need not wait for the flags.
func (g *gen) setC(v VecVirtual) {
	picked := g.label("weightadd")
	VBROADCASTSS(constOne, v)
	TESTL(U32(spec.FlagOffset), g.flags())
	JNZ(LabelRef(picked))
	VBROADCASTSS(constNegZero, v)
	Label(picked)
}

// divisor sets the locals fd = float32(d) and rd = 1/d when d is a power of two (a/d is then
// a*rd exactly), else 0.
func (g *gen) divisor() {
	Comment("fd = float32(d); rd = 1/d when d is a power of two (a/d is then a*rd exactly), else 0.")
	d, t := GP64(), GP64()
	MOVQ(g.d(), d)
	f := XMM()
	VMOVSS(constOne, f) // a load, which writes the whole register: no dependency on its old value
	VCVTSI2SSQ(d, f, f)
	VMOVSS(f, g.fd)
	e := GP32()
	XORL(e, e)
	LEAQ(Mem{Base: d, Disp: -1}, t)
	TESTQ(d, t)
	JNZ(LabelRef("notpow2"))
	BSFQ(d, t)
	MOVL(U32(127), e)
	SUBL(t.As32(), e)
	SHLL(U8(23), e)
	Label("notpow2")
	MOVL(e, g.rd)
}

// pickRows sets pend to the number of rows the sum pass does: four (a group) or one.
func (g *gen) pickRows() {
	t := GP64()
	MOVQ(g.done, t)
	CMPQ(t, g.to())
	JAE(LabelRef("ret"))
	MOVQ(U32(1), g.pend)
	CMPQ(g.field(spec.Job.Res), U8(0))
	JNE(LabelRef("addsum"))
	if g.v.Layer && g.s == avx512 {
		TESTL(U32(spec.FlagGroups), g.flags())
		JZ(LabelRef("sum")) // the AVX-512 Layer functions take groups under FlagGroups only
	}
	CMPQ(g.skip, U8(0))
	JE(LabelRef("trygroup"))
	DECQ(g.skip)
	JMP(LabelRef("sum"))
	Label("trygroup")
	// The AVX-512 functions group rows of up to LongGroupMax under FlagGroups: the Layer ones
	// (above) any row, the RMSNorm ones those longer than GroupMax. The float32 function's
	// one-row path takes only jobs without flags (or with flagRows, alone or streamed): a job of
	// one row with FlagGroups comes here, and goes one row at a time.
	most := spec.GroupMax
	long := g.s == avx512
	if long {
		most = spec.LongGroupMax
	}
	if long && !g.v.Layer {
		CMPQ(g.d(), U32(spec.GroupMax))
		JBE(LabelRef("grouplen"))
		TESTL(U32(spec.FlagGroups), g.flags())
		JZ(LabelRef("sum"))
	}
	CMPQ(g.d(), U32(most))
	JA(LabelRef("sum"))
	if long && !g.v.Layer {
		Label("grouplen")
	}
	MOVQ(g.to(), t)
	SUBQ(g.done, t)
	CMPQ(t, U8(group))
	JB(LabelRef("sum"))
	MOVQ(U32(group), g.pend)
}

// pfOffset returns the bytes from a row to the one its pass prefetches: rows rows further for
// long rows, eight times as many for short ones (which take little time each).
func (g *gen) pfOffset(rows int) GPVirtual {
	t := GP64()
	MOVQ(g.strideB, t)
	if rows > 1 {
		SHLQ(U8(1), t)
	}
	l := g.label("longrows")
	CMPQ(g.d(), U32(spec.GroupMax))
	JA(LabelRef(l))
	SHLQ(U8(3), t)
	Label(l)
	return t
}

// sumRows sums the squares of the rows the row part picked, into acc. A group's rows leave their
// partly reduced partials in g.q; one row goes on to invOne with them in the register returned.
func (g *gen) sumRows(acc []VecVirtual) VecVirtual {
	Label("sum")
	xr := GP64()
	MOVQ(g.x, xr)
	k := GP64() // byte offset of the row's slot in g.q
	XORQ(k, k)
	Label("sumrow")
	p := g.partial(g.sumSquares(acc, xr, nil))
	g.groupRowDone(p, xr, k, "invone", "sumrow", "invgroup")
	return p
}

// groupRowDone ends a sum pass over one row of those the row part picked, its partials in p: one
// row goes on to one with them; a group's row stores them to its slot in g.q (at byte offset k)
// and the pass goes on to the next row at again (xr and k moved on), or after the fourth row to
// next.
func (g *gen) groupRowDone(p VecVirtual, xr, k GPVirtual, one, again, next string) {
	CMPQ(g.pend, U8(1))
	JE(LabelRef(one))
	VMOVUPS(p, g.q.Idx(k, 1))
	ADDQ(g.strideB, xr)
	ADDQ(U32(g.s.vbytes()), k)
	CMPQ(k, U32(group*g.s.vbytes()))
	JB(LabelRef(again))
	JMP(LabelRef(next))
}

// sumAddRow is the sum pass of a row with a residual: h = x + res, stored to res, and the sum of
// the squares of h into acc, which it leaves for invOne in the register sumRows returns. A Layer
// function sums h itself and goes on to the mean instead (layerSums).
func (g *gen) sumAddRow(acc []VecVirtual) {
	g.lp = "add"
	next := "invone"
	if g.v.Layer {
		g.op, next = accSum, "mean"
	}
	defer func() { g.lp, g.op = "", accSquares }()
	Label("addsum")
	xr, rr := GP64(), GP64()
	MOVQ(g.res, xr) // the job's x
	MOVQ(g.x, rr)   // the job's res
	g.partial(g.sumSquares(acc, xr, rr))
	JMP(LabelRef(next))
}

// at addresses element i (plus disp bytes) of the row of x or the residual at base.
func (g *gen) at(base, i GPVirtual, disp int) Mem {
	return Mem{Base: base, Index: i, Scale: uint8(g.eb), Disp: disp}
}

// atDst addresses element i (plus disp bytes) of the row of dst being scaled.
func (g *gen) atDst(i GPVirtual, disp int) Mem {
	return Mem{Base: g.dst, Index: i, Scale: uint8(g.ebOut()), Disp: disp}
}

// atW addresses element i (plus disp bytes) of the weight.
func (g *gen) atW(i GPVirtual, disp int) Mem { return Mem{Base: g.w, Index: i, Scale: 4, Disp: disp} }

// sumSquares accumulates the row at xr (and forms h = x + res at rr on the residual pass) into
// the 64 partials, held in the 64/lanes accumulators acc, and returns them.
func (g *gen) sumSquares(acc []VecVirtual, xr, rr GPVirtual) []VecVirtual {
	s := g.s
	Comment(map[accOp]string{
		accSquares:  "Sum of squares: element i goes to partial i%64.",
		accSum:      "Sum of the elements: element i goes to partial i%64.",
		accCentered: "Sum of the squares of x - m: element i goes to partial i%64.",
	}[g.op])
	if g.unpacks() {
		g.zeroW = s.vec()
		VPXOR(g.zeroW, g.zeroW, g.zeroW)
		defer func() { g.zeroW = nil }()
	}
	if g.evenOdd() {
		CMPQ(g.d(), U32(2*block))
		JAE(LabelRef(g.l("halves")))
		g.naturalShort(acc, xr, rr)
		Label(g.l("halves"))
		g.highW = s.vec()
		VPBROADCASTD(bfConsts[s.name].high, g.highW)
		if g.add() && g.cvt {
			g.interW = s.vec()
			VMOVDQU64(interleaveWords, g.interW)
		}
		defer func() { g.highW, g.interW = nil, nil }()
	}
	i, lim := GP64(), GP64()
	MOVQ(g.d(), lim)
	SUBQ(U32(block), lim)
	JGE(LabelRef(g.l("firstblock")))
	for k := range acc {
		s.zero(acc[k])
	}
	XORQ(i, i)
	JMP(LabelRef(g.l("sumtail")))

	Label(g.l("firstblock"))
	Comment("+0 + square is the square itself: the first block initializes the partials.")
	XORQ(i, i)
	g.block(acc, xr, rr, i, true)
	MOVQ(U32(block), i)
	// reenter, for 16-bit rows, jumps from slotTail into the loop to run its block once more.
	var reenter func()
	if g.oneLoop() || g.op == accCentered {
		Comment("With flagPF, the rows ahead are prefetched: one loop for both, the flag tested per block.")
		// 16-bit rows: the sum pass prefetches two rows on, the scale pass (prefetchLines) the
		// next row. Both pay on a Zen 5 (avx512 ForwardBF16 and ForwardF16, each prefetch
		// switched by a flag of a scratch build, alternated in one process, 25 rounds, min ns per
		// row; neither, the sum pass's alone, the scale pass's alone, both): bfloat16 2048x4096
		// 397-439, 296-333, 286-305, 271-302; 16384x4096 676-809, 466-623, 377-559, 359-592;
		// float16 2048x4096 477, 317, 314, 285; 16384x4096 780, 578, 561, 556.
		//
		// LayerNorm's centered pass of float32 rows prefetches the next row, which the scale pass
		// of float32 rows does for RMSNorm: between the scale passes of two rows, LayerNorm's two
		// sum passes would otherwise leave memory idle for twice as long as RMSNorm's one
		// (2048x4096 on a Zen 5, avx512: 1.84 -> 1.44 ms, against 1.22 ms for RMSNorm).
		ahead := 2
		if !g.in16() { // the centered pass, the one pass of float32 rows that gets here
			ahead = 1
		}
		var pf GPVirtual
		if g.pfRow != nil {
			pf = GP64()
			MOVQ(g.pfRow, pf)
		} else {
			pf = g.pfOffset(ahead)
			ADDQ(xr, pf)
		}
		fl := GP32() // the flags in a register: a test of memory in the loop costs a load per block
		MOVL(g.flags(), fl)
		reenter = func() {
			// Straight to the block, with no prefetch (the copies on the stack are in the cache).
			// pf and fl are set anyway, so that the register allocator does not keep them
			// through the copies, which need the registers.
			MOVQ(xr, pf)
			XORL(fl, fl)
			JMP(LabelRef(g.l("sumblock")))
		}
		Label(g.l("sumloop"))
		CMPQ(i, lim)
		JG(LabelRef(g.l("sumtail")))
		TESTL(U32(spec.FlagPF), fl)
		JNZ(LabelRef(g.l("sumpf")))
		Label(g.l("sumblock"))
		g.block(acc, xr, rr, i, false)
		ADDQ(U32(block), i)
		JMP(LabelRef(g.l("sumloop")))
		Comment("Out of the loop's way: the prefetches, whose flag is usually clear.")
		Label(g.l("sumpf"))
		if g.op == accCentered && g.pipes() && g.pfRow == nil {
			// In a piped call (the forward pass, with flagCenter), the first pipePrefetch bytes
			// of the next row only.
			all := g.label("pipepf")
			TESTL(U32(spec.FlagPipe), fl)
			JZ(LabelRef(all))
			TESTL(U32(spec.FlagCenter), fl)
			JZ(LabelRef(all))
			CMPQ(i, U32(pipePrefetch/g.eb))
			JAE(LabelRef(g.l("sumblock")))
			if g.in16() {
				// pf points two rows on (the sum pass of 16-bit rows runs a row ahead of the scale
				// pass); the row the pipe loads next is the one after this.
				nx := GP64()
				MOVQ(xr, nx)
				ADDQ(g.strideB, nx)
				for off := 0; off < block*g.eb; off += 64 {
					prefetch(g.at(nx, i, off))
				}
				JMP(LabelRef(g.l("sumblock")))
			}
			Label(all)
		}
		for off := 0; off < block*g.eb; off += 64 {
			prefetch(g.at(pf, i, off))
		}
		JMP(LabelRef(g.l("sumblock")))
	} else {
		// float32 rows: no prefetch here. The scale pass of the row before has brought this row
		// in (prefetchLines), as the C kernels that stream fastest do; prefetching two rows ahead
		// here as well kept three rows and the weight in flight, more than L1 holds, and measured
		// 15-22% slower at 16384x4096 and up to 17% at 2048x4096 (Zen 5, avx512 and avx2; see
		// memory.go). Prefetching the next row here for the float32 rows normalized into 16-bit
		// ones alone (ForwardTo*, whose output rows are half as wide) measured mixed too, Zen 5,
		// ApplyToBF16, min of six to eight interleaved runs: 2048x4096 avx512 1.09-1.15 ->
		// 0.95-1.02 ms but avx2 1.49 -> 1.66 ms, 16384x4096 avx512 13.6 -> 15.5 ms and avx2
		// 15.6 -> 19.9 ms; with PREFETCHT1 the same.
		Label(g.l("sumloop"))
		CMPQ(i, lim)
		JG(LabelRef(g.l("sumtail")))
		g.block(acc, xr, rr, i, false)
		ADDQ(U32(block), i)
		JMP(LabelRef(g.l("sumloop")))
	}

	Label(g.l("sumtail"))
	Comment("Fewer than 64 elements remain (AVX2, 16-bit: or i is past d, the copied end summed).")
	rem := GP64()
	MOVQ(g.d(), rem)
	SUBQ(i, rem)
	JZ(LabelRef(g.l("summed")))
	switch {
	case g.highW != nil:
		g.maskedTailEvenOdd(acc, xr, rr, i, rem)
	case s.masked:
		g.maskedTail(acc, xr, rr, i, rem)
	case g.op == accCentered:
		g.wholeVectorTail(acc, xr, rr, i, rem)
		g.slotTailCentered(acc, xr, i, rem)
	default:
		if reenter != nil {
			// rem < 0: the loop has just summed the copied end (see slotTail), i being past d.
			JL(LabelRef(g.l("slotsummed")))
		}
		g.wholeVectorTail(acc, xr, rr, i, rem)
		g.slotTail(acc, xr, rr, i, lim, rem, reenter)
		Label(g.l("slotsummed"))
		g.slotBack(xr, reenter != nil)
	}
	Label(g.l("summed"))
	if g.highW != nil {
		g.unpermuteEvenOdd(acc)
		Label(g.l("ordered"))
	}
	return acc
}

// partial is s.partial for the accumulators of a sum pass (sumSquares). Those of a pass that
// unpacks its bfloat16 words (unpacks) hold each pair's partials out of order; the first two steps
// of the halving tree (h = 32, 16) add vector to vector, lane to lane, which the order does not
// change, and leave one pair, which is put back in order (partials 0..7 in acc[0], 8..15 in
// acc[1]) before the third. Putting the four pairs back before the tree took twelve instructions where
// this takes three: LayerNorm's rows of 64 bfloat16 elements, whose two sum passes both unpack,
// measured 4% slower than widening in the row's order with the twelve.
func (g *gen) partial(acc []VecVirtual) VecVirtual {
	if !g.unpacks() { // the same for every sum pass of the function
		return g.s.partial(acc)
	}
	for _, h := range []int{4, 2} { // h = 32, 16 partials
		for k := 0; k < h; k++ {
			VADDPS(acc[k+h], acc[k], acc[k])
		}
	}
	Comment("The partials back in order: 0..7 in acc[0], 8..15 in acc[1].")
	lo, hi, t := acc[0], acc[1], XMM()
	VEXTRACTF128(U8(1), lo, t)
	VINSERTF128(U8(1), hi.AsX(), lo, lo) // lo's low half and hi's
	VINSERTF128(U8(0), t, hi, hi)        // lo's high half and hi's
	VADDPS(hi, lo, lo)                   // h = 8
	return lo
}

// unpacks reports whether the sum pass being emitted widens bfloat16 words with VPUNPCKLWD and
// VPUNPCKHWD against zero words (AVX2, bfloat16 rows, every sum pass): one in-lane shuffle
// per vector from one load per pair, where VPMOVZXWD and VPSLLD take two instructions per vector,
// both on the two pipes of Zen 3 that shuffle and shift. The shuffle is in-lane: of the 16 elements
// 16c..16c+15 of a pair, vector 2c gets 16c+0..3 and 16c+8..11, vector 2c+1 16c+4..7 and
// 16c+12..15. Each lane still takes one partial's elements in order, so the sum is the same once
// partial puts the partials back in order (with VEXTRACTF128 and VINSERTF128, which every Zen runs
// in one micro-op, where VPERM2F128 takes eight on Zen 2).
// ForwardBF16 on a Zen 3, alternated with Forward in one process (41 rounds, two runs): 1x4096
// 1128-1142 -> 1020-1051 ns, 1.99-2.03x Forward's time -> 1.85-1.86x; 1x1024 2.75-2.78x ->
// 2.54-2.59x; 1x128 1.56x -> 1.48-1.54x. llvm-mca's cycles per block of 64 elements: Zen 3 17.4 ->
// 6.7, Zen 2 11.4 -> 8.1, Skylake 12.1 -> 8.1, Haswell 14.1 -> 8.1. On the residual pass x and res
// unpack alike, and h goes back to res with a VPACKUSDW of the pair (addUnpackedPair), where a
// store of each vector took a VPSRLD, a VEXTRACTI128 and a VPACKUSDW: ApplyBF16 with a residual, in
// place, min of twelve interleaved runs, 1x4096 2046 -> 1756 ns, 1x128 unchanged (122 -> 123).
// LayerNorm's two sum passes (the sum, the centered squares) unpack the same way; on the Zen 3,
// old and new test binaries interleaved three times, Norm.ForwardBF16 with Center, weight and
// bias: 1x4096 1301-1365 -> 1185-1269 ns, 1x1024 366-368 -> 337-343, 2048x4096 2.76-2.79 ->
// 2.52-2.74 ms, 64x768 16.9-17.1 -> 15.7-16.7 us, 64x160 4.07-4.10 -> 3.85-3.91 us, 32768x128
// 1.74-1.81 -> 1.67-1.68 ms; rows of 96 even; of 100 (a tail through the copy) 5.20-5.31 -> 5.50-5.53
// us for 64 rows, and one row of 64 78.3-79.0 -> 80.3-84.8 ns (the latency of putting the pair
// back in order, in each of the two passes).
//
// The scale loops of RMSNorm's bfloat16 rows unpack too (scaleUnpacks), with the weight gathered
// into the lanes' order by a VBROADCASTF128 and a VBLENDPS per vector (applyWeightAt). An earlier
// try gathered it with VPERM2F128, eight micro-ops on Zen 2, where llvm-mca put that loop 4.4x
// slower; with the broadcast and the blend llvm-mca puts the loop 6-18% faster on Zen 1-3,
// Skylake, Ice Lake and Alder Lake, 1% slower on Haswell. LayerNorm's scale loops (the bias would
// need the same gathering) and the tails widen with load.
func (g *gen) unpacks() bool {
	return g.s == avx2 && g.in() == spec.BF16
}

// block adds the squares of the 64 elements from element i of the row at xr to the
// accumulators (first: sets them). On the residual pass the elements are h = x + res (rounded
// to the storage format), stored back to res at rr first.
func (g *gen) block(acc []VecVirtual, xr, rr, i GPVirtual, first bool) {
	if g.add() && g.highW != nil {
		for k := 0; k < len(acc); k += 2 {
			g.addEvenOddPair(acc, xr, rr, i, k, first)
		}
		return
	}
	if g.add() && g.cvt && g.in16() {
		g.blockAddCvt(acc, xr, rr, i, first)
		return
	}
	g.blockPart(acc, xr, rr, i, 0, len(acc), first)
}

// blockPart is block for its vectors from to to (AVX2 and AVX-512 without VCVTNE2PS2BF16; on the
// residual pass of unpacked bfloat16 words, a whole number of pairs: addUnpackedPair).
func (g *gen) blockPart(acc []VecVirtual, xr, rr, i GPVirtual, from, to int, first bool) {
	if g.add() && g.zeroW != nil {
		for k := from; k < to; k += 2 {
			g.addUnpackedPair(acc, xr, rr, i, k, first)
		}
		return
	}
	if g.highW != nil {
		for k := from; k < to; k += 2 {
			g.accumulateHalves(acc, k, g.at(xr, i, k*g.vstep()), first)
		}
		return
	}
	for k := from; k < to; k++ {
		t := g.s.vec()
		g.loadAt(g.at(xr, i, k*g.vstep()), k, t)
		if g.add() {
			t = g.addResidual(t, g.at(rr, i, k*g.vstep()), nil)
		}
		g.accumulate(acc[k], t, first)
	}
}

// addUnpackedPair sums the pair of vectors k and k+1 of the block on the residual pass of
// unpacked bfloat16 words: h = round16(x + res) for both, x and res unpacked alike, stored to res
// with one VPACKUSDW, which puts the unpacked lanes back in the row's order.
func (g *gen) addUnpackedPair(acc []VecVirtual, xr, rr, i GPVirtual, k int, first bool) {
	hs := []VecVirtual{g.s.vec(), g.s.vec()}
	for h, t := range hs {
		g.loadAt(g.at(xr, i, (k+h)*g.vstep()), k+h, t)
		r := g.s.vec()
		g.loadAt(g.at(rr, i, (k+h)*g.vstep()), k+h, r)
		VADDPS(r, t, t)
		hs[h] = g.round(t)
	}
	lo, hi := g.s.vec(), g.s.vec()
	VPSRLD(U8(16), hs[0], lo)
	VPSRLD(U8(16), hs[1], hi)
	VPACKUSDW(hi, lo, lo)
	VMOVDQU(lo, g.at(rr, i, k*g.vstep()))
	for h, t := range hs {
		g.accumulate(acc[k+h], t, first)
	}
}

// square adds t*t to a (first: sets a to it).
func (g *gen) square(a, t VecVirtual, first bool) {
	switch {
	case first:
		VMULPS(t, t, a)
	case g.fusedSquares():
		VFMADD231PS(t, t, a)
	default:
		VMULPS(t, t, t)
		VADDPS(t, a, a)
	}
}

// fusedSquares reports whether square adds with one VFMADD231PS: in the AVX-512 sum pass of
// RMSNorm's float16 rows. The square of a binary16 value is exact in float32 (two significands of
// 11 bits make at most 22, and the exponents of the squares, -48 to 31, are those of normal
// float32s), so a + t*t rounded once is the bits of the contract's product rounded, then added.
// On Zen 5 VCVTPH2PS runs on the adder pipes, where VADDPS competes with it, and the multiply
// pipes take the fused add: the sum loop of a 1x4096 row, copied into a scratch benchmark with
// the row in the L1d, went from 1.2 to 1.0 cycles per vector (84-89 -> 70-71 ns), bound then by
// the latency of the four accumulators' chains. Not on AVX2, whose kernel does not require FMA3;
// nor on LayerNorm's centered pass, whose x - mean are float32 values whose squares round.
func (g *gen) fusedSquares() bool {
	return g.s == avx512 && g.in() == spec.F16 && g.op == accSquares
}

// addResidual returns h = x + res (rounded to the format of x) for x in t and res at m, and
// stores h back to m; with k set, only the lanes of k.
func (g *gen) addResidual(t VecVirtual, m Mem, k Op) VecVirtual {
	switch {
	case k == nil && !g.in16():
		VADDPS(m, t, t)
	default:
		r := g.s.vec()
		if k == nil {
			g.load(m, r)
		} else {
			g.loadMasked(m, k, r)
		}
		VADDPS(r, t, t)
	}
	switch {
	case !g.in16(): // float32 rows (RowsTo16's too): h stays float32
		if k == nil {
			VMOVUPS(t, m)
		} else {
			VMOVUPS(t, k, m)
		}
		return t
	case g.cvt:
		// Rounded by VCVTNE2PS2BF16, stored from its words and widened back (bf16cvt.go).
		w := g.narrowCvt(t)
		if k == nil {
			VEXTRACTI64X4(U8(0), w, m)
		} else {
			VMOVDQU16(w, k, m)
		}
		g.widenWords(w, 0, t)
		return t
	}
	// 16-bit rows (whose dst has their format): h rounded to it.
	t = g.round(t)
	if k == nil {
		g.store(t, m, true)
	} else {
		g.storeMasked(t, k, m, true)
	}
	return t
}

// maskedTail adds the last rem (1..63) elements from element i, each vector through a k-mask of
// its lanes (zero lanes add +0, which leaves a partial sum unchanged).
func (g *gen) maskedTail(acc []VecVirtual, xr, rr, i, rem GPVirtual) {
	s := g.s
	tab := GP64()
	LEAQ(kmaskAVX512, tab)
	for k := range acc {
		n := GP64()
		MOVQ(rem, n)
		if k > 0 {
			SUBQ(U32(k*s.lanes), n)
			JLE(LabelRef(g.l("summed")))
		}
		CMPQ(n, U32(s.lanes))
		JLE(LabelRef(g.l(fmt.Sprintf("tailmask%d", k))))
		MOVQ(U32(s.lanes), n)
		Label(g.l(fmt.Sprintf("tailmask%d", k)))
		m := K()
		KMOVW(Mem{Base: tab, Index: n, Scale: 2}, m)
		t := s.vec()
		g.loadMasked(g.at(xr, i, k*g.vstep()), m, t)
		if g.add() {
			t = g.addResidual(t, g.at(rr, i, k*g.vstep()), m)
		}
		if g.op != accSquares {
			g.accumulateMasked(acc[k], t, m)
			continue
		}
		VMULPS(t, t, t)
		VADDPS(t, acc[k], acc[k])
	}
}

// wholeVectorTail adds the last rem (1..63) elements from element i, when rem is a multiple of
// the lanes (AVX2: every d a multiple of 8, such as the head dimensions 80, 96 and 160), as the
// loop's block does, a vector into each of the first rem/8 accumulators; other rem fall through
// to the copies on the stack (slotTail, slotTailCentered). The sum passes that unpack bfloat16
// words (unpacks) take them a pair of vectors at a time, from one load of 16 words, so they need
// rem a multiple of 16. The copies, zeroing and summing a whole block for a few vectors, made avx2
// Forward on rows of 96 slower than on rows of 128. Zen 3, 64 rows in cache, six interleaved runs
// of each build, benchstat: float32 d = 96 RMSNorm 22.2 -> 17.8 ns a row, with a residual 50.4 ->
// 28.3 (the copy of res and of h back), LayerNorm 38.9 -> 29.7; float16 RMSNorm 25.0 -> 20.0,
// bfloat16 35.2 -> 29.5; d = 80 and 160 alike; d = 128 and 320 within 2.5% either way.
func (g *gen) wholeVectorTail(acc []VecVirtual, xr, rr, i, rem GPVirtual) {
	s := g.s
	step := 1 // vectors at a time
	if g.zeroW != nil {
		step = 2
	}
	whole, summed := g.l("whole"), g.l("summed")
	TESTQ(U32(step*s.lanes-1), rem)
	JZ(LabelRef(whole))
	// Out of line, after the function's RET: the code of rows of a multiple of 64, which jump
	// over the tail, keeps its addresses but for the two instructions of the test.
	// The pass's state, which may be gone when the cold code is emitted.
	zeroW, op, lp, mv := g.zeroW, g.op, g.lp, g.mv
	g.cold = append(g.cold, func() {
		defer func(z, m VecVirtual, o accOp, l string) { g.zeroW, g.mv, g.op, g.lp = z, m, o, l }(g.zeroW, g.mv, g.op, g.lp)
		g.zeroW, g.mv, g.op, g.lp = zeroW, mv, op, lp
		Label(whole)
		for k := 0; k+step < len(acc); k += step {
			g.blockPart(acc, xr, rr, i, k, k+step, false)
			CMPQ(rem, U32((k+step)*s.lanes))
			JE(LabelRef(summed))
		}
		JMP(LabelRef(summed)) // not reached: fewer than 64 elements remain
	})
}

// slotTail sums the last rem (1..63) elements from element i: they are copied to a zero-padded
// block on the stack (the zeros add +0), which is summed as a whole block. On the residual pass
// res is copied too, and slotBack puts h back.
//
// With reenter (16-bit rows), the loop's own block sums the copies: xr (and rr) are moved so that
// element i addresses them, and the loop runs once with lim = i, which leaves i past d; sumtail,
// seeing rem < 0, goes on to slotBack. A block of its own would be a third copy of the loop's,
// kilobytes in the 16-bit functions, for a few instructions more per row. float32 rows
// keep their block, a few hundred bytes: avx2 Forward 32x100 measured 7% slower without it.
func (g *gen) slotTail(acc []VecVirtual, xr, rr, i, lim, rem GPVirtual, reenter func()) {
	MOVQ(rem, g.tailN)
	src := GP64()
	LEAQ(g.at(xr, i, 0), src)
	if g.add() {
		r := GP64()
		LEAQ(g.at(rr, i, 0), r)
		MOVQ(r, g.resTail)
	}
	sx := GP64()
	LEAQ(g.slotX, sx)
	g.zeroFill(sx)
	g.copyElems(src, sx, g.tailN, g.eb)
	var sr GPVirtual
	if g.add() {
		MOVQ(g.resTail, src)
		sr = GP64()
		LEAQ(g.slotR, sr)
		g.zeroFill(sr)
		g.copyElems(src, sr, g.tailN, g.eb)
	}
	if reenter == nil {
		z := GP64()
		XORQ(z, z)
		g.block(acc, sx, sr, z, false)
		return
	}
	back := GP64() // i elements in bytes, which the block adds back to the moved pointers
	MOVQ(i, back)
	SHLQ(U8(map[int]uint8{4: 2, 2: 1}[g.eb]), back)
	MOVQ(xr, g.xrRow)
	MOVQ(sx, xr)
	SUBQ(back, xr)
	if g.add() {
		MOVQ(sr, rr)
		SUBQ(back, rr)
	}
	MOVQ(i, lim)
	reenter()
}

// slotBack finishes what slotTail began: xr points at the row again if it was moved, and on the
// residual pass h goes back to res.
func (g *gen) slotBack(xr GPVirtual, moved bool) {
	if moved {
		MOVQ(g.xrRow, xr)
	}
	if g.add() {
		dstp, from := GP64(), GP64()
		MOVQ(g.resTail, dstp)
		LEAQ(g.slotR, from)
		g.copyElems(from, dstp, g.tailN, g.eb)
	}
}

// zeroFill clears the block-sized slot at p.
func (g *gen) zeroFill(p GPVirtual) {
	z := g.s.vec()
	g.s.zero(z)
	for off := 0; off < block*g.eb; off += g.s.vbytes() {
		VMOVUPS(z, Mem{Base: p, Disp: off})
	}
}

// copyElems copies n elements of eb bytes (n is a register or a local) from src to dst, a vector
// at a time while it can and then one element at a time.
func (g *gen) copyElems(src, dst GPVirtual, n Op, eb int) {
	at := func(base, i GPVirtual) Mem { return Mem{Base: base, Index: i, Scale: uint8(eb)} }
	c, lim := GP64(), GP64()
	MOVQ(n, lim)
	XORQ(c, c)
	SUBQ(U32(g.s.vbytes()/eb), lim)
	vec, one, done := g.label("copyvec"), g.label("copyone"), g.label("copied")
	Label(vec)
	CMPQ(c, lim)
	JG(LabelRef(one))
	t := g.s.vec()
	VMOVUPS(at(src, c), t)
	VMOVUPS(t, at(dst, c))
	ADDQ(U32(g.s.vbytes()/eb), c) // a vector of bytes, not of lanes
	JMP(LabelRef(vec))
	Label(one)
	ADDQ(U32(g.s.vbytes()/eb), lim)
	loop := g.label("copyloop")
	Label(loop)
	CMPQ(c, lim)
	JGE(LabelRef(done))
	if eb == 4 {
		e := GP32()
		MOVL(at(src, c), e)
		MOVL(e, at(dst, c))
	} else {
		e := GP16()
		MOVW(at(src, c), e)
		MOVW(e, at(dst, c))
	}
	INCQ(c)
	JMP(LabelRef(loop))
	Label(done)
}

// divideByD sets t = ss/float32(d), exactly as a division: as ss*rd when d is a power of two.
func (g *gen) divideByD(ss, t VecVirtual, packed bool) {
	div, divided := g.label("divide"), g.label("divided")
	c := XMM()
	if packed {
		c = g.s.packed()
	}
	CMPL(g.rd, U8(0))
	JE(LabelRef(div))
	if packed {
		VBROADCASTSS(g.rd, c)
		VMULPS(c, ss, t)
	} else {
		VMULSS(g.rd, ss, t)
	}
	JMP(LabelRef(divided))
	Label(div)
	if packed {
		VBROADCASTSS(g.fd, c)
		VDIVPS(c, ss, t)
	} else {
		VDIVSS(g.fd, ss, t)
	}
	Label(divided)
}

// invOne finishes one row: t = ss/d + eps, the float64 path for t outside [2^-100, MaxFloat32]
// or NaN, inv = 1/sqrt(t) into g.invs[0] and, when asked, the job's inv[done].
func (g *gen) invOne(p, inv VecVirtual) {
	Label("invone")
	Comment("Halving tree: p[j] += p[j+h] for the remaining h, down to ss.")
	ss := g.s.finish1(p)
	t := g.tInRange(ss)
	VSQRTSS(t, t, t)
	x := inv.AsX()
	VMOVSS(constOne, x)
	VDIVSS(t, x, x)
	g.reportInv(func(m Mem) { VMOVSS(x, m) }, "reportmean")
	if g.v.Layer {
		g.reportMean()
	}
	JMP(LabelRef("scale"))
}

// tInRange returns t = ss/d + eps in lane 0 of a new register, or returns from the function (ret)
// with the row done for the float64 path when t lies outside [2^-100, MaxFloat32] or is NaN. So
// the scale pass sees only finite rows with a finite inv, which roundTopAVX2 relies on.
func (g *gen) tInRange(ss VecVirtual) VecVirtual {
	Comment("t = ss/d + eps; rows with t outside [2^-100, MaxFloat32] take the float64 path.")
	t := XMM()
	g.divideByD(ss, t, false)
	VADDSS(g.eps(), t, t)
	VUCOMISS(constLo, t)
	JCS(LabelRef("ret")) // t < 2^-100 or unordered
	VUCOMISS(constMax, t)
	JHI(LabelRef("ret")) // t > MaxFloat32
	return t
}

// reportInv stores inv of the rows from done into the job's inv with store, when the caller asked
// for it; a Layer function goes on to report the mean at meanLabel either way.
func (g *gen) reportInv(store func(m Mem), meanLabel string) {
	Comment("Report 1/rms if asked.")
	next := "scale"
	if g.v.Layer {
		next = meanLabel
	}
	ip := GP64()
	MOVQ(g.inv(), ip)
	TESTQ(ip, ip)
	JZ(LabelRef(next))
	r := GP64()
	MOVQ(g.done, r)
	store(Mem{Base: ip, Index: r, Scale: 4})
}

// finishGroup applies the rest of the halving tree to the partials of a group's four rows in g.q
// and returns their sums in lanes 0..3 of a packed register.
func (g *gen) finishGroup() VecVirtual {
	q := make([]VecVirtual, group)
	for r := range q {
		q[r] = g.s.vec()
		VMOVUPS(g.q.Offset(r*g.s.vbytes()), q[r])
	}
	return g.s.finish4(q)
}

// invGroup finishes a group of four rows at once: the rest of the halving tree for four rows in
// one register, the range test on all four (a group with a row outside it is redone a row at a
// time, which stops at that row), and inv = 1/sqrt(t) for all four into g.invs and, when asked,
// the job's inv[done..done+3].
func (g *gen) invGroup(inv4 VecVirtual) {
	s := g.s
	Label("invgroup")
	Comment("The rest of the halving tree, four rows at once.")
	ss := g.finishGroup()
	Comment("t = ss/d + eps for the four rows; any t outside [2^-100, MaxFloat32] sends the group to the one-row path.")
	t := s.packed()
	g.divideByD(ss, t, true)
	e := s.packed()
	VBROADCASTSS(g.eps(), e)
	VADDPS(e, t, t)
	s.allIn(t, LabelRef("ginrange"))
	MOVQ(U32(group), g.skip)
	JMP(LabelRef("row"))
	Label("ginrange")
	VSQRTPS(t, t)
	VBROADCASTSS(constOne, inv4)
	VDIVPS(t, inv4, inv4)
	g.reportInv(func(m Mem) { s.storeLanes4(inv4, m) }, "reportmeans")
	if g.v.Layer {
		g.reportMeans() // on to scale
	}
}

// scaleRows scales the g.pend rows from row done and moves on to the rows after them. inv holds
// the first row's inv in lane 0, broadcast from the register (the critical path of a single short
// row); the k-th row's is g.invs[k].
func (g *gen) scaleRows(inv VecVirtual) {
	s := g.s
	Label("scale")
	invv := s.vec()
	VBROADCASTSS(inv.AsX(), invv)
	MOVQ(U32(0), g.k)
	CMPQ(g.pend, U8(1))
	JE(LabelRef("scalebody"))
	// The whole register: the loads that follow forward from a store that holds them, which a
	// masked store would not allow.
	VMOVUPS(inv, g.invs)
	Label("scalerow")
	k := GP64()
	MOVQ(g.k, k)
	VBROADCASTSS(g.invs.Idx(k, 4), invv)
	if g.v.Layer {
		VBROADCASTSS(g.means.Idx(k, 4), g.mv) // a group's row (one row keeps meanOf's)
	}
	Label("scalebody")
	one := g.c
	if one == nil { // AVX2: c for this row
		one = s.vec()
		g.setC(one)
	}
	if g.pipes() {
		g.pipe(invv, one)
	}
	g.scale(g.x, invv, one) // h with a residual (see prologue)
	ADDQ(g.strideB, g.x)
	ADDQ(g.dstStrideB, g.dst)
	ADDQ(g.strideB, g.res)
	INCQ(g.done)
	t := GP64()
	MOVQ(g.k, t)
	INCQ(t)
	MOVQ(t, g.k)
	CMPQ(t, g.pend)
	JB(LabelRef("scalerow"))
	g.groupFlags()
	JMP(LabelRef("row"))
}

// scale writes y = (src*inv)*w, (src*inv)*(1+w) with flagOffset, or src*inv when w is nil, for
// one row. With flagPF the lines of the row pfOffset(1) bytes further on are prefetched along the
// way; with flagNT the aligned middle of the row goes out with non-temporal stores (flagNT comes
// with flagPF but for the rows left to the hardware prefetchers, in the functions of
// hardwareRows, which then take non-temporal loops without the prefetch).
func (g *gen) scale(src GPVirtual, invv, one VecVirtual) {
	s := g.s
	Comment("y = (src*inv)*w, rounded after each multiply.")
	i, lim := GP64(), GP64()
	XORQ(i, i)
	MOVQ(g.d(), lim)
	SUBQ(U32(unroll*s.lanes), lim)
	g.tail = "scaletail"
	// forms emits a loop for each weight form, named name, name+"offset" and name+"noweight",
	// chosen once per row by w and flagOffset (from fl when it is set): a test per iteration
	// measured 5% slower on avx512 binary16 rows in L1. The choice reads flagOffset from fl; the
	// non-temporal loops (nt) read no flags.
	forms := func(name string, pf, fl GPVirtual, nt bool) {
		TESTQ(g.w, g.w)
		JZ(LabelRef(name + "noweight"))
		if fl != nil {
			TESTL(U32(spec.FlagOffset), fl)
		} else {
			TESTL(U32(spec.FlagOffset), g.flags())
		}
		JNZ(LabelRef(name + "offset"))
		g.scaleLoop(name, src, i, lim, pf, fl, invv, one, nt, spec.Weighted)
		g.scaleLoop(name+"offset", src, i, lim, pf, fl, invv, one, nt, spec.Offset)
		g.scaleLoop(name+"noweight", src, i, lim, pf, fl, invv, one, nt, spec.Unweighted)
	}
	var pf, fl GPVirtual
	if g.oneLoop() {
		pf = g.pfOffset(1)
		ADDQ(src, pf)
		fl = GP32() // the flags in a register: a test of memory in the loop costs a load per iteration
		MOVL(g.flags(), fl)
		TESTL(U32(spec.FlagNT), fl)
		JNZ(LabelRef("scalent"))
		g.fastLoops("", src, i, pf, fl, forms)
		forms("scaleloop", pf, fl, false)
	} else {
		// A loop for each memory mode (and weight form), chosen once per row: flagNT comes with
		// or without flagPF (see hardwareRows).
		TESTL(U32(spec.FlagNT), g.flags())
		JNZ(LabelRef("scalent"))
		TESTL(U32(spec.FlagPF), g.flags())
		JNZ(LabelRef("scalepf"))
		g.fastLoops("", src, i, nil, nil, forms)
		forms("scaleloop", nil, nil, false)
		Label("scalepf")
		pf = g.pfOffset(1)
		ADDQ(src, pf)
		g.fastLoops("pf", src, i, pf, nil, forms)
		forms("scalepfloop", pf, nil, false)
		pf = GP64() // for the non-temporal loops, set at scalentgo
		fl = GP32() // for the non-temporal loops, chosen by w and flagOffset in it (and flagPF: hardwareRows)
	}

	Label("scalent")
	Comment("Ordinary stores up to the first vector-aligned element of dst, then non-temporal ones.")
	n := GP64()
	MOVQ(g.dst, n)
	NEGQ(n)
	ANDQ(U32(s.vbytes()-1), n)
	SHRQ(U8(map[int]uint8{4: 2, 2: 1}[g.ebOut()]), n) // elements
	JZ(LabelRef("scalentgo"))
	CMPQ(n, g.d())
	JLE(LabelRef("scalehead"))
	MOVQ(g.d(), n)
	Label("scalehead")
	if g.out16() {
		// Up to two vectors of 16-bit lanes before the alignment of a whole vector of them.
		CMPQ(n, U32(s.lanes))
		JB(LabelRef("scaleheadpart"))
		g.store(g.compute(src, i, 0, invv, one), g.atDst(i, 0), false)
		ADDQ(U32(s.lanes), i)
		SUBQ(U32(s.lanes), n)
		JZ(LabelRef("scalentgo"))
		Label("scaleheadpart")
	}
	// The rest of the head goes out as the end of a row does, and comes back (see partout).
	JMP(LabelRef("partout"))
	Label("scalentgo")
	// pf and fl set again (and pfAdd set here), so that none is live across partout, which
	// needs the registers.
	t := g.pfOffset(1)
	if !g.in16() {
		g.pfAdd = GP64()
		g.setPFAdd(t)
	}
	ADDQ(src, t)
	MOVQ(t, pf)
	MOVL(g.flags(), fl)
	if g.oneLoop() {
		// 16-bit rows from memory do not notice a test per iteration (see weighLoop).
		g.scaleLoop("scalentloop", src, i, lim, pf, fl, invv, one, true, byFlag)
	} else {
		// Float32 rows take a loop for each weight form, and in the functions of hardwareRows
		// one set with and one without the next row's prefetch, chosen once per row. Against one
		// loop for all that tested w, flagOffset and flagPF per iteration (avx512 Forward on a
		// Zen 5, alternated in one process, 25 rounds, the medians of the rounds' ratios):
		// 512x8192 0.967, 768x8192 0.971, 384x16384 0.981 (the rows left to the hardware);
		// 1024x8192, 2048x4096, 4096x4096, 512x12288 and avx2's within 2% both ways.
		if g.hardwareRows() {
			TESTL(U32(spec.FlagPF), fl)
			JZ(LabelRef("scalenthw"))
		}
		forms("scalentloop", pf, fl, true)
		if g.hardwareRows() {
			Label("scalenthw")
			forms("scalenthwloop", nil, fl, true)
		}
	}
	g.pfAdd = nil

	Label("scaletail")
	ADDQ(U32((unroll-1)*s.lanes), lim)
	Label("scaleone")
	CMPQ(i, lim)
	JG(LabelRef("scalepart"))
	g.store(g.compute(src, i, 0, invv, one), g.atDst(i, 0), false)
	ADDQ(U32(s.lanes), i)
	JMP(LabelRef("scaleone"))
	Label("scalepart")
	MOVQ(g.d(), n)
	SUBQ(i, n)
	JZ(LabelRef("scaled"))
	Comment("The last n < lanes elements, or the first n of a non-temporal row (i + n < d: back to its loop).")
	Label("partout")
	g.partialOut(src, i, n, invv, one)
	ADDQ(n, i)
	CMPQ(i, g.d())
	JB(LabelRef("scalentgo"))
	Label("scaled")
}

// hardwareRows reports whether the function has non-temporal scale loops without the next row's
// prefetch, which a row takes when flagPF is clear, so that the Go side may leave streamed rows to
// the hardware prefetchers (flagNT without flagPF; streamrule.Hardware): RMSNorm's float32 rows
// into float32 or 16-bit rows, the rows the rule was measured on. The others' non-temporal loops
// prefetch whether or not flagPF is set (the Go side never gives them flagNT without it).
func (g *gen) hardwareRows() bool { return !g.in16() && !g.v.Layer }

// oneLoop reports whether the sum and scale passes have one loop for rows with and without
// flagPF, which tests the flag per iteration, rather than a loop for each. 16-bit rows spend many
// cycles per iteration on their conversions and do not notice the test; float32 rows take a few,
// and avx2 Forward 1x4096 measured 5.8% slower with it, so float32 keeps two loops.
func (g *gen) oneLoop() bool { return g.in16() }

// scaleLoop emits the unrolled loop of the scale pass while whole iterations remain, then jumps
// to scaletail: prefetching the row at pf as it goes (unless pf is nil), with non-temporal stores
// when nt. With fl (the flags in a register) and not nt, the prefetches depend on flagPF, tested
// per iteration with a branch not taken when it is clear: one loop serves rows in cache and rows
// from memory (see oneLoop). The non-temporal loop of 16-bit rows (form byFlag) tests w and
// flagOffset in fl instead (see weighLoop); float32 rows have a non-temporal loop for each form,
// and one without the prefetch (pf nil) in the functions of hardwareRows (see scale). With
// convertsAhead the loop widens x one iteration ahead, the first iteration's before the loop, and
// its back edge goes to name+"ahead", past that.
func (g *gen) scaleLoop(name string, src, i, lim, pf, fl GPVirtual, invv, one VecVirtual, nt bool, form spec.Mode) {
	s := g.s
	Label(name)
	head := name
	if g.holdConsts(form != spec.Unweighted && g.v.Rounds(), g.in() == spec.BF16) {
		// The constants are loaded on the way in; the iterations go back to head.
		head = g.label(name + "iter")
		Label(head)
		defer g.release()
	}
	CMPQ(i, lim)
	JG(LabelRef(g.tail))
	var xs []VecVirtual // x of the iteration, converted one iteration ahead (convertsAhead)
	if g.convertsAhead(form) {
		// The first iteration's x here; the back edge goes to head, past it.
		xs = make([]VecVirtual, unroll)
		for u := range xs {
			xs[u] = g.s.vec()
			g.loadAt(g.at(src, i, u*g.vstep()), u, xs[u])
		}
		head = name + "ahead"
		Label(head)
	}
	var pfLines, body string
	switch {
	case fl != nil && !nt:
		pfLines, body = g.label(name+"pf"), g.label(name+"body")
		TESTL(U32(spec.FlagPF), fl)
		JNZ(LabelRef(pfLines))
		Label(body)
	case pf != nil:
		g.prefetchLines(pf, i)
	}
	// The products of the iteration first, so that flagRN is tested once for all of them.
	ts := make([]VecVirtual, unroll)
	for u := range ts {
		ts[u] = g.s.vec()
		if xs != nil {
			VMULPS(invv, xs[u], ts[u])
		} else {
			g.mulLoadAt(g.at(src, i, u*g.vstep()), u, invv, ts[u])
		}
	}
	if xs != nil {
		// The next iteration's x, once this one's is in the products, and only if the row has a
		// whole next block (next <= lim, which the loop's test then passes): never past the row.
		next, none := GP64(), g.label(name+"last")
		LEAQ(Mem{Base: i, Disp: unroll * s.lanes}, next)
		CMPQ(next, lim)
		JG(LabelRef(none))
		for u := range xs {
			g.loadAt(g.at(src, i, (unroll+u)*g.vstep()), u, xs[u])
		}
		Label(none)
	}
	if form != spec.Unweighted { // flagRN comes only with a weight
		g.roundIfRN(ts...)
	}
	weigh := func(u int, t VecVirtual) { g.applyWeightAt(form, t, i, u, one) }
	offsetLine := func() {}
	if form == byFlag {
		offsetLine = g.weighLoop(ts, i, fl, one)
		weigh = func(int, VecVirtual) {}
	}
	if g.v.Layer {
		for u, t := range ts {
			weigh(u, t)
		}
		weigh = func(int, VecVirtual) {}
		g.addBiases(ts, i, 0)
	}
	// 16-bit rows go out two vectors of lanes at a time, one full vector of 16-bit lanes.
	var pair VecVirtual
	for u, t := range ts {
		weigh(u, t)
		switch {
		case !g.out16() && nt:
			g.storeNT([]VecVirtual{t}, g.atDst(i, u*g.vstepOut()))
		case !g.out16():
			g.store(t, g.atDst(i, u*g.vstepOut()), false)
		case u%2 == 0:
			pair = t
		case nt:
			g.storeNT([]VecVirtual{pair, t}, g.atDst(i, (u-1)*g.vstepOut()))
		default:
			g.storePair(pair, t, g.atDst(i, (u-1)*g.vstepOut()))
		}
	}
	ADDQ(U32(unroll*s.lanes), i)
	if xs != nil {
		CMPQ(i, lim)
		JLE(LabelRef(head))
		JMP(LabelRef(g.tail))
	} else {
		JMP(LabelRef(head))
	}
	offsetLine()
	if fl != nil && !nt {
		// Out of the loop's way: the prefetches, whose flag is usually clear.
		Label(pfLines)
		g.prefetchLines(pf, i)
		JMP(LabelRef(body))
	}
}

// convertsAhead reports whether the unrolled scale loops of 16-bit rows convert x one iteration
// ahead (AVX-512, RMSNorm, not form Offset): the iteration multiplies the vectors of x the one
// before it widened, and widens the next iteration's right after (a software-pipelined loop; the
// bits do not change, only the order of the instructions). On a Zen 5 VCVTPH2PS and VCVTPS2PH
// take 0.8 cycles each and share pipes, and a row of float16 converts x three times; converted
// ahead, the widenings of the next block can go before the narrowings of this one (the likely
// reason, not measured per pipe). avx512 ForwardF16 on a Zen 5, the two builds alternated ten
// times, benchstat: 1x4096 253.6 -> 240.2 ns (-5.3%), with RoundNormalized 399.6 -> 363.2
// (-9.1%) and 1x16384 1457 -> 1354 (-7.1%); 1x128, 1x1024 and 1x16384 without it within the
// noise (1x1024 89.7 -> 88.1, p=0.48). Not the loop in cache of UnitOffset's weight (1 + w), form
// Offset: there 1x4096 did not move (286.8 -> 282.2, p=0.15) and 1x16384 took 2.0-2.4% longer in
// three runs (1112 -> 1135 ns, p=0.04). The non-temporal loop (form byFlag) serves every weight
// form and converts ahead, UnitOffset's too (rows from memory, bound by the memory; not measured
// apart). bfloat16 rows (widened by VPERMW, or VPMOVZXWD and a shift, not converted) gain with
// RoundNormalized, whose rounding of x*inv adds a narrowing and a widening per pair: ForwardBF16
// 1x1024 138.6 -> 133.7 ns (-3.6%, p=0.004, ten runs), 1x4096 403.4 -> 383.3 (-5.0%, six runs;
// not significant in ten more, p=0.22), 1x16384 1478 -> 1388 (-6.1%); without it 1x1024 and
// 1x4096 within 2% both ways (p=0.04-0.8). The avx512 functions for CPUs without AVX512_BF16 take
// the same order unmeasured (no such CPU here): the same instructions, and a widening that does
// not wait for the narrowing before it. TestGuardPages16 (rows in cache) and
// TestGuardPagesStreamed16 (the non-temporal loop, entered after a head) fail on a read ahead past
// the row.
func (g *gen) convertsAhead(form spec.Mode) bool {
	return g.s == avx512 && g.in16() && !g.v.Layer && form != spec.Offset
}

// weighLoop multiplies ts, the products of an iteration of the non-temporal scale loop of a
// function whose rows are 16-bit (spec.Variant.Body), by the weight or by 1 + it, as flagOffset in
// fl says, or by nothing when w is nil: two branches per iteration, which such rows from memory do
// not notice, where adding -0 to every weight vector measured 10-14% slower (avx2 binary16).
// Float32 rows, some of which notice them, have a loop for each form (see scale). Weighted goes
// straight on; Offset's products are out of the loop's way, in the code the function it returns
// emits, which the caller places after the loop. The rest of the row (partialOut, the tail) adds c
// from one.
func (g *gen) weighLoop(ts []VecVirtual, i, fl GPVirtual, one VecVirtual) func() {
	offs, done := g.label("offset"), g.label("weighed")
	TESTQ(g.w, g.w)
	JZ(LabelRef(done))
	TESTL(U32(spec.FlagOffset), fl)
	JNZ(LabelRef(offs))
	for u, t := range ts {
		g.applyWeightAt(spec.Weighted, t, i, u, one)
	}
	Label(done)
	return func() {
		Label(offs)
		for u, t := range ts {
			g.applyWeightAt(spec.Offset, t, i, u, one)
		}
		JMP(LabelRef(done))
	}
}

// prefetchLines prefetches the lines of one iteration of the scale loop in the row at pf.
func (g *gen) prefetchLines(pf, i GPVirtual) {
	for off := 0; off < unroll*g.s.lanes*g.eb; off += 64 {
		prefetch(g.at(pf, i, off))
	}
	if g.pfAdd != nil {
		none := g.label("noadd")
		TESTQ(g.pfAdd, g.pfAdd)
		JZ(LabelRef(none))
		for off := 0; off < unroll*g.s.lanes*g.eb; off += 64 {
			prefetch(g.at(g.pfAdd, i, off))
		}
		Label(none)
	}
}

// setPFAdd sets pfAdd, for the non-temporal scale loops of float32 rows, to the row of the rows
// added (the job's x, in res after the prologue's exchange) off bytes on from this one under
// FlagNext, which the Go side sets on a job with a residual only, and to 0 without it. Those
// rows' sum pass does not prefetch (see sumSquares): the scale pass of a row brings in the next
// row of h, and under FlagNext of x too (streamrule.NextResidual has the measurements). 16-bit
// rows' sum pass prefetches x two rows ahead itself. The loops with the prefetch test pfAdd per
// iteration (streamrule.NextResidual's measurements were taken with that test).
func (g *gen) setPFAdd(off GPVirtual) {
	MOVQ(g.res, g.pfAdd)
	ADDQ(off, g.pfAdd)
	// A mask of all ones under FlagNext, else 0: no branch (whose label would come right before
	// the loop's PCALIGN; see alignLoops), and no CMOV, which every amd64 CPU has but
	// TestAsmRequiresMatchDispatch would have dispatch check for.
	m := GP64()
	XORL(m.As32(), m.As32())
	TESTL(U32(spec.FlagNext), g.flags())
	SETNE(m.As8())
	NEGQ(m)
	ANDQ(m, g.pfAdd)
}

// compute returns vector u (of the lanes from element i) of the scale pass's output, before it is
// narrowed to the storage format: (src*inv)*w, (src*inv)*(1+w) with flagOffset, or src*inv when
// w is nil.
func (g *gen) compute(src, i GPVirtual, u int, invv, one VecVirtual) VecVirtual {
	t := g.s.vec()
	g.mulLoad(g.at(src, i, u*g.vstep()), invv, t)
	g.roundIfRN(t)
	g.applyWeight(t, g.atW(i, u*g.s.vbytes()), one, nil)
	if g.v.Layer {
		g.addBiases([]VecVirtual{t}, i, u)
	}
	return t
}

// roundIfRN rounds ts to the storage format in place when the job has flagRN (RoundNormalized),
// for the variants that take it (spec.Variant.Rounds). The flag is tested once per call, in the
// scale loop once per iteration: a branch that always goes the same way costs less than a second
// copy of the function.
func (g *gen) roundIfRN(ts ...VecVirtual) {
	if !g.v.Rounds() {
		return
	}
	skip := g.label("notrn")
	TESTL(U32(spec.FlagRN), g.flags())
	JZ(LabelRef(skip))
	switch {
	case g.cvt:
		g.roundCvt(ts)
	case g.rc.high != nil: // a loop that holds the constants (holdConsts with rn)
		g.roundTopAVX2(ts)
	default:
		for _, t := range ts {
			g.roundTo(t, g.s.vec(), t) // in place: the code after skip expects t
		}
	}
	Label(skip)
}

// applyWeight multiplies t by w + c from the weight vector at m (c is one: 1 with flagOffset, else
// -0), or leaves it when the job has no weight (w nil); with k set, only the lanes of k are read.
// For the ends of rows and the head of a non-temporal one, where a branch costs less than a copy.
func (g *gen) applyWeight(t VecVirtual, m Mem, one VecVirtual, k Op) {
	skip := g.label("noweight")
	TESTQ(g.w, g.w)
	JZ(LabelRef(skip))
	g.applyWeightAs(spec.Offset, t, m, one, k)
	Label(skip)
}

// applyWeightAs multiplies t by the weight vector at m, by 1 + it or by nothing, as mode says
// (each main loop of a function applies the form it is for, see spec.Variant.Body); with k set,
// only the lanes of k are read.
func (g *gen) applyWeightAs(mode spec.Mode, t VecVirtual, m Mem, one VecVirtual, k Op) {
	switch {
	case mode == spec.Unweighted:
	case mode == spec.Weighted && k == nil:
		VMULPS(m, t, t)
	default:
		u := g.s.vec()
		if k == nil {
			VMOVUPS(m, u)
		} else {
			VMOVUPS_Z(m, k, u)
		}
		if mode == spec.Offset {
			VADDPS(one, u, u)
		}
		VMULPS(u, t, t)
	}
}

// applyWeightAt is applyWeightAs for vector u of an iteration of an unrolled scale loop from
// element i. Where the loop unpacks its bfloat16 rows (scaleUnpacks), the weight's lanes are
// gathered into the unpacked vector's order first: of the pair of vectors that covers the 16
// elements from w's byte b, the low vector takes elements 0..3 and 8..11, VBROADCASTF128 of
// 8..11 blended with a load of 0..7, and the high one 4..7 and 12..15, VBROADCASTF128 of 4..7
// blended with a load of 8..15. Two loads and one blend, which any of the four vector pipes
// runs, per vector.
func (g *gen) applyWeightAt(mode spec.Mode, t VecVirtual, i GPVirtual, u int, one VecVirtual) {
	if g.zeroW == nil || mode == spec.Unweighted {
		g.applyWeightAs(mode, t, g.atW(i, u*g.s.vbytes()), one, nil)
		return
	}
	vb := g.s.vbytes()
	w, b := g.s.vec(), (u-u%2)*vb // b: the pair's first byte
	if u%2 == 0 {
		VBROADCASTF128(g.atW(i, b+vb), w)
		VBLENDPS(U8(0x0f), g.atW(i, b), w, w)
	} else {
		VBROADCASTF128(g.atW(i, b+vb/2), w)
		VBLENDPS(U8(0xf0), g.atW(i, b+vb), w, w)
	}
	if mode == spec.Offset {
		VADDPS(one, w, w)
	}
	VMULPS(w, t, t)
}

// scaleUnpacks reports whether the unrolled scale loops being emitted widen bfloat16 rows as the
// sum pass does (unpacks): AVX2, bfloat16 rows in and out, RMSNorm. Each pair of vectors then
// comes from one load with one in-lane shuffle per vector, where load takes a VBROADCASTI128 and a
// VPSHUFB, the weight is gathered into the same order (applyWeightAt), and the pair packs back
// into the row's order with VPACKUSDW alone, without packAVX2's VPERMQ.
func (g *gen) scaleUnpacks() bool {
	return g.s == avx2 && g.in() == spec.BF16 && g.out() == spec.BF16 && !g.cvt && !g.v.Layer
}

// partialOut computes and stores the n (0 < n < lanes) elements of output from element i: through
// a k-mask, or through copies on the stack.
func (g *gen) partialOut(src, i, n GPVirtual, invv, one VecVirtual) {
	s := g.s
	if s.masked {
		tab := GP64()
		LEAQ(kmaskAVX512, tab)
		m := K()
		KMOVW(Mem{Base: tab, Index: n, Scale: 2}, m)
		t := s.vec()
		g.loadMasked(g.at(src, i, 0), m, t)
		if g.v.Layer {
			VSUBPS(g.mv, t, t)
		}
		VMULPS(t, invv, t)
		g.roundIfRN(t)
		g.applyWeight(t, g.atW(i, 0), one, m)
		if g.v.Layer {
			g.addBiasMasked(t, i, m)
		}
		g.storeMasked(t, m, g.atDst(i, 0), false)
		return
	}
	// slotX holds the row's elements, then the weight's, then the output, a vector each (Layer:
	// then the bias's).
	vb := s.vbytes()
	p, sl := GP64(), GP64()
	LEAQ(g.at(src, i, 0), p)
	LEAQ(g.slotX, sl)
	g.copyElems(p, sl, n, g.eb)
	noW := g.label("nowcopy")
	TESTQ(g.w, g.w)
	JZ(LabelRef(noW))
	LEAQ(g.atW(i, 0), p)
	LEAQ(g.slotX.Offset(vb), sl)
	g.copyElems(p, sl, n, 4)
	Label(noW)
	if g.v.Layer {
		g.copyBias(i, n, g.slotX.Offset(3*vb))
	}
	t := s.vec()
	g.load(g.slotX, t)
	if g.v.Layer {
		VSUBPS(g.mv, t, t)
	}
	VMULPS(t, invv, t)
	g.roundIfRN(t)
	g.applyWeight(t, g.slotX.Offset(vb), one, nil)
	if g.v.Layer {
		g.addBiasAt(t, g.slotX.Offset(3*vb))
	}
	g.store(t, g.slotX.Offset(2*vb), false)
	LEAQ(g.slotX.Offset(2*vb), sl)
	LEAQ(g.atDst(i, 0), p)
	g.copyElems(sl, p, n, g.ebOut())
}

// pipes reports whether the function has the pipe (FlagPipe): float32 rows in and out, and on
// AVX2 float32 rows into float16 (ApplyToF16, whose narrowing is one instruction, VCVTPS2PH) and
// float16 rows in and out (ApplyF16: VCVTPH2PS widens the next row as the loop sums it),
// RMSNorm's functions and LayerNorm's. Not the bfloat16 ones: their integer rounding already
// bounds the scale loop, and with the next row's sum in it they measured 3-12% slower on Zen 3
// (bench/results). AVX-512's float32 functions pipe on Sapphire Rapids and Emerald Rapids (see
// streamrule.Pipe); its 16-bit functions were not measured with the pipe, so they have none.
func (g *gen) pipes() bool {
	return g.v.Format == spec.F32 || (g.s == avx2 && (g.v.Format == spec.ToF16 || g.v.Format == spec.F16))
}

// pipeRowChecks jumps to no unless the call has a row after this one, and what the Go side
// guarantees a pipe holds, tested again where a mistake would write outside dst's rows or fault:
// d a whole number of blocks, dst aligned to a vector for the non-temporal stores. It leaves d in
// the register it returns.
func (g *gen) pipeRowChecks(no string) GPVirtual {
	t := GP64()
	MOVQ(g.done, t)
	INCQ(t)
	CMPQ(t, g.to())
	JAE(LabelRef(no))
	MOVQ(g.d(), t)
	TESTQ(U32(block-1), t)
	JNZ(LabelRef(no))
	TESTQ(U32(g.s.vbytes()-1), g.dst)
	JNZ(LabelRef(no))
	return t
}

// pipe is the scale pass of a row under FlagPipe, when the call has a row after it: the loop that
// writes y = (x*inv)*w with non-temporal stores also sums the squares of the next row, block by
// block in the order of the sum pass (+0 + square is the square, so the zeroed partials give the
// sum pass's bits), and the row after goes straight on to invone with its partials. The Go side
// sets the flag only where the loop needs no tail: d a multiple of the block, rows of dst aligned
// to 32 bytes (AVX-512 pipes a row only when its dst is aligned to 64, tested here), no residual,
// one row at a time (d above GroupMax).
//
// In the Layer function (with flagCenter; a row without it is not piped) the loop writes
// y = ((x-m)*inv)*w + bias and sums the next row's elements instead (+0 + x is the sum pass's
// first add), and that row goes on to its mean, then to its centered squares, which read it from
// the cache. A pipe two rows deep, whose loop also formed the next row's centered squares and
// summed the row after, measured 0.94-1.10x this one's time on a Zen 3 (both read two rows, the
// weight and the bias from L2 for every row; bench/results/amd-zen3-milan.txt): not kept.
//
// Each block also prefetches the lines aheadBytes bytes further on in the next row, past its end
// the lines after it: the row after next when rows are back to back, the gap of a stride
// otherwise. A prefetch never faults, so the lines past the last row cost nothing but the load.
func (g *gen) pipe(invv, one VecVirtual) {
	s := g.s
	no := "nopipe"
	TESTL(U32(spec.FlagPipe), g.flags())
	JZ(LabelRef(no))
	if g.v.Layer {
		TESTL(U32(spec.FlagCenter), g.flags())
		JZ(LabelRef(no))
	}
	if g.out16() { // float16 out: RoundNormalized's rounding of x*inv is left to the loop without the pipe
		TESTL(U32(spec.FlagRN), g.flags())
		JNZ(LabelRef(no))
	}
	// The Go side aligns dst to 32 bytes: a row of AVX-512 whose dst is not aligned to 64 takes
	// the loop without the pipe.
	g.pipeRowChecks(no)
	CMPQ(g.pend, U8(1))
	JNE(LabelRef(no))
	nx := GP64() // the next row
	MOVQ(g.x, nx)
	ADDQ(g.strideB, nx)
	for k := range g.acc {
		s.zero(g.acc[k])
	}
	var b GPVirtual // the Layer function's bias, nil or not
	if g.v.Layer {
		b = GP64()
		MOVQ(g.field(spec.Job.Bias), b)
	}
	i := GP64()
	XORQ(i, i)
	TESTQ(g.w, g.w)
	JZ(LabelRef("pipenoweight"))
	TESTL(U32(spec.FlagOffset), g.flags())
	JNZ(LabelRef("pipeoffset"))
	loop := func(name string, form spec.Mode, bias bool) {
		Label(name)
		for l := 0; l < block*g.eb/64; l++ {
			prefetch(g.at(nx, i, aheadBytes+64*l))
		}
		var pair VecVirtual // float16 rows go out two vectors at a time, as in scaleLoop
		for k, a := range g.acc {
			off := k * s.vbytes() // of the weight and the bias; the rows' is k*g.vstep()
			v := s.vec()
			g.load(g.at(nx, i, k*g.vstep()), v)
			if !g.v.Layer {
				VMULPS(v, v, v)
			}
			VADDPS(v, a, a)
			y := s.vec()
			g.mulLoad(g.at(g.x, i, k*g.vstep()), invv, y)
			g.applyWeightAs(form, y, g.atW(i, off), one, nil)
			if bias {
				VADDPS(Mem{Base: b, Index: i, Scale: 4, Disp: off}, y, y)
			}
			switch {
			case !g.out16():
				g.storeNT([]VecVirtual{y}, g.atDst(i, k*g.vstepOut()))
			case k%2 == 0:
				pair = y
			default:
				g.storeNT([]VecVirtual{pair, y}, g.atDst(i, (k-1)*g.vstepOut()))
			}
		}
		ADDQ(U32(block), i)
		CMPQ(i, g.d())
		JB(LabelRef(name))
		JMP(LabelRef("piped"))
	}
	for _, f := range []struct {
		name string
		form spec.Mode
	}{{"pipeweighted", spec.Weighted}, {"pipeoffset", spec.Offset}, {"pipenoweight", spec.Unweighted}} {
		Label(f.name)
		if !g.v.Layer {
			loop(f.name+"loop", f.form, false)
			continue
		}
		TESTQ(b, b)
		JZ(LabelRef(f.name + "nobias"))
		loop(f.name+"loop", f.form, true)
		Label(f.name + "nobias")
		loop(f.name+"nobiasloop", f.form, false)
	}
	Label("piped")
	ADDQ(g.strideB, g.x)
	ADDQ(g.dstStrideB, g.dst)
	INCQ(g.done)
	s.partial(g.acc) // into acc[0], where invone (and a Layer function's mean) takes the partials
	if g.v.Layer {
		JMP(LabelRef("mean"))
	} else {
		JMP(LabelRef("invone"))
	}
	Label(no)
}
