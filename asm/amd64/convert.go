package main

import (
	"github.com/gosimd/rmsnorm/asm/internal/spec"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// convert emits one conversion loop: n elements from src to dst, widened from or narrowed to a
// 16-bit format with the same loads and stores as the kernels (format.go), four vectors at a time,
// then one, then the last partial vector through a k-mask (AVX-512) or a copy on the stack (AVX2).
// prefix and cvt are kernel's.
func convert(s *isa, prefix string, c spec.Conversion, cvt bool) {
	name := prefix + c.Name
	TEXT(name, NOSPLIT, spec.ConvAvoSig)
	Comment(name + " converts n elements: " + c.Doc() + ".")
	// The row format is the 16-bit side: loads and stores of that side go through it, the float32
	// side is plain.
	g := &gen{s: s, v: spec.Variant{Format: c.Format}, eb: 2, cvt: cvt}
	var slot Mem
	if !s.masked {
		slot = AllocLocal(2 * s.vbytes())
	}
	g.loadBF16Consts(true)
	dst := Load(Param("dst"), GP64()).(GPVirtual)
	src := Load(Param("src"), GP64()).(GPVirtual)
	n := Load(Param("n"), GP64()).(GPVirtual)
	f32 := func(base, i GPVirtual, disp int) Mem { return Mem{Base: base, Index: i, Scale: 4, Disp: disp} }
	h16 := func(base, i GPVirtual, disp int) Mem { return Mem{Base: base, Index: i, Scale: 2, Disp: disp} }
	// one converts the vector at element i (+u vectors).
	one := func(i GPVirtual, u int) {
		t := s.vec()
		if c.Widen {
			g.load(h16(src, i, u*g.vstep()), t)
			VMOVUPS(t, f32(dst, i, u*s.vbytes()))
		} else {
			VMOVUPS(f32(src, i, u*s.vbytes()), t)
			g.store(t, h16(dst, i, u*g.vstep()), false)
		}
	}
	i, lim := GP64(), GP64()
	XORQ(i, i)
	MOVQ(n, lim)
	SUBQ(U32(unroll*s.lanes), lim)
	held := !c.Widen && g.holdConsts(false, false)
	Label("loop4")
	CMPQ(i, lim)
	JG(LabelRef("tail"))
	for u := 0; u < unroll; u++ {
		if c.Widen {
			one(i, u)
			continue
		}
		// Narrowing: two vectors of lanes make one full vector of 16-bit lanes.
		if u%2 == 1 {
			a, b := s.vec(), s.vec()
			VMOVUPS(f32(src, i, (u-1)*s.vbytes()), a)
			VMOVUPS(f32(src, i, u*s.vbytes()), b)
			g.storePair(a, b, h16(dst, i, (u-1)*g.vstep()))
		}
	}
	ADDQ(U32(unroll*s.lanes), i)
	JMP(LabelRef("loop4"))
	if held {
		g.release()
	}
	Label("tail")
	ADDQ(U32((unroll-1)*s.lanes), lim)
	Label("loop1")
	CMPQ(i, lim)
	JG(LabelRef("part"))
	one(i, 0)
	ADDQ(U32(s.lanes), i)
	JMP(LabelRef("loop1"))
	Label("part")
	SUBQ(i, n) // the elements left, 0..lanes-1
	JZ(LabelRef("done"))
	if s.masked {
		tab := GP64()
		LEAQ(kmaskAVX512, tab)
		k := K()
		KMOVW(Mem{Base: tab, Index: n, Scale: 2}, k)
		t := s.vec()
		if c.Widen {
			g.loadMasked(h16(src, i, 0), k, t)
			VMOVUPS(t, k, f32(dst, i, 0))
		} else {
			VMOVUPS_Z(f32(src, i, 0), k, t)
			g.storeMasked(t, k, h16(dst, i, 0), false)
		}
	} else {
		// Through two vectors of stack: the input copied in, the output copied out.
		p, q := GP64(), GP64()
		in, out := slot, slot.Offset(s.vbytes())
		ib, ob := 2, 4
		if !c.Widen {
			ib, ob = 4, 2
		}
		LEAQ(Mem{Base: src, Index: i, Scale: uint8(ib)}, p)
		LEAQ(in, q)
		g.copyElems(p, q, n, ib)
		t := s.vec()
		if c.Widen {
			g.load(in, t)
			VMOVUPS(t, out)
		} else {
			VMOVUPS(in, t)
			g.store(t, out, false)
		}
		LEAQ(out, p)
		LEAQ(Mem{Base: dst, Index: i, Scale: uint8(ob)}, q)
		g.copyElems(p, q, n, ob)
	}
	Label("done")
	VZEROUPPER()
	RET()
	g.flushCold()
}
