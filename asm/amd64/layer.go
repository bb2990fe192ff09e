package main

import (
	"github.com/gosimd/rmsnorm/asm/internal/spec"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The Layer functions (spec.Variant.Layer: LayerNorm, a Norm with Center or Bias) are the kernel
// function of their format with a few switches, one row at a time, or four short rows at a time
// (layerSums: on AVX2 always, on AVX-512 under spec.FlagGroups):
//
//	sum:      with flagCenter, the sum of x (with a residual, addsum: of h = x + res, stored to
//	          res) in the 64 partials (under FlagPipe, in the scale loop of the row before: pipe);
//	          a sum that is not finite returns the row for the float64 path, else m = sum/d,
//	          broadcast to g.mv (a group's four in g.means: meanGroup). Without flagCenter
//	          m = +0 (x - +0 is x for every x, -0 included), and the sum pass of a row without a
//	          residual is skipped.
//	centered: the sum of (x-m)*(x-m) over x (h), each difference and square rounded, into acc
//	          for invOne, which reports inv and then the mean (a group's partials to g.q for
//	          invGroup, which reports the four invs and means).
//	scale:    y = ((x-m)*inv)*w' (rounded to the format first with flagRN), then + bias when the
//	          job has one, in every loop and at the ends of rows.
//
// The pieces of the RMSNorm functions that these switches touch emit the same code as before for
// them (g.v.Layer is false), so their speed does not change.

// accOp is what a sum pass adds to the partials.
type accOp int

const (
	accSquares  accOp = iota // x*x: RMSNorm's sum of squares
	accSum                   // x: LayerNorm's row sum
	accCentered              // (x-m)*(x-m), m in g.mv: LayerNorm's sum of squares
)

// layerSums emits the sum passes of a Layer function and returns the register holding the
// partly reduced partials of the centered squares, for invOne (or for invGroup, through g.q).
//
// The Layer functions take short rows four at a time, as the RMSNorm functions do: the sums of
// the group's rows, their four means in one register, the centered squares of each row with its
// mean, then invGroup and the scale pass, each row with its mean from g.means. The latencies of
// the two reductions and the divisions, which a short row waits on one after the other, overlap
// across the rows of a group. A group with a sum that is not finite or a t out of range is redone
// a row at a time, which stops at that row (see meanGroup). The AVX2 functions take groups of
// rows of at most spec.GroupMax always; the AVX-512 ones of rows of at most spec.LongGroupMax
// only under spec.FlagGroups (pickRows), which the Go side sets on the CPUs where they were
// measured faster (streamrule.LayerGroups).
func (g *gen) layerSums(acc []VecVirtual) VecVirtual {
	s := g.s
	g.mv = s.vec()
	Label("sum")
	TESTL(U32(spec.FlagCenter), g.flags())
	JZ(LabelRef("nocenter"))
	xr := GP64()
	MOVQ(g.x, xr)
	k := GP64() // byte offset of the row's slot in g.q (groups)
	XORQ(k, k)
	Label("meanrow")
	g.op = accSum
	p := g.partial(g.sumSquares(acc, xr, nil))
	g.op = accSquares
	g.groupRowDone(p, xr, k, "mean", "meanrow", "meangroup")
	g.meanGroup()

	g.sumAddRow(acc) // the sum of h, on to mean

	Label("mean")
	sum := s.finish1(p)
	TESTL(U32(spec.FlagCenter), g.flags())
	JZ(LabelRef("nocenter")) // a residual row without flagCenter: h is stored, its sum unused
	g.meanOf(sum)
	JMP(LabelRef("centered"))
	Label("nocenter")
	s.zero(g.mv)
	// A group's means: +0. The slot is packedBytes wide, as the register of packed.
	if s == avx2 {
		VMOVUPS(g.mv.AsX(), g.means)
	} else {
		VMOVUPS(g.mv, g.means)
	}

	Label("centered")
	xr = GP64()
	MOVQ(g.x, xr) // h with a residual (see prologue)
	XORQ(k, k)
	CMPQ(g.pend, U8(1))
	JE(LabelRef("sqrow"))
	Label("sqnext")
	r := GP64() // the row's index in the group: k / vbytes
	MOVQ(k, r)
	SHRQ(U8(map[int]uint8{32: 5, 64: 6}[s.vbytes()]), r)
	VBROADCASTSS(g.means.Idx(r, 4), g.mv)
	Label("sqrow")
	g.lp, g.op = "sq", accCentered
	p = g.partial(g.sumSquares(acc, xr, nil))
	g.lp, g.op = "", accSquares
	g.groupRowDone(p, xr, k, "invone", "sqnext", "invgroup")
	return p
}

// meanGroup finishes the sums of a group's four rows at once (the rest of the halving tree, as
// invGroup does), stores the four means m = sum/d to g.means and goes on to the centered squares.
// A sum that is not finite needs no test here, as meanOf makes for one row: its mean is infinite
// or NaN, so every centered square of its row is +Inf or NaN, and invGroup's range test sends the
// group to the one-row path, whose meanOf stops at that row.
func (g *gen) meanGroup() {
	s := g.s
	Label("meangroup")
	Comment("The rest of the halving tree for the group's sums, and their means.")
	means := s.packed()
	g.divideByD(g.finishGroup(), means, true)
	VMOVUPS(means, g.means)
	JMP(LabelRef("centered"))
}

// meanOf sets g.mv to m = sum/d in every lane, or returns the row for the float64 path when its
// sum is not finite (with tInRange, what lets roundTopAVX2 round without a NaN check).
func (g *gen) meanOf(sum VecVirtual) {
	Comment("A row whose sum is not finite (s-s is NaN) takes the float64 path; else m = s/d.")
	t := XMM()
	VSUBSS(sum, sum, t)
	VUCOMISS(t, t)
	JPS(LabelRef("ret"))
	g.divideByD(sum, t, false)
	VBROADCASTSS(t, g.mv)
}

// accumulate adds t to the partials a as the pass's op says (first: sets a, as +0 plus it).
func (g *gen) accumulate(a, t VecVirtual, first bool) {
	switch g.op {
	case accSum:
		if first {
			VADDPS(constZero64, t, a) // +0 + x, which is +0 for x = -0, as the contract's sum
		} else {
			VADDPS(t, a, a)
		}
		return
	case accCentered:
		VSUBPS(g.mv, t, t)
	}
	g.square(a, t, first)
}

// accumulateMasked is accumulate for a vector read through the k-mask k at the end of a row
// (never the first block): its other lanes are zero, which the sum adds as +0 and the centered
// pass clears after the subtraction.
func (g *gen) accumulateMasked(a, t VecVirtual, k Op) {
	if g.op == accCentered {
		VSUBPS_Z(g.mv, t, k, t)
		VMULPS(t, t, t)
	}
	VADDPS(t, a, a)
}

// slotTailCentered is slotTail for the centered pass of AVX2: the last rem (1..63) elements from
// element i are copied to the slot and summed there, each vector's lanes from rem on cleared
// after the subtraction (a zero lane would add m*m). Its own block, with the lane masks, rather
// than the loop's; in an unpacked pass (unpacks) the lanes of each pair hold its elements out of
// order, and the masks follow (constIotaUnpacked).
func (g *gen) slotTailCentered(acc []VecVirtual, xr, i, rem GPVirtual) {
	s := g.s
	src, sx := GP64(), GP64()
	LEAQ(g.at(xr, i, 0), src)
	LEAQ(g.slotX, sx)
	g.copyElems(src, sx, rem, g.eb)
	n := XMM()
	nv := s.vec()
	VMOVQ(rem, n)
	VPBROADCASTD(n, nv)
	iota := constIota
	if g.zeroW != nil {
		iota = constIotaUnpacked
	}
	var words VecVirtual // unpacked: the pair's words, loaded once
	for k := range acc {
		t, keep := s.vec(), s.vec()
		switch {
		case g.zeroW != nil && k%2 == 0:
			// One load of the pair: the copy was stored in pieces, and a load that spans
			// several of them waits for them all (no store forwarding), once per pair this way.
			words = s.vec()
			VMOVDQU(Mem{Base: sx, Disp: k * g.vstep()}, words)
			VPUNPCKLWD(words, g.zeroW, t)
		case g.zeroW != nil:
			VPUNPCKHWD(words, g.zeroW, t)
		default:
			g.load(Mem{Base: sx, Disp: k * g.vstep()}, t)
		}
		VSUBPS(g.mv, t, t)
		VPCMPGTD(iota.Offset(4*k*s.lanes), nv, keep) // the lane's element index < rem
		VANDPS(keep, t, t)
		VMULPS(t, t, t)
		VADDPS(t, acc[k], acc[k])
	}
}

// reportMean stores the row's mean (lane 0 of g.mv) to the job's mean[done] when the caller
// asked for it; the label reportmean is where reportInv goes on in a Layer function.
func (g *gen) reportMean() {
	g.reportMeansAt("reportmean", func(m Mem) { VMOVSS(g.mv.AsX(), m) })
}

// reportMeans stores the means of a group's rows (g.means) to the job's mean[done..done+3] when
// the caller asked for them, and falls through to the scale pass.
func (g *gen) reportMeans() {
	g.reportMeansAt("reportmeans", func(m Mem) {
		t := g.s.packed()
		VMOVUPS(g.means, t)
		g.s.storeLanes4(t, m)
	})
}

// reportMeansAt emits, at label, the store of the means from row done into the job's mean with
// store, when the caller asked for them (else on to scale).
func (g *gen) reportMeansAt(label string, store func(m Mem)) {
	Label(label)
	Comment("Report the mean if asked.")
	mp := GP64()
	MOVQ(g.field(spec.Job.Mean), mp)
	TESTQ(mp, mp)
	JZ(LabelRef("scale"))
	r := GP64()
	MOVQ(g.done, r)
	store(Mem{Base: mp, Index: r, Scale: 4})
}

// bias loads the job's bias pointer into a new register and jumps to skip when it is nil: it is
// read where it is used, so that it holds no register through the function.
func (g *gen) bias(skip string) GPVirtual {
	b := GP64()
	MOVQ(g.field(spec.Job.Bias), b)
	TESTQ(b, b)
	JZ(LabelRef(skip))
	return b
}

// addBiases adds to ts[k] the bias vector from element i plus (from+k) vectors, when the job has a
// bias: one test for all of them.
func (g *gen) addBiases(ts []VecVirtual, i GPVirtual, from int) {
	skip := g.label("nobias")
	b := g.bias(skip)
	for k, t := range ts {
		VADDPS(Mem{Base: b, Index: i, Scale: 4, Disp: (from + k) * g.s.vbytes()}, t, t)
	}
	Label(skip)
}

// addBiasMasked adds the lanes of k of the bias vector from element i to t (AVX-512), when the
// job has a bias.
func (g *gen) addBiasMasked(t VecVirtual, i GPVirtual, k Op) {
	skip := g.label("nobias")
	b := g.bias(skip)
	u := g.s.vec()
	VMOVUPS_Z(Mem{Base: b, Index: i, Scale: 4}, k, u)
	VADDPS(u, t, t)
	Label(skip)
}

// copyBias copies the n elements of the bias from element i to slot (AVX2's ends of rows), when
// the job has a bias.
func (g *gen) copyBias(i, n GPVirtual, slot Mem) {
	skip := g.label("nobiascopy")
	b := g.bias(skip)
	p, sl := GP64(), GP64()
	LEAQ(Mem{Base: b, Index: i, Scale: 4}, p)
	LEAQ(slot, sl)
	g.copyElems(p, sl, n, 4)
	Label(skip)
}

// addBiasAt adds the vector at m, the bias copied by copyBias, to t when the job has a bias.
func (g *gen) addBiasAt(t VecVirtual, m Mem) {
	skip := g.label("nobias")
	g.bias(skip)
	VADDPS(m, t, t)
	Label(skip)
}

// constIota holds the int32 lane indexes 0..63 (slotTailCentered's masks), constIotaUnpacked the
// element index each lane of a block of bfloat16 elements unpacked on AVX2 holds (unpacks).
var constIota, constIotaUnpacked Mem

func declareLayerConstants() {
	constIota = GLOBL("iota64", RODATA|NOPTR)
	for k := 0; k < block; k++ {
		DATA(4*k, U32(uint32(k)))
	}
	constIotaUnpacked = GLOBL("iota64unpacked", RODATA|NOPTR)
	for q := 0; q < block; q++ {
		k, j := q/8, q%8 // lane j of vector k; vector 2c+h holds 16c+4h+0..3 and 16c+4h+8..11
		DATA(4*q, U32(uint32(16*(k/2)+4*(k%2)+j%4+8*(j/4))))
	}
}
