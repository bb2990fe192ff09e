package main

import (
	"github.com/gosimd/rmsnorm/asm/internal/spec"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Loads and stores of row elements in their storage format. Every computation runs on float32
// lanes; a 16-bit row is widened as it is loaded and narrowed as it is stored:
//
//   - bfloat16 widens by a zero extension of each 16-bit lane to 32 bits and a shift left by 16
//     (in the AVX2 sum passes by interleaving the words with zero words instead: unpacks; in the
//     AVX-512 sum passes of rows of 128 and more by a shift or a mask of the 32-bit lanes, which
//     gives the even and the odd elements: evenOdd; in the unrolled AVX2 scale loops of RMSNorm
//     by unpacking too, scaleUnpacks, of LayerNorm by one VPSHUFB: load), and narrows by integer
//     round-to-nearest-even
//     on the float32 bits (add 0x7fff plus the lowest kept bit, keep the top half), with NaN
//     replaced by the quiet NaN 0x7fc0 (the generic kernel's; in the unrolled AVX2 scale and
//     conversion loops looked for once per pair of vectors, packAVX2, elsewhere blended into each
//     vector); the avx512bf16 functions narrow with AVX512_BF16's VCVTNE2PS2BF16 instead, and
//     take the integer rounding only for vectors with a subnormal or NaN lane, which that
//     instruction would get wrong (bf16cvt.go);
//   - binary16 uses VCVTPH2PS and VCVTPS2PH with the round-to-nearest-even immediate, which keep
//     subnormals, overflow to ±Inf and quiet NaNs.
//
// On AVX-512 the 16-bit halves live in YMM registers only as operands of these 512-bit
// instructions (VPMOVDW, VCVTPS2PH, VCVTPH2PS, VINSERTI64X4), which AVX-512F encodes for Y0-Y31
// without AVX-512VL.

// vstep is the bytes of row memory (x and the residual) one vector of lanes covers; vstepOut
// the same for dst.
func (g *gen) vstep() int    { return g.s.lanes * g.eb }
func (g *gen) vstepOut() int { return g.s.lanes * g.ebOut() }

// in and out are the formats of x and the residual, and of dst: the same but for RowsTo16's
// formats (spec.ToBF16, spec.ToF16), float32 in and 16 bits out.
func (g *gen) in() spec.Format  { return g.v.Format.In() }
func (g *gen) out() spec.Format { return g.v.Format.Out() }

// ebOut is the bytes of one element of dst.
func (g *gen) ebOut() int { return g.v.Format.OutBytes() }

// in16 reports whether x and the residual are stored in 16 bits; out16 whether dst is.
func (g *gen) in16() bool  { return g.in() != spec.F32 }
func (g *gen) out16() bool { return g.out() != spec.F32 }

// half returns a register of the width of one vector of 16-bit lanes (YMM for AVX-512, XMM for
// AVX2), the view of v's low part.
func (g *gen) half(v VecVirtual) VecVirtual {
	if g.s == avx512 {
		return v.AsY().(VecVirtual)
	}
	return v.AsX().(VecVirtual)
}

// load widens the lanes of one vector of row elements (of x or the residual) at m into v.
func (g *gen) load(m Mem, v VecVirtual) {
	switch f := g.in(); {
	case f == spec.F32:
		VMOVUPS(m, v)
	case f == spec.BF16 && g.rc.widen != nil:
		// Both 128-bit lanes get the 8 words, and VPSHUFB puts each lane's four under zero
		// words: one shuffle, where VPMOVZXWD and VPSLLD are a shuffle and a shift. ForwardBF16
		// 1x4096 on a Zen 3, alternated in one process with VPMOVZXWD: 0.955-0.98x the time, with
		// RoundNormalized 0.93-0.94x; llvm-mca's cycles per iteration of its scale loop: Zen 3
		// 19.7 -> 16.4, Zen 2 19.1 -> 19.1, Skylake 19.2 -> 16.6.
		VBROADCASTI128(m, v)
		VPSHUFB(g.rc.widen, v, v)
	case f == spec.BF16:
		VPMOVZXWD(m, v)
		VPSLLD(U8(16), v, v)
	case f == spec.F16:
		VCVTPH2PS(m, v)
	}
}

// loadMasked is load for the lanes of k only (AVX-512); the others are zero and their memory is
// not touched.
func (g *gen) loadMasked(m Mem, k Op, v VecVirtual) {
	switch g.in() {
	case spec.F32:
		VMOVUPS_Z(m, k, v)
	case spec.BF16:
		VPMOVZXWD_Z(m, k, v)
		VPSLLD(U8(16), v, v)
	case spec.F16:
		VCVTPH2PS_Z(m, k, v)
	}
}

// mulLoad sets t = (row vector at m) * invv (Layer: (row vector - mean) * invv).
func (g *gen) mulLoad(m Mem, invv, t VecVirtual) {
	if g.v.Layer {
		g.load(m, t)
		VSUBPS(g.mv, t, t)
		VMULPS(invv, t, t)
		return
	}
	if !g.in16() {
		VMULPS(m, invv, t)
		return
	}
	g.load(m, t)
	VMULPS(invv, t, t)
}

// mulLoadAt is mulLoad for vector u of an unrolled loop (see loadAt).
func (g *gen) mulLoadAt(m Mem, u int, invv, t VecVirtual) {
	if g.v.Layer {
		g.loadAt(m, u, t)
		VSUBPS(g.mv, t, t)
		VMULPS(invv, t, t)
		return
	}
	if !g.in16() {
		g.mulLoad(m, invv, t)
		return
	}
	g.loadAt(m, u, t)
	VMULPS(invv, t, t)
}

// bf16Round sets out to the bfloat16 rounding of v: with keepTop the float32 bits of the rounded
// value, else those bits shifted down to the low 16 of each lane, ready to be packed. t (not v)
// is scratch; out may be t or v.
func (g *gen) bf16Round(v, t, out VecVirtual, keepTop bool) {
	if g.s == avx512 {
		c := g.bf
		f := g.quietNaN(v)
		VPSRLD(U8(16), f, t)
		VPANDD(c.one, t, t) // the lowest bit kept
		VPADDD(c.bias, t, t)
		VPADDD(f, t, t)
		if keepTop {
			VPANDD(c.high, t, out)
		} else {
			VPSRLD(U8(16), t, out)
		}
		return
	}
	c := bfConsts[g.s.name]
	g.bf16Add(v, t)
	nan := c.nanLow
	if keepTop {
		nan = c.nanHigh
		VPAND(c.high, t, t)
	} else {
		VPSRLD(U8(16), t, t)
	}
	// NaN lanes (unordered with themselves) become the quiet NaN.
	m := g.s.vec()
	VCMPPS(U8(3), v, v, m)
	VBLENDVPS(m, nan, t, out)
}

// bf16Add sets t (not v) to the float32 bits of v plus 0x7fff plus the lowest bit kept, whose top
// halves are the bfloat16 rounding of v's lanes but for NaN (AVX2), with the constants from the
// registers of holdConsts when it holds them, else from memory. The kept bit is tested in place
// (VPAND with 0x10000, VPCMPEQD: -1 where it is set) and subtracted, where a VPSRLD and a VPAND
// took it down to bit 0: Zen 3 runs shifts on two of its four vector pipes, the ones its shuffles
// and the unpacking of bfloat16 rows use too. On a Zen 3, old and new test binaries interleaved
// three times, ns/op: Float32ToBF16 of 4096 elements 408-424 -> 382-387, ForwardBF16 1x4096
// 774-782 -> 756-767, ApplyToBF16 1x4096 692-698 -> 681-690; llvm-mca's cycles for the conversion
// loop: 8% fewer on Zen 3, the same on Zen 1-2, Haswell, Skylake, Ice Lake and Alder Lake.
func (g *gen) bf16Add(v, t VecVirtual) {
	var kept, bias Op = bfConsts[g.s.name].keptBit, bfConsts[g.s.name].bias
	if g.rc.kept != nil {
		kept, bias = g.rc.kept, g.rc.bias
	}
	VPAND(kept, v, t)
	VPCMPEQD(kept, t, t)
	VPSUBD(t, v, t)
	VPADDD(bias, t, t)
}

// loopRegs hold the constants of bfloat16 rounding (0x10000 and 0x7fff in every lane, 0xffff0000
// for roundTopAVX2) and of widening (load) through one loop on AVX2, which has registers to spare
// there but not through the whole function: each vector would otherwise load them, two or three
// loads beside the row's one or two.
type loopRegs struct{ kept, bias, high, widen VecVirtual }

// holdConsts loads the rounding constants into registers for the loop about to be emitted, when it
// narrows to bfloat16 on AVX2 with the integer rounding, and returns whether it did; rn says the
// loop rounds the normalized values too (roundIfRN), which needs 0xffff0000 as well, and widen
// that it reads rows in bfloat16 through load, which then takes the VPSHUFB indexes (or, where the
// loop unpacks its rows, scaleUnpacks, loadAt the zero words of zeroW). release
// forgets them when the loop has been emitted. The caller emits the loads after the label the
// loop is entered by and before the label its back edge jumps to (in convert, which has no
// other way in, before the one label).
func (g *gen) holdConsts(rn, widen bool) bool {
	if g.s != avx2 || g.out() != spec.BF16 || g.cvt {
		return false
	}
	c := bfConsts[g.s.name]
	g.rc.kept, g.rc.bias = YMM(), YMM()
	VMOVDQU(c.keptBit, g.rc.kept)
	VMOVDQU(c.bias, g.rc.bias)
	if rn {
		g.rc.high = YMM() // for roundTopAVX2
		VMOVDQU(c.high, g.rc.high)
	}
	switch {
	case widen && g.scaleUnpacks():
		g.zeroW = YMM() // for loadAt
		VPXOR(g.zeroW, g.zeroW, g.zeroW)
	case widen:
		g.rc.widen = YMM() // for load
		VMOVDQU(widenShuf, g.rc.widen)
	}
	return true
}

func (g *gen) release() { g.rc, g.zeroW = loopRegs{}, nil }

// bf16RoundTop sets t (not v) to a vector whose top 16 bits of each lane are the bfloat16
// rounding of v; the low 16 bits are left over from the rounding (AVX-512).
func (g *gen) bf16RoundTop(v, t VecVirtual) {
	c := g.bf
	f := g.quietNaN(v)
	VPSRLD(U8(16), f, t)
	VPANDD(c.one, t, t)
	VPADDD(c.bias, t, t)
	VPADDD(f, t, t)
}

// quietNaN returns, in a new register, v with its NaN lanes replaced by the quiet NaN 0x7fc00000,
// which the integer rounding keeps (AVX-512). VFIXUPIMMPS's own quiet NaN is the negative
// 0xffc00000, so it does the reverse: its table (bffixnan) keeps the destination, a copy of
// 0x7fc00000, in NaN lanes and takes v in every other lane. The register copy costs nothing
// measurable where the CPU renames it away; a compare into a mask and a masked move instead made
// the narrowing loops 10-27% slower.
func (g *gen) quietNaN(v VecVirtual) VecVirtual {
	f := g.s.vec()
	VMOVDQA64(g.bf.nan, f)
	VFIXUPIMMPS(U8(0), g.bf.fixNaN, v, f)
	return f
}

// bfRegs are the constants of bfloat16 rounding in registers, for the AVX-512 kernels (which have
// registers to spare): 1, 0x7fff, 0xffff0000 and the quiet NaN 0x7fc00000 in every lane, the
// VFIXUPIMMPS table of quietNaN, and the indexes of the odd 16-bit words of two vectors (pack).
type bfRegs struct{ one, bias, high, nan, fixNaN, oddWords VecVirtual }

// loadBF16Consts broadcasts the constants of bfloat16 rounding into registers (AVX-512); high
// says whether 0xffff0000 is among them (the rounding that keeps the top halves: bf16Round), which
// the row functions' narrowing (pack) does not use.
func (g *gen) loadBF16Consts(high bool) {
	if g.s != avx512 || g.out() != spec.BF16 {
		return
	}
	c := bfConsts[g.s.name]
	g.bf.one, g.bf.bias = ZMM(), ZMM()
	if !g.cvt { // the avx512bf16 functions keep and fix NaN lanes otherwise (bf16cvt.go)
		if high {
			g.bf.high = ZMM()
		}
		g.bf.nan, g.bf.fixNaN = ZMM(), ZMM()
	}
	g.bf.oddWords = ZMM()
	VMOVDQU64(oddWordsAVX512, g.bf.oddWords)
	VPBROADCASTD(c.one, g.bf.one)
	VPBROADCASTD(c.bias, g.bf.bias)
	if g.bf.high != nil {
		VPBROADCASTD(c.high, g.bf.high)
	}
	if !g.cvt {
		VPBROADCASTD(c.nanHigh, g.bf.nan)
		VPBROADCASTD(c.fixNaN, g.bf.fixNaN)
	}
}

// round returns v rounded to the 16-bit storage format, in a new register.
func (g *gen) round(v VecVirtual) VecVirtual {
	t := g.s.vec()
	g.roundTo(v, t, t)
	return t
}

// roundTo sets out (which may be v) to v rounded to the storage format of dst, as float32 values;
// t (not v) is scratch, and may be out.
func (g *gen) roundTo(v, t, out VecVirtual) {
	switch g.out() {
	case spec.BF16:
		g.bf16Round(v, t, out, true)
	case spec.F16:
		h := g.half(g.s.vec())
		VCVTPS2PH(U8(0), v, h)
		VCVTPH2PS(h, out)
	}
}

// store narrows v into one vector of elements of dst's format at m; exact says v already holds
// values of the format (a rounded residual, for the formats that store it as dst), which then
// need no rounding.
func (g *gen) store(v VecVirtual, m Mem, exact bool) {
	switch g.out() {
	case spec.F32:
		VMOVUPS(v, m)
	case spec.BF16:
		if g.cvt && !exact {
			VEXTRACTI64X4(U8(0), g.narrowCvt(v), m) // the low 16 words
			return
		}
		t := g.bf16Low(v, exact)
		if g.s == avx512 {
			VPMOVDW(t, m)
			return
		}
		hi := XMM()
		VEXTRACTI128(U8(1), t, hi)
		VPACKUSDW(hi, t.AsX(), hi)
		VMOVDQU(hi, m)
	case spec.F16:
		VCVTPS2PH(U8(0), v, m)
	}
}

// bf16Low returns the bfloat16 bits of v in the low 16 bits of each 32-bit lane.
func (g *gen) bf16Low(v VecVirtual, exact bool) VecVirtual {
	t := g.s.vec()
	if exact {
		VPSRLD(U8(16), v, t)
	} else {
		g.bf16Round(v, t, t, false)
	}
	return t
}

// storeMasked is store for the lanes of k only (AVX-512).
func (g *gen) storeMasked(v VecVirtual, k Op, m Mem, exact bool) {
	switch g.out() {
	case spec.F32:
		VMOVUPS(v, k, m)
	case spec.BF16:
		if g.cvt && !exact {
			VMOVDQU16(g.narrowCvt(v), k, m) // k's lanes are the low words
			return
		}
		VPMOVDW(g.bf16Low(v, exact), k, m)
	case spec.F16:
		VCVTPS2PH(U8(0), v, k, m)
	}
}

// storeNT writes vs (one float32 vector, or two for a 16-bit format, which fill one vector of
// 16-bit lanes) to m, aligned to the vector size, with a non-temporal store: a whole vector at
// once. On a Zen 5 the avx512 functions' streamed float32 stores as two 256-bit halves (the width
// of Go's copy() and of the avx2 kernel), hand-edited, measured ahead at 2048x4096 and behind at
// 16384x4096 and 512x8192, each by about the VM's noise (bench/results/amd-zen5-turin.txt); Zen
// 4, whose 512-bit stores are split in two, has not been measured.
func (g *gen) storeNT(vs []VecVirtual, m Mem) {
	if !g.out16() {
		VMOVNTPS(vs[0], m)
		return
	}
	VMOVNTDQ(g.pack(vs[0], vs[1]), m)
}

// storePair narrows a and b, two vectors of lanes, into the one vector of 16-bit lanes at m (a
// first): one full-width store instead of two half-width ones, and on AVX-512 one permute
// instead of two narrowing moves.
func (g *gen) storePair(a, b VecVirtual, m Mem) {
	if g.s == avx512 {
		VMOVDQU64(g.pack(a, b), m)
	} else {
		VMOVDQU(g.pack(a, b), m)
	}
}

// pack narrows a and b into one vector of 16-bit lanes, a's in the low half, and returns it (a
// and b may be overwritten).
func (g *gen) pack(a, b VecVirtual) VecVirtual {
	switch {
	case g.out() == spec.BF16 && g.cvt:
		return g.packCvt(a, b)
	case g.out() == spec.BF16 && g.s == avx512:
		// The rounded bits sit in the top half of each 32-bit lane: one two-table permute picks
		// the odd 16-bit words of a, then those of b.
		ta, tb := g.s.vec(), g.s.vec()
		g.bf16RoundTop(a, ta)
		g.bf16RoundTop(b, tb)
		VPERMT2W(tb, g.bf.oddWords, ta)
		return ta
	case g.out() == spec.BF16:
		return g.packAVX2(a, b)
	case g.s == avx512:
		lo, hi := g.s.vec(), g.s.vec()
		VCVTPS2PH(U8(0), a, g.half(lo))
		VCVTPS2PH(U8(0), b, g.half(hi))
		VINSERTI64X4(U8(1), hi.AsY(), lo, lo)
		return lo
	default:
		// In a's and b's own registers, which the callers no longer need: AVX2 has 16 vector
		// registers, and the function for every weight form leaves no spare one here.
		VCVTPS2PH(U8(0), a, a.AsX())
		VCVTPS2PH(U8(0), b, b.AsX())
		VINSERTI128(U8(1), b.AsX(), a, a)
		return a
	}
}

// packAVX2 is pack for bfloat16 on AVX2. A NaN lane, which must become the quiet NaN, is rare (in
// the scale pass it comes from a NaN weight or bias, an infinite weight times zero or an infinity
// plus the opposite bias; in Float32ToBF16 from a NaN input): one compare of a with b finds
// whether either has one, and only then does the out-of-line path (in cold) round with
// bf16Round's blend.
// The common path saves a compare and a blend per vector: with the constants in registers
// (holdConsts), on a Zen 3 alternated in one process with the code before (4000 pairs of 20
// calls, median ratio), 1x4096: Float32ToBF16 0.90-0.95x the time, ApplyToBF16 0.91-0.93x,
// ForwardBF16 0.95x and with RoundNormalized 0.89x (roundTopAVX2); llvm-mca's cycles per 32
// elements of the conversion loop: Zen 3 10.4 -> 8.1, Zen 2 12.6 -> 9.3, Skylake 12.4 -> 10.1.
// In-lane unsigned packs interleave the 128-bit halves of a and b; VPERMQ puts them back.
func (g *gen) packAVX2(a, b VecVirtual) VecVirtual {
	m := YMM()
	VCMPPS(U8(3), b, a, m) // unordered: a NaN lane in a or in b
	ta := YMM()
	fix, back := g.label("bf16nan"), g.label("bf16packed")
	VPTEST(m, m)
	JNZ(LabelRef(fix))
	tb := YMM()
	g.bf16Add(a, ta)
	VPSRLD(U8(16), ta, ta)
	g.bf16Add(b, tb)
	VPSRLD(U8(16), tb, tb)
	VPACKUSDW(tb, ta, ta)
	Label(back)
	if g.zeroW == nil { // unpacked lanes (scaleUnpacks) are back in order already
		VPERMQ(U8(0xd8), ta, ta)
	}
	g.cold = append(g.cold, func() {
		Label(fix)
		g.bf16Round(a, ta, ta, false)
		u := YMM()
		g.bf16Round(b, u, u, false)
		VPACKUSDW(u, ta, ta)
		JMP(LabelRef(back))
	})
	return ta
}

// roundTopAVX2 rounds ts to bfloat16 in place, as float32 values: the rounding of roundIfRN on AVX2
// in a loop that holds the constants, without bf16Round's NaN blend. None is needed: the scale
// pass runs only on rows whose elements (or h, or the centered c) are finite and whose inv is
// finite, every other row takes the float64 path, so the normalized x*inv it rounds here is never
// NaN. (The weight comes after this rounding; packAVX2 still looks for NaN lanes.)
func (g *gen) roundTopAVX2(ts []VecVirtual) {
	for _, t := range ts {
		u := YMM()
		g.bf16Add(t, u)
		VPAND(g.rc.high, u, t)
	}
}

// widenShuf holds the VPSHUFB indexes of load on AVX2 (bfloat16 rows in a loop that holds them):
// in each 128-bit lane L, which holds the same 8 words, dword i gets a zero low word (index 0x80)
// and word 4L+i as its high word.
var widenShuf Mem

func declareWidenShuf() {
	widenShuf = GLOBL("avx2widenshuf", RODATA|NOPTR)
	for l := 0; l < 2; l++ {
		for i := 0; i < 4; i++ {
			w := 4*l + i
			DATA(16*l+4*i, U32(0x8080|uint32(2*w)<<16|uint32(2*w+1)<<24))
		}
	}
}

// bfConst are the constants of bfloat16 rounding for one ISA: 32-bit values, broadcast from 4
// bytes on AVX-512 and splat over 32 bytes on AVX2 (keptBit, 0x10000, for AVX2 only, and one for
// AVX-512 only).
type bfConst struct{ one, keptBit, bias, high, nanHigh, nanLow, fixNaN Mem }

var bfConsts = map[string]bfConst{}

func declareBF16Constants() {
	for _, s := range []*isa{avx512, avx2} {
		n := 1
		if s == avx2 {
			n = 8
		}
		splat := func(name string, v uint32) Mem {
			m := GLOBL(s.name+name, RODATA|NOPTR)
			for i := 0; i < n; i++ {
				DATA(4*i, U32(v))
			}
			return m
		}
		c := bfConst{
			bias:    splat("bfbias", 0x7fff),
			high:    splat("bfhigh", 0xffff0000),
			nanHigh: splat("bfnanhigh", 0x7fc00000),
			nanLow:  splat("bfnanlow", 0x7fc0),
			// VFIXUPIMMPS, one token per input class: QNaN and SNaN keep the destination (0),
			// zero, one, ±Inf and the other values take the input (1).
			fixNaN: splat("bffixnan", 0x11111100),
		}
		if s == avx2 {
			c.keptBit = splat("bfkept", 0x10000) // bf16Add's
		} else {
			c.one = splat("bfone", 1)
		}
		bfConsts[s.name] = c
	}
}
