package main

import (
	"github.com/gosimd/rmsnorm/asm/internal/spec"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// isa holds what differs between the AVX2 and the AVX-512 kernels. The 64 partial sums of the
// contract are 64/lanes accumulators of lanes floats each, so element i always lands in lane i%64.
//
// The AVX-512 kernel does all vector work on ZMM registers and touches XMM registers only with
// scalar instructions: those have EVEX forms in AVX-512F itself, so the register allocator may hand
// out X16-X31 and the kernel still needs nothing beyond AVX-512F (VEX-only instructions such as
// VHADDPS cannot name those registers, and XMM/YMM forms of EVEX instructions need AVX-512VL).
// The AVX2 kernel uses VEX instructions only. asm_amd64_test.go in the package checks both rules.
type isa struct {
	name     string // function-name prefix
	kernelID string // the Go side's kernelID constant
	lanes    int    // float32 lanes per vector
	vec      func() VecVirtual

	// zero clears a vector register.
	zero func(v VecVirtual)
	// masked: partial vectors at the ends of rows are read and written through k-masks, with the
	// architecture's fault suppression for masked-off lanes (AVX-512). Otherwise (AVX2, whose
	// VMASKMOVPS may fault on masked-off elements on AMD cores) they go through a copy on the
	// stack.
	masked bool

	// partial applies the first halving-tree steps to one row's accumulators and returns one
	// register of partials: 8 (AVX2, h = 32, 16, 8) or 16 (AVX-512, h = 32, 16).
	partial func(acc []VecVirtual) VecVirtual
	// finish1 applies the remaining steps to one row; ss is lane 0 of the XMM register returned.
	finish1 func(q VecVirtual) VecVirtual
	// finish4 applies the remaining steps to four rows at once; the sums are lanes 0..3.
	finish4 func(q []VecVirtual) VecVirtual
	// packed returns a register of the width finish4 returns, packedBytes wide.
	packed      func() VecVirtual
	packedBytes int
	// allIn jumps to ok unless one of lanes 0..3 of t lies outside [2^-100, MaxFloat32] or is NaN.
	allIn func(t VecVirtual, ok LabelRef)
	// storeLanes4 writes lanes 0..3 of v to m.
	storeLanes4 func(v VecVirtual, m Mem)
}

func (s *isa) vbytes() int { return 4 * s.lanes }

var avx2 = &isa{
	name:     "avx2",
	kernelID: "kernelAVX2",
	lanes:    8,
	vec:      YMM,
	zero:     func(v VecVirtual) { VXORPS(v, v, v) },
	partial: func(acc []VecVirtual) VecVirtual {
		// acc[k] holds partials 8k..8k+7.
		for _, h := range []int{4, 2, 1} { // h = 32, 16, 8 partials
			for k := 0; k < h; k++ {
				VADDPS(acc[k+h], acc[k], acc[k])
			}
		}
		return acc[0]
	},
	finish1: func(y VecVirtual) VecVirtual {
		x := XMM()
		VEXTRACTF128(U8(1), y, x) // h = 4
		VADDPS(x, y.AsX(), x)
		t := XMM()
		VMOVHLPS(x, x, t) // h = 2
		VADDPS(t, x, x)
		VMOVSHDUP(x, t) // h = 1
		VADDSS(t, x, x)
		return x
	},
	finish4: func(q []VecVirtual) VecVirtual {
		// h = 4: [A0..3 | B0..3] + [A4..7 | B4..7], likewise C and D.
		pair := func(a, b VecVirtual) VecVirtual {
			lo, hi := YMM(), YMM()
			VPERM2F128(U8(0x20), b, a, lo)
			VPERM2F128(U8(0x31), b, a, hi)
			VADDPS(hi, lo, lo)
			return lo
		}
		ab := pair(q[0], q[1])
		cd := pair(q[2], q[3])
		// h = 2: per 128-bit lane [X0 X1 Y0 Y1] + [X2 X3 Y2 Y3].
		e, o := YMM(), YMM()
		VSHUFPS(U8(0x44), cd, ab, e)
		VSHUFPS(U8(0xee), cd, ab, o)
		VADDPS(o, e, e)
		// h = 1: horizontal pairs give [A C A C | B D B D].
		VHADDPS(e, e, e)
		hi := XMM()
		VEXTRACTF128(U8(1), e, hi)
		out := XMM()
		VUNPCKLPS(hi, e.AsX(), out) // [A B C D]
		return out
	},
	packed:      XMM,
	packedBytes: 16,
	allIn: func(t VecVirtual, ok LabelRef) {
		lo, hi := XMM(), XMM()
		VCMPPS(U8(0x1d), constLo4, t, lo)  // t >= 2^-100, false for NaN
		VCMPPS(U8(0x12), constMax4, t, hi) // t <= MaxFloat32
		VANDPS(hi, lo, lo)
		m := GP32()
		VMOVMSKPS(lo, m)
		CMPL(m, U8(0xf))
		JE(ok)
	},
	storeLanes4: func(v VecVirtual, m Mem) { VMOVUPS(v, m) },
}

var avx512 = &isa{
	name:     "avx512",
	kernelID: "kernelAVX512",
	lanes:    16,
	vec:      ZMM,
	// Avo's liveness treats the zeroing idiom VPXORD v, v, v as a read of v (it does know it for
	// VXORPS on YMM), which would keep every accumulator alive through the whole function and
	// exhaust the registers; a load of zeros only writes v.
	zero:   func(v VecVirtual) { VMOVUPS(constZero64, v) },
	masked: true,
	partial: func(acc []VecVirtual) VecVirtual {
		// acc[k] holds partials 16k..16k+15.
		VADDPS(acc[2], acc[0], acc[0]) // h = 32
		VADDPS(acc[3], acc[1], acc[1])
		VADDPS(acc[1], acc[0], acc[0]) // h = 16
		return acc[0]
	},
	finish1: func(z VecVirtual) VecVirtual {
		// Whole-register shuffles and adds; only the low lanes matter at each step.
		t := ZMM()
		VSHUFF64X2(U8(0xee), z, z, t) // h = 8: 128-bit chunks 2,3 down to 0,1
		VADDPS(t, z, z)
		VSHUFF32X4(U8(0x01), z, z, t) // h = 4: chunk 1 down to 0
		VADDPS(t, z, z)
		zmmPairSteps(z)
		return z.AsX().(VecVirtual)
	},
	finish4: func(q []VecVirtual) VecVirtual {
		// h = 8: [A.c0 A.c1 B.c0 B.c1] + [A.c2 A.c3 B.c2 B.c3], likewise C and D.
		pair := func(a, b VecVirtual) VecVirtual {
			lo, hi := ZMM(), ZMM()
			VSHUFF64X2(U8(0x44), b, a, lo)
			VSHUFF64X2(U8(0xee), b, a, hi)
			VADDPS(hi, lo, lo)
			return lo
		}
		ab := pair(q[0], q[1])
		cd := pair(q[2], q[3])
		// h = 4: chunks [AB.c0 AB.c2 CD.c0 CD.c2] + [AB.c1 AB.c3 CD.c1 CD.c3] = rows A B C D.
		e, o := ZMM(), ZMM()
		VSHUFF32X4(U8(0x88), cd, ab, e)
		VSHUFF32X4(U8(0xdd), cd, ab, o)
		VADDPS(o, e, e)
		zmmPairSteps(e) // lanes 0, 4, 8, 12 now hold the four sums
		k := K()
		m := GP32()
		MOVL(U32(0x1111), m)
		KMOVW(m, k)
		out := ZMM()
		VCOMPRESSPS_Z(e, k, out)
		return out
	},
	packed:      ZMM,
	packedBytes: 64,
	allIn: func(t VecVirtual, ok LabelRef) {
		four, in, both := K(), K(), K()
		m := GP32()
		MOVL(U32(0xf), m)
		KMOVW(m, four)
		lo, hi := ZMM(), ZMM()
		VBROADCASTSS(constLo, lo)
		VBROADCASTSS(constMax, hi)
		VCMPPS(U8(0x1d), lo, t, four, in) // t >= 2^-100 in lanes 0..3, false for NaN
		VCMPPS(U8(0x12), hi, t, in, both) // and t <= MaxFloat32
		KMOVW(both, m)
		CMPL(m, U8(0xf))
		JE(ok)
	},
	storeLanes4: func(v VecVirtual, m Mem) {
		k := K()
		r := GP32()
		MOVL(U32(0xf), r)
		KMOVW(r, k)
		VMOVUPS(v, k, m)
	},
}

// zmmPairSteps applies h = 2 and h = 1 inside every 128-bit chunk of z: lane 0 of each chunk
// becomes (p0+p2) + (p1+p3).
func zmmPairSteps(z VecVirtual) {
	t := ZMM()
	VPERMILPS(U8(0x4e), z, t) // [p2 p3 p0 p1]
	VADDPS(t, z, z)
	VPERMILPS(U8(0xb1), z, t) // [p1 p0 p3 p2]
	VADDPS(t, z, z)
}

// Constants shared by every kernel.
var (
	constOne    Mem // float32 1
	constLo     Mem // float32 2^-100: t below it takes the float64 path
	constMax    Mem // MaxFloat32: t above it (+Inf) takes the float64 path
	constLo4    Mem // the same, four lanes each
	constMax4   Mem
	constZero64 Mem // 64 zero bytes
	kmaskAVX512 Mem // uint16 (1<<n)-1 for n = 0..16
	// oddWordsAVX512 are the VPERMT2W indexes 1, 3, ..., 63: the odd 16-bit words of two ZMM
	// registers, the first's then the second's.
	oddWordsAVX512 Mem
	// constNegZero is float32 -0, what the kernel functions add to w at the ends of rows for
	// Weighted (1 for Offset; see spec.Variant.Body).
	constNegZero Mem
)

func declareConstants() {
	constOne = ConstData("one", F32(1))
	constNegZero = ConstData("negzero", U32(0x80000000))
	constLo = ConstData("tlo", U32(spec.TLowBits))
	constMax = ConstData("tmax", U32(spec.TMaxBits))
	constLo4 = splat4("tlo4", spec.TLowBits)
	constMax4 = splat4("tmax4", spec.TMaxBits)

	constZero64 = GLOBL("zero64", RODATA|NOPTR)
	DATA(56, U64(0))

	kmaskAVX512 = GLOBL("kmask", RODATA|NOPTR)
	for n := 0; n <= 16; n++ {
		DATA(2*n, U16(uint16(1<<n-1)))
	}

	oddWordsAVX512 = GLOBL("oddwords", RODATA|NOPTR)
	for i := 0; i < 32; i++ {
		DATA(2*i, U16(uint16(2*i+1)))
	}
}

// splat4 declares a 16-byte constant holding v four times.
func splat4(name string, v uint32) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	for i := 0; i < 4; i++ {
		DATA(4*i, U32(v))
	}
	return m
}
