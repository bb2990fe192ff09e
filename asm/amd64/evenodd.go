package main

import (
	"fmt"

	"github.com/gosimd/rmsnorm/asm/internal/spec"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The sum passes of bfloat16 rows on AVX-512 (RMSNorm's squares, LayerNorm's sum and centered
// squares, and the residual pass: addEvenOddPair) widen a pair of vectors from one 64-byte load
// with one instruction each: a 32-bit lane of the loaded words holds elements 2j (low word) and
// 2j+1 (high word), so VPSLLD by 16 gives the even elements as float32 and VPANDD with 0xffff0000
// the odd ones. VPERMW, or VPMOVZXWD and VPSLLD, take one shuffle (and a shift) per vector, and
// the sum pass of a bfloat16 row was bound by them.
//
// The lanes then hold the partials out of order: for the pair of vectors 2c and 2c+1, vector 2c
// holds partials 32c+0, 2, ..., 30 and vector 2c+1 partials 32c+1, 3, ..., 31. Each lane still
// takes one partial's elements in the row's order, so the partials are the contract's once
// unpermuteEvenOdd puts them back in order at the end of the row (four VPERMI2PS), before the
// halving tree. A C model of the loop on the Emerald Rapids machine (bench/results), 4096
// elements in L1, best of 200 rounds: 137.8 ns with VPERMW, 137.4 with VPMOVZXWD and VPSLLD,
// 97.4 with the even and odd halves (float32 rows: 77.0). ForwardBF16 there, alternated with
// Forward in one process: 1x4096 560 -> 513 ns, 1x1024 161 -> 151 ns; rows shorter than two
// blocks keep the widening in the row's order (naturalShort).

// evenOdd reports whether the sum pass being emitted widens bfloat16 rows in even and odd halves.
func (g *gen) evenOdd() bool {
	return g.s == avx512 && g.in() == spec.BF16
}

// naturalShort emits the sum pass of rows shorter than two blocks, which widen in the row's
// order (a block and a masked tail, or the tail alone) as the other sum passes do, and go on to
// ordered: the four permutes that put the partials back in order would cost them more than the
// halves save. Rows of 64 bfloat16 elements, ForwardBF16 alternated with Forward in one process
// on the Emerald Rapids machine: one row 29.0-29.5 ns widened by VPERMW, 30.1-30.9 in halves; 32
// rows 499-515 against 518-525. Rows of 128 were as fast either way, and longer ones faster in
// halves.
func (g *gen) naturalShort(acc []VecVirtual, xr, rr GPVirtual) {
	defer func(h VecVirtual) { g.ls, g.highW = "", h }(g.highW)
	ordered := g.l("ordered")
	g.ls, g.highW = "nat", nil // the labels of the copy: summednat, tailmask0nat, ...
	Comment("Rows shorter than two blocks: widened in order, no permutes.")
	i, rem := GP64(), GP64()
	XORQ(i, i)
	MOVQ(g.d(), rem)
	CMPQ(rem, U32(block))
	JB(LabelRef(g.l("short")))
	g.block(acc, xr, rr, i, true)
	MOVQ(U32(block), i)
	SUBQ(U32(block), rem)
	JZ(LabelRef(ordered))
	JMP(LabelRef(g.l("tail")))
	Label(g.l("short"))
	for k := range acc {
		g.s.zero(acc[k])
	}
	Label(g.l("tail"))
	g.maskedTail(acc, xr, rr, i, rem)
	Label(g.l("summed"))
	JMP(LabelRef(ordered))
}

// Constants of the even and odd halves.
var (
	kmask32AVX512 Mem // uint32 (1<<n)-1 for n = 0..32: the words of a 64-byte tail load
	evenOddIdx    Mem // unpermuteEvenOdd's VPERMI2PS indexes, two vectors of 16
	// interleaveWords are the VPERMW indexes that take words 0-15 (the even elements) and 16-31
	// (the odd ones) of a vector to words 0, 2, ..., 30 and 1, 3, ..., 31.
	interleaveWords Mem
)

func declareEvenOddConstants() {
	kmask32AVX512 = GLOBL("kmask32", RODATA|NOPTR)
	for n := 0; n <= 32; n++ {
		DATA(4*n, U32(uint32(1<<n-1)))
	}
	interleaveWords = GLOBL("interleavewords", RODATA|NOPTR)
	for j := 0; j < 32; j++ {
		DATA(2*j, U16(uint16(j%2*16+j/2)))
	}
	evenOddIdx = GLOBL("evenoddidx", RODATA|NOPTR)
	for h := 0; h < 2; h++ {
		for j := 0; j < 16; j++ {
			q := 16*h + j // the partial of the pair's 32 that lane j of its vector h gets
			DATA(4*q, U32(uint32(q%2*16+q/2)))
		}
	}
}

// halves widens the 32 bfloat16 words of src (a register, or 64 bytes of a row) into float32
// vectors of the even elements and of the odd ones.
func (g *gen) halves(src Op) (e, o VecVirtual) {
	e, o = ZMM(), ZMM()
	VPSLLD(U8(16), src, e)
	VPANDD(src, g.highW, o)
	return e, o
}

// accumulateHalves adds the 32 elements of src (the words of vectors k and k+1 of a block, in the
// row's order) to acc[k] (the even ones) and acc[k+1] (the odd ones), as the pass's op says.
func (g *gen) accumulateHalves(acc []VecVirtual, k int, src Op, first bool) {
	e, o := g.halves(src)
	g.accumulate(acc[k], e, first)
	g.accumulate(acc[k+1], o, first)
}

// addEvenOddPair is accumulateHalves on the residual pass: h = x + res for the 32 elements of vectors k
// and k+1, rounded, stored to res and accumulated (addHalves). The widening in the row's order
// (blockAddCvt) takes a VPERMW for each vector of x, of res and of h.
func (g *gen) addEvenOddPair(acc []VecVirtual, xr, rr, i GPVirtual, k int, first bool) {
	xw, rw := ZMM(), ZMM()
	VMOVDQU64(g.at(xr, i, k*g.vstep()), xw)
	VMOVDQU64(g.at(rr, i, k*g.vstep()), rw)
	w := g.addHalves(xw, rw)
	VMOVDQU64(w, g.at(rr, i, k*g.vstep()))
	g.accumulateHalves(acc, k, w, first)
}

// addHalves returns the words of h = round16(x + res) in the row's order, for the 32 words of x in
// xw and of res in rw. The avx512bf16 functions round and pack the halves in one VCVTNE2PS2BF16
// (packCvt: the even elements' words, then the odd ones'), and one VPERMW puts the words back in
// order. The avx512 functions round each half with the integer rounding, which leaves the word in
// the top of each lane, and one VPTERNLOGD takes the odd halves' top words and the even halves'
// shifted down: the words in order, where the widening in the row's order rounds each vector and
// stores it with a VPMOVDW.
func (g *gen) addHalves(xw, rw VecVirtual) VecVirtual {
	he, ho := g.halves(xw)
	re, ro := g.halves(rw)
	VADDPS(re, he, he)
	VADDPS(ro, ho, ho)
	w := ZMM()
	if g.cvt {
		VPERMW(g.packCvt(he, ho), g.interW, w)
		return w
	}
	te := ZMM()
	g.bf16RoundTop(he, te)
	g.bf16RoundTop(ho, w)
	VPSRLD(U8(16), te, te)
	VPTERNLOGD(U8(0xb8), w, g.highW, te) // highW ? w : te, bit by bit
	return te
}

// maskedTailEvenOdd is maskedTail for the even and odd halves: the last rem (1..63) elements
// from element i, up to 32 words at a time through a k-mask of the words (zero words widen to
// +0, which the sums add without change, and on the residual pass give h = +0, which is not
// stored; the centered pass clears its lanes past the row's end after the subtraction, ceil(n/2)
// even lanes and floor(n/2) odd ones of n words).
func (g *gen) maskedTailEvenOdd(acc []VecVirtual, xr, rr, i, rem GPVirtual) {
	words := 2 * g.s.lanes
	tab := GP64()
	LEAQ(kmask32AVX512, tab)
	var tab16 GPVirtual
	if g.op == accCentered {
		tab16 = GP64()
		LEAQ(kmaskAVX512, tab16)
	}
	for k := 0; k < len(acc); k += 2 {
		n := GP64()
		MOVQ(rem, n)
		if k > 0 {
			SUBQ(U32(k*g.s.lanes), n)
			JLE(LabelRef(g.l("summed")))
		}
		l := g.l(fmt.Sprintf("tailwords%d", k))
		CMPQ(n, U32(words))
		JLE(LabelRef(l))
		MOVQ(U32(words), n)
		Label(l)
		m := K()
		KMOVD(Mem{Base: tab, Index: n, Scale: 4}, m)
		t := ZMM()
		VMOVDQU16_Z(g.at(xr, i, k*g.vstep()), m, t)
		if g.add() { // h = round16(x + res), stored to res through the mask
			r := ZMM()
			VMOVDQU16_Z(g.at(rr, i, k*g.vstep()), m, r)
			t = g.addHalves(t, r)
			VMOVDQU16(t, m, g.at(rr, i, k*g.vstep()))
		}
		e, o := g.halves(t)
		var ke, ko Op
		switch g.op {
		case accSquares:
			VMULPS(e, e, e)
			VMULPS(o, o, o)
		case accCentered:
			ne := GP64()
			LEAQ(Mem{Base: n, Disp: 1}, ne)
			SHRQ(U8(1), ne)
			SHRQ(U8(1), n)
			ke, ko = K(), K()
			KMOVW(Mem{Base: tab16, Index: ne, Scale: 2}, ke)
			KMOVW(Mem{Base: tab16, Index: n, Scale: 2}, ko)
		}
		g.accumulateMasked(acc[k], e, ke)
		g.accumulateMasked(acc[k+1], o, ko)
	}
}

// unpermuteEvenOdd puts the partials of acc back in the order of the other sum passes, partials
// 16k..16k+15 in acc[k], in the same registers: the code after the pass (invone, a Layer
// function's mean) takes them where every sum pass leaves them.
func (g *gen) unpermuteEvenOdd(acc []VecVirtual) {
	Comment("The partials back in order: 16k..16k+15 in acc[k] (see evenodd.go).")
	for c := 0; c < len(acc); c += 2 {
		t := []VecVirtual{ZMM(), ZMM()}
		for h := range t {
			VMOVDQU32(evenOddIdx.Offset(64*h), t[h])
			VPERMI2PS(acc[c+1], acc[c], t[h])
		}
		VMOVAPS(t[0], acc[c])
		VMOVAPS(t[1], acc[c+1])
	}
}
