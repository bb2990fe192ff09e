package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// isa holds what differs between the AVX2 and the AVX-512 kernels: the vector width and how a
// partial vector at the end of a row is read and written. The 64 partial sums of the contract are
// 64/lanes accumulators of lanes floats each, so element i always lands in lane i%64.
type isa struct {
	name   string // function-name prefix
	vbytes int    // bytes per vector
	vec    func() VecVirtual

	// zero clears a vector register.
	zero func(v VecVirtual)
	// tailMask prepares a mask selecting the first n bytes/4 lanes (0 < n < vbytes).
	tailMask func(nbytes GPVirtual) Op
	// maskedLoad reads the selected lanes of m into v and zeroes the others; unselected lanes are
	// never read, so a row ending at a page boundary is safe.
	maskedLoad func(m Mem, mask Op, v VecVirtual)
	// maskedStore writes the selected lanes of v to m and nothing else.
	maskedStore func(v VecVirtual, mask Op, m Mem)
	// reduceTo256 applies the halving-tree steps until one 8-lane YMM register remains.
	reduceTo256 func(acc []VecVirtual) VecVirtual
	// scalarScaleTail finishes a row with scalar stores instead of one masked store (AVX2, where a
	// masked store is slow on AMD cores).
	scalarScaleTail bool
}

var avx2 = &isa{
	name:   "avx2",
	vbytes: 32,
	vec:    YMM,
	zero:   func(v VecVirtual) { VXORPS(v, v, v) },
	tailMask: func(n GPVirtual) Op {
		// The mask is the 8 dwords starting 32-n bytes into {-1 x 8, 0 x 8}.
		p := GP64()
		LEAQ(tailMaskAVX2.Offset(32), p)
		SUBQ(n, p)
		m := YMM()
		VMOVDQU(Mem{Base: p}, m)
		return m
	},
	maskedLoad:  func(m Mem, mask Op, v VecVirtual) { VMASKMOVPS(m, mask, v) },
	maskedStore: func(v VecVirtual, mask Op, m Mem) { VMASKMOVPS(v, mask, m) },
	reduceTo256: func(acc []VecVirtual) VecVirtual {
		// acc[k] holds partials 8k..8k+7.
		for _, h := range []int{4, 2, 1} { // h = 32, 16, 8 partials
			for k := 0; k < h; k++ {
				VADDPS(acc[k+h], acc[k], acc[k])
			}
		}
		return acc[0]
	},
	scalarScaleTail: true,
}

var avx512 = &isa{
	name:   "avx512",
	vbytes: 64,
	vec:    ZMM,
	zero:   func(v VecVirtual) { VPXORD(v, v, v) },
	tailMask: func(n GPVirtual) Op {
		// (1<<(n/4))-1 from a table of uint16, indexed by n/4*2 = n/2 bytes.
		p := GP64()
		LEAQ(kmaskAVX512, p)
		SHRQ(U8(1), n)
		k := K()
		KMOVW(Mem{Base: p, Index: n, Scale: 1}, k)
		return k
	},
	maskedLoad:  func(m Mem, mask Op, v VecVirtual) { VMOVUPS_Z(m, mask, v) },
	maskedStore: func(v VecVirtual, mask Op, m Mem) { VMOVUPS(v, mask, m) },
	reduceTo256: func(acc []VecVirtual) VecVirtual {
		// acc[k] holds partials 16k..16k+15.
		VADDPS(acc[2], acc[0], acc[0]) // h = 32
		VADDPS(acc[3], acc[1], acc[1])
		VADDPS(acc[1], acc[0], acc[0]) // h = 16
		hi := YMM()
		VEXTRACTF64X4(U8(1), acc[0], hi) // h = 8
		VADDPS(hi, acc[0].AsY(), hi)
		return hi
	},
}

// Constants shared by every kernel.
var (
	constOne     Mem // float32 1
	constLo      Mem // float32 2^-100: t below it takes the float64 path
	constMax     Mem // MaxFloat32: t above it (+Inf) takes the float64 path
	tailMaskAVX2 Mem // 8 x 0xffffffff then 8 x 0
	kmaskAVX512  Mem // uint16 (1<<n)-1 for n = 0..16
)

func declareConstants() {
	constOne = ConstData("one", F32(1))
	constLo = ConstData("tlo", U32(math.Float32bits(0x1p-100)))
	constMax = ConstData("tmax", U32(math.Float32bits(math.MaxFloat32)))

	tailMaskAVX2 = GLOBL("tailmask", RODATA|NOPTR)
	for i := 0; i < 16; i++ {
		v := uint32(0)
		if i < 8 {
			v = 0xffffffff
		}
		DATA(4*i, U32(v))
	}

	kmaskAVX512 = GLOBL("kmask", RODATA|NOPTR)
	for n := 0; n <= 16; n++ {
		DATA(2*n, U16(uint16(1<<n-1)))
	}
}
