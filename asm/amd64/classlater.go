package main

import (
	"github.com/gosimd/rmsnorm/asm/internal/spec"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// A row's class (the float32 path or the float64 one) comes from its own sums, which the backward
// computes in passes of their own even when the caller gives Mean and Inv, the values the passes
// after them use. Yet a row whose |x| are all at most 2^48 (so none is NaN or infinite), of fewer
// than 2^26 elements, with eps >= 2^-100, is always on the float32 path: its sum is at most 2^74
// and finite; |x - m| is at most 2^49 and a little more, each square below 2^98.1, so ss stays
// below 2^124.1 and ss/d below 2^98.1, and t = ss/d + eps is at most MaxFloat32 whatever the
// finite eps (MaxFloat32 + 2^98.1 rounds to MaxFloat32: half its ulp is 2^103) and at least
// eps >= 2^-100 (ss/d >= 0, and rounding is monotonic). The same holds for RMSNorm's sum of
// squares, below 2^122.
//
// So when the job has Mean and Inv (defersClass), a centered row first forms its sums of g and g*n
// with them, taking the largest |x| along the way (trackMax), and takes its class passes only when
// that is above 2^48 (classIfLarge): the same results, for one pass over the row instead of three.
// An RMSNorm row with Inv forms its sum of g*x alone the same way, and skips its sum of squares
// (classLaterRMS).

// boundBits is float32 2^48, the largest |x| of a row whose class needs no passes, as raw bits.
const boundBits = (127 + 48) << 23

// maxRowForBound is the first row length for which it does: rows must be shorter.
const maxRowForBound = 1 << 26

var constAbs8, constBound8 Mem

func declareClassConstants() {
	constAbs8 = GLOBL("abs8", RODATA|NOPTR)
	for i := 0; i < 8; i++ {
		DATA(4*i, U32(0x7fffffff))
	}
	constBound8 = GLOBL("bound8", RODATA|NOPTR)
	for i := 0; i < 8; i++ {
		DATA(4*i, U32(boundBits))
	}
}

// defersClass reports whether the centered body decides the class of rows with Mean and Inv
// after their sums of g and g*n: AVX2's Layer functions. (The RMSNorm ones do it for rows with
// Inv: classLaterRMS.)
func (b *bgen) defersClass() bool { return b.s == avx2 && b.layer }

// classLaterRMS, in the AVX2 RMSNorm functions (backPipes), sends a row without the pipe whose job
// has Inv, eps at least 2^-100 and d below maxRowForBound to the sum of g*x alone, with its
// largest |x| (sumcd). When that is at most 2^48 the row skips its sum of squares: it goes on to
// summed with c's partials in accs[1][0] and ss's set to +0, so that t = 0/d + eps = eps passes
// invRow's range test, which is what the row's own ss would do, and inv is Inv[r]. Else, as
// any other row, it goes to sumboth for both sums.
func (b *bgen) classLaterRMS() {
	s := b.s
	b.classMayWait("sumboth", spec.Job.Inv)
	Comment("Inv given, eps and d in range: the sum of g*x first, with the largest |x|.")
	b.maxv = s.vec()
	s.zero(b.maxv)
	s.partial(b.sums("sumcd", false, true)[1]) // into accs[1][0]
	b.classIfLarge("sumboth")
	Comment("Every |x| at most 2^48: on the float32 path, t in range; ss = +0 gives t = eps, in range too.")
	s.zero(b.accs[0][0])
	JMP(LabelRef("summed"))
}

// classMayWait jumps to label other (a label of the body being emitted) unless the row's class may
// wait for its largest |x|: the job has each of fields (Inv, and Mean for a centered row), d is
// below maxRowForBound and eps at least 2^-100, the conditions of the bound above.
func (b *bgen) classMayWait(other string, fields ...string) {
	for _, f := range fields {
		p := GP64()
		MOVQ(b.field(f), p)
		TESTQ(p, p)
		JZ(LabelRef(b.bl(other)))
	}
	CMPQ(b.d(), U32(maxRowForBound))
	JAE(LabelRef(b.bl(other)))
	e := XMM()
	VMOVSS(b.eps(), e)
	VUCOMISS(constLo, e)
	JCS(LabelRef(b.bl(other))) // eps < 2^-100
}

// classLater sends a row whose job has Mean and Inv, eps at least 2^-100 and d below
// maxRowForBound straight to its sums of g and g*n (gsums) with m = Mean[r] in b.mv and
// inv = Inv[r] in invr, deferred set; any other row falls through to its class passes.
func (b *bgen) classLater(invr VecVirtual) {
	MOVQ(U32(0), b.deferred)
	b.classMayWait("class", spec.Job.Mean, spec.Job.Inv)
	Comment("Mean and Inv given, eps and d in range: the class after the sums of g and g*n.")
	mp, ip, r := GP64(), GP64(), GP64()
	MOVQ(b.field(spec.Job.Mean), mp)
	MOVQ(b.field(spec.Job.Inv), ip)
	MOVQ(b.done, r)
	VBROADCASTSS(Mem{Base: mp, Index: r, Scale: 4}, b.mv)
	VMOVSS(Mem{Base: ip, Index: r, Scale: 4}, invr)
	MOVQ(U32(1), b.deferred)
	JMP(LabelRef(b.bl("gsums")))
}

// trackMax folds the raw |x| bits of the vector v into b.maxv, when it gathers them.
func (b *bgen) trackMax(v VecVirtual) {
	if b.maxv == nil {
		return
	}
	t := b.s.vec()
	VPAND(constAbs8, v, t)
	VPMAXUD(t, b.maxv, b.maxv)
}

// classIfLarge, after the sums of a row whose class waits, sends it to label class (its class
// passes) when its largest |x| is above 2^48 (or NaN). b.maxv is done with.
func (b *bgen) classIfLarge(class string) {
	Comment("An |x| above 2^48: the class passes now.")
	m := b.s.vec()
	VPCMPGTD(constBound8, b.maxv, m) // as signed: the |x| bits are non-negative
	b.maxv = nil
	VPTEST(m, m)
	JNZ(LabelRef(b.bl(class)))
}
