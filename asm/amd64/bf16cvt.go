package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/gosimd/rmsnorm/asm/internal/spec"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The avx512bf16 functions narrow float32 lanes to bfloat16 with AVX512_BF16's VCVTNE2PS2BF16,
// which rounds two vectors to nearest even and packs them into one vector of 16-bit lanes in a
// single instruction, where the integer rounding of the avx512 functions (format.go) takes five
// instructions per vector and a permute per pair: the output, RoundNormalized's x*inv and the
// residual's h (both widened back from the packed words with VPERMW; h of rows of 128 and more
// is put back in the row's order by one VPERMW and widened by a shift and a mask, evenodd.go).
// The instruction departs
// from the contract's round16 in two kinds of lanes only:
//
//   - a subnormal float32 is read as zero (±0 out, where round16 keeps the bfloat16 subnormal);
//   - a NaN keeps its payload (round16 gives the quiet NaN 0x7fc0, as the generic kernel does).
//
// For every normal or infinite float32 and for zeros it gives round16's bits (a normal float32
// rounds to a normal bfloat16 or to ±Inf, the same exponent range). So each vector is classified
// first (VFPCLASSPS: subnormal, quiet or signalling NaN); a pair of vectors (or a vector) with
// such a lane branches to an out-of-line block (see gen.cold) that rounds it with the integer
// method and writes 0x7fc0 into its NaN lanes, the generic kernel's bits. Ordinary activations
// never take the branch. A blend instead (both roundings of every vector, the integer one kept in
// the classified lanes) measured slower on 1x4096 rows than the integer rounding alone. A check of
// the packed output words instead of the inputs (exponent field 0 or 0xff: two integer
// instructions for 32 lanes) was 1-4% faster on rows without zeros, but cannot tell a flushed
// subnormal from a true zero: every pair with an exact zero took the branch, and an all-zero row
// (a padding token) took 340 ns against 239 for ApplyToBF16 at 1x4096 on a Zen 5
// (BenchmarkBF16Zeros). The classification's speed does not depend on the values.
//
// The check is not free: ForwardBF16 at 1x4096 on a Zen 5 took 251 ns with it and 207 without
// (wrong bits, a measurement only), 1.16x the float32 Forward's 179. Cheaper checks measured
// worse or not enough (2026-12-02, eight interleaved runs, min): integer keys ((bits<<1) minus a
// constant, VPMINUD across the vectors, one VPCMPUD and one KORTESTW per 64 lanes) 286 ns; one
// KORTESTW per 64 lanes after KORW of the four classifications 264; no per-vector test at all,
// VCMPPS or VMAXPS raising MXCSR's invalid and denormal flags instead, read once per row, 228-238
// at 1x4096 and 2-3% at 1x1024, but a flagged row has to be redone, which a row normalized in place
// without a residual cannot be: the scale loops whose output does not overwrite what they read (x,
// or h in Residual) take that order since, for the rows bf16flags.go lists. Why it costs
// (2026-12-05, the same VM): in a loop of the scale pass's arithmetic alone, four VFPCLASSPS add
// 0.36-0.47 ns per 64 lanes to the 1.1 of eight VMULPS and two VCVTNE2PS2BF16, where four VADDPS,
// VMAXPS or VGETEXPPS add under 0.1: the classification competes with the multiplies. With no check
// at all, ApplyToBF16 1x4096 still took 1.07x Forward's time (bench/results/amd-zen5-turin.txt).
//
// Neither Avo nor the Go assembler knows VCVTNE2PS2BF16: it is emitted as an ir.Instruction with
// its operands, so that Avo allocates its registers, sees its reads and writes and lists
// AVX512BF16 in the function's Requires line, and fixAssembly replaces each such line by its
// bytes (encodeLine), keeping the instruction as a comment that the generator's test decodes
// back with golang.org/x/arch/x86/x86asm.

// The avx512bf16 functions also widen the full vectors of their unrolled loops (the scale pass's
// iterations, and the sum passes' blocks of rows shorter than 128; longer rows' sum passes, the
// residual pass's included, widen in even and odd halves, evenodd.go) with one VPERMW each, where
// VPMOVZXWD and VPSLLD take two:
// a zero-masked word permute of 64 bytes of the row that moves word j of the first or the second
// 32 bytes to the top half of lane j. With the narrowing above it is what these CPUs run faster
// (1x4096 ForwardBF16 on a Zen 5: 322 ns with the avx512 functions, 256 with VCVTNE2PS2BF16, 226
// with VPERMW as well). A vector at an odd position reads the 64 bytes that start 32 bytes before
// it, its pair's, so nothing outside the row is read.

// VFPCLASSPS categories of the lanes that VCVTNE2PS2BF16 rounds differently from round16.
const (
	classQNaN      = 0x01
	classSubnormal = 0x20
	classSNaN      = 0x80
	classNaN       = classQNaN | classSNaN
	classFix       = classNaN | classSubnormal
)

// cvtOp is the one instruction emitted as bytes.
const cvtOp = "VCVTNE2PS2BF16"

// vcvtne2ps2bf16 emits VCVTNE2PS2BF16 lo, hi, dst (Go operand order): the bfloat16 rounding of
// lo's sixteen float32 lanes into the low 16 words of dst and of hi's into the high 16.
func vcvtne2ps2bf16(lo, hi, dst VecVirtual) {
	Instruction(&ir.Instruction{
		Opcode:   cvtOp,
		Operands: []Op{lo, hi, dst},
		Inputs:   []Op{lo, hi},
		Outputs:  []Op{dst},
		ISA:      []string{"AVX512BF16"},
	})
}

// cvtLine matches the instruction as Avo prints it, registers allocated.
var cvtLine = regexp.MustCompile(`^\t` + cvtOp + ` Z(\d+), Z(\d+), Z(\d+)$`)

// encodeLine returns the BYTE directives of line when it holds VCVTNE2PS2BF16, with the
// instruction as a comment, and whether it did.
func encodeLine(line string) (string, bool) {
	m := cvtLine.FindStringSubmatch(line)
	if m == nil {
		return line, false
	}
	var r [3]int
	for i := range r {
		r[i], _ = strconv.Atoi(m[i+1])
	}
	var b []string
	for _, x := range encodeCvt(r[0], r[1], r[2]) {
		b = append(b, fmt.Sprintf("BYTE $0x%02x", x))
	}
	return "\t" + strings.Join(b, "; ") + " // " + strings.TrimPrefix(line, "\t"), true
}

// encodeCvt encodes VCVTNE2PS2BF16 Zlo, Zhi, Zdst (Go operand order), the 512-bit register form
// EVEX.512.F2.0F38.W0 72 /r: dst in ModRM.reg, hi in EVEX.vvvv, lo in ModRM.rm; no mask, no
// broadcast. The register fields above 3 bits go inverted into the prefix (R, R' for dst; B, X
// for lo; V' for hi).
func encodeCvt(lo, hi, dst int) []byte {
	for _, r := range []int{lo, hi, dst} {
		if r < 0 || r > 31 {
			panic(fmt.Sprintf("%s: register Z%d out of range", cvtOp, r))
		}
	}
	inv := func(r, bit int) byte { return byte(^r>>bit) & 1 }
	p0 := inv(dst, 3)<<7 | inv(lo, 4)<<6 | inv(lo, 3)<<5 | inv(dst, 4)<<4 | 0b10 // map 0F38
	p1 := byte(^hi&0xf)<<3 | 1<<2 | 0b11                                         // W0, vvvv, prefix F2
	p2 := byte(0b10)<<5 | inv(hi, 4)<<3                                          // L'L = 512 bits, V'
	modrm := byte(0xc0 | (dst&7)<<3 | lo&7)
	return []byte{0x62, p0, p1, p2, 0x72, modrm}
}

// packCvt narrows a and b into one vector of bfloat16 lanes, a's in the low half, and returns it.
func (g *gen) packCvt(a, b VecVirtual) VecVirtual {
	if g.fast { // the row's check comes after its loop (bf16flags.go)
		raiseFlags(a, b)
		t := ZMM()
		vcvtne2ps2bf16(a, b, t)
		return t
	}
	ka, kb := K(), K()
	VFPCLASSPSZ(U8(classFix), a, ka)
	VFPCLASSPSZ(U8(classFix), b, kb)
	t := ZMM()
	fix, back := g.label("bf16fix"), g.label("bf16fixed")
	KORTESTW(kb, ka)
	JNZ(LabelRef(fix))
	vcvtne2ps2bf16(a, b, t)
	Label(back)
	g.cold = append(g.cold, func() {
		Label(fix)
		g.bf16TopExact(a, t)
		u := ZMM()
		g.bf16TopExact(b, u)
		VPERMT2W(u, g.bf.oddWords, t)
		JMP(LabelRef(back))
	})
	return t
}

// narrowCvt returns a vector whose low 16 words are the bfloat16 rounding of v (the high 16
// words repeat them).
func (g *gen) narrowCvt(v VecVirtual) VecVirtual {
	if g.fast {
		return g.packCvt(v, v) // the same words in both halves
	}
	k := K()
	VFPCLASSPSZ(U8(classFix), v, k)
	t := ZMM()
	fix, back := g.label("bf16fix"), g.label("bf16fixed")
	KORTESTW(k, k)
	JNZ(LabelRef(fix))
	vcvtne2ps2bf16(v, v, t)
	Label(back)
	g.cold = append(g.cold, func() {
		Label(fix)
		g.bf16TopExact(v, t)
		VPERMT2W(t, g.bf.oddWords, t)
		JMP(LabelRef(back))
	})
	return t
}

// bf16TopExact sets out (not v) to float32 bits whose top halves are round16 of v's lanes: the
// integer rounding of bf16Round, with NaN lanes set to the quiet NaN 0x7fc00000 (the slow path of
// packCvt and narrowCvt).
func (g *gen) bf16TopExact(v, out VecVirtual) {
	c := g.bf
	VPSRLD(U8(16), v, out)
	VPANDD(c.one, out, out) // the lowest bit kept
	VPADDD(c.bias, out, out)
	VPADDD(v, out, out)
	k := K()
	VFPCLASSPSZ(U8(classNaN), v, k)
	VPBROADCASTD(bfConsts[g.s.name].nanHigh, k, out)
}

// wideRegs hold what widenAt needs through the function: the VPERMW indexes for the first and the
// second 32 bytes of 64 (word j of them for the odd words 2j+1), and the mask of the odd words.
type wideRegs struct {
	lo, hi VecVirtual
	odd    Op
}

// wideLo and wideHi are wideRegs' indexes in memory.
var wideLo, wideHi Mem

func declareWidenConstants() {
	for h, m := range []*Mem{&wideLo, &wideHi} {
		*m = GLOBL([]string{"widelo", "widehi"}[h], RODATA|NOPTR)
		for j := 0; j < 16; j++ {
			DATA(4*j, U16(0)) // the even words are zeroed
			DATA(4*j+2, U16(uint16(16*h+j)))
		}
	}
}

// loadWidenConsts loads wideRegs (avx512bf16 functions of bfloat16 rows).
func (g *gen) loadWidenConsts() {
	if !g.cvt || g.out() != spec.BF16 { // for the loads of bfloat16 rows and flagRN's rounding
		return
	}
	g.wide = wideRegs{ZMM(), ZMM(), K()}
	VMOVDQU64(wideLo, g.wide.lo)
	VMOVDQU64(wideHi, g.wide.hi)
	r := GP32()
	MOVL(U32(0xaaaaaaaa), r)
	KMOVD(r, g.wide.odd)
}

// loadAt is load for vector u of an unrolled loop, whose vectors come in pairs (u even, u+1).
func (g *gen) loadAt(m Mem, u int, v VecVirtual) {
	switch {
	case g.zeroW != nil && u%2 == 0:
		VPUNPCKLWD(m, g.zeroW, v)
	case g.zeroW != nil:
		VPUNPCKHWD(m.Offset(-g.vstep()), g.zeroW, v)
	case g.wide.lo == nil || !g.in16():
		g.load(m, v)
	case u%2 == 0:
		VPERMW_Z(m, g.wide.lo, g.wide.odd, v)
	default:
		VPERMW_Z(m.Offset(-g.vstep()), g.wide.hi, g.wide.odd, v)
	}
}

// widenWords sets v to the float32 values of the bfloat16 words of w: words 0-15 for half 0,
// 16-31 for half 1 (the inverse of packCvt).
func (g *gen) widenWords(w VecVirtual, half int, v VecVirtual) {
	idx := g.wide.lo
	if half == 1 {
		idx = g.wide.hi
	}
	VPERMW_Z(w, idx, g.wide.odd, v)
}

// roundCvt rounds ts to bfloat16 in place, as float32 values (RoundNormalized): two at a time
// through packCvt and back, the last alone when they are odd in number.
func (g *gen) roundCvt(ts []VecVirtual) {
	for k := 0; k < len(ts); k += 2 {
		if k+1 == len(ts) {
			g.widenWords(g.narrowCvt(ts[k]), 0, ts[k])
			break
		}
		w := g.packCvt(ts[k], ts[k+1])
		g.widenWords(w, 0, ts[k])
		g.widenWords(w, 1, ts[k+1])
	}
}

// blockAddCvt is block on the residual pass of the avx512bf16 function (rows shorter than 128:
// naturalShort; longer ones take addEvenOddPair): two vectors of
// h = round16(x + res) at a time, which round and pack in one instruction, are stored to res as
// one vector of bfloat16 words and widened back from it.
func (g *gen) blockAddCvt(acc []VecVirtual, xr, rr, i GPVirtual, first bool) {
	for k := 0; k < len(acc); k += 2 {
		ab := []VecVirtual{g.s.vec(), g.s.vec()}
		for h, t := range ab {
			g.loadAt(g.at(xr, i, (k+h)*g.vstep()), k+h, t)
			r := g.s.vec()
			g.loadAt(g.at(rr, i, (k+h)*g.vstep()), k+h, r)
			VADDPS(r, t, t)
		}
		w := g.packCvt(ab[0], ab[1])
		VMOVDQU64(w, g.at(rr, i, k*g.vstep()))
		for h, t := range ab {
			g.widenWords(w, h, t)
			g.accumulate(acc[k+h], t, first)
		}
	}
}

// flushCold emits the out-of-line blocks queued so far; the caller places them where no code
// falls through into them (after the function's RET).
func (g *gen) flushCold() {
	for _, f := range g.cold {
		f()
	}
	g.cold = nil
}
