package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

const signature = "func(dst, x, w, res, inv *float32, d, rows, stride int, eps float32) int"

// sumBlock is the bytes of one row that fill all 64 partial sums once.
const sumBlock = 64 * 4

// gen builds one kernel function.
type gen struct {
	s *isa
	v variant

	dst, x, w, res, inv GPVirtual
	dB                  GPVirtual // row length in bytes
}

func kernel(s *isa, v variant) {
	name := s.name + v.name()
	TEXT(name, NOSPLIT, signature)
	Pragma("noescape")
	Doc(
		name+" normalizes `rows` rows of d floats whose starts are stride floats apart:",
		v.formula(),
		"It stops before the first row that needs the float64 path and returns that row's index, or rows.",
	)
	g := &gen{s: s, v: v}
	g.dst = Load(Param("dst"), GP64()).(GPVirtual)
	g.x = Load(Param("x"), GP64()).(GPVirtual)
	if v.mode != unweighted {
		g.w = Load(Param("w"), GP64()).(GPVirtual)
	}
	if v.residual {
		g.res = Load(Param("res"), GP64()).(GPVirtual)
	}
	g.inv = Load(Param("inv"), GP64()).(GPVirtual)
	g.dB = Load(Param("d"), GP64()).(GPVirtual)
	SHLQ(U8(2), g.dB)
	rows := Load(Param("rows"), GP64())
	strideB := Load(Param("stride"), GP64())
	SHLQ(U8(2), strideB)

	done := GP64()
	XORQ(done, done)
	Label("row")
	CMPQ(done, rows)
	JAE(LabelRef("ret"))

	ss := g.sumSquares()
	invx := g.invRMS(ss)

	Comment("Report 1/rms if asked.")
	TESTQ(g.inv, g.inv)
	JZ(LabelRef("scale"))
	VMOVSS(invx, Mem{Base: g.inv, Index: done, Scale: 4})
	Label("scale")
	g.scale(invx)

	ADDQ(strideB, g.dst)
	ADDQ(strideB, g.x)
	if v.residual {
		ADDQ(strideB, g.res)
	}
	INCQ(done)
	JMP(LabelRef("row"))

	Label("ret")
	VZEROUPPER()
	Store(done, ReturnIndex(0))
	RET()
}

// src is the row the scale pass reads: h (in res) for the residual variants, else x.
func (g *gen) src() GPVirtual {
	if g.v.residual {
		return g.res
	}
	return g.x
}

func at(base, i GPVirtual, disp int) Mem { return Mem{Base: base, Index: i, Scale: 1, Disp: disp} }

// loadSquare reads one vector of the row at byte i+disp (all lanes, or the masked ones), forms
// h = x + res and stores it back to res in the residual variants, and returns its square.
func (g *gen) loadSquare(i GPVirtual, disp int, mask Op) VecVirtual {
	s := g.s
	t := s.vec()
	if mask == nil {
		VMOVUPS(at(g.x, i, disp), t)
	} else {
		s.maskedLoad(at(g.x, i, disp), mask, t)
	}
	if g.v.residual {
		if mask == nil {
			VADDPS(at(g.res, i, disp), t, t)
			VMOVUPS(t, at(g.res, i, disp))
		} else {
			r := s.vec()
			s.maskedLoad(at(g.res, i, disp), mask, r)
			VADDPS(r, t, t)
			s.maskedStore(t, mask, at(g.res, i, disp))
		}
	}
	VMULPS(t, t, t)
	return t
}

// sumSquares accumulates the row into the 64 partials and reduces them by the halving tree; the
// sum ss is lane 0 of the returned register.
func (g *gen) sumSquares() VecVirtual {
	s := g.s
	Comment("Sum of squares: element i goes to partial i%64.")
	acc := make([]VecVirtual, sumBlock/s.vbytes)
	for k := range acc {
		acc[k] = s.vec()
		s.zero(acc[k])
	}
	i := GP64()
	XORQ(i, i)
	lim := GP64()
	MOVQ(g.dB, lim)
	SUBQ(U32(sumBlock), lim)
	JL(LabelRef("sumtail"))
	Label("sumloop")
	for k := range acc {
		VADDPS(g.loadSquare(i, k*s.vbytes, nil), acc[k], acc[k])
	}
	ADDQ(U32(sumBlock), i)
	CMPQ(i, lim)
	JLE(LabelRef("sumloop"))

	Label("sumtail")
	Comment("Fewer than 64 elements remain: whole vectors first, then one masked vector.")
	rem := GP64()
	MOVQ(g.dB, rem)
	SUBQ(i, rem)
	for k := range acc {
		CMPQ(rem, U32((k+1)*s.vbytes))
		JL(LabelRef(fmt.Sprintf("sumpart%d", k)))
		VADDPS(g.loadSquare(i, k*s.vbytes, nil), acc[k], acc[k])
	}
	// Not reached: rem < sumBlock.
	JMP(LabelRef("reduce"))
	for k := range acc {
		Label(fmt.Sprintf("sumpart%d", k))
		n := GP64()
		MOVQ(rem, n)
		SUBQ(U32(k*s.vbytes), n)
		JZ(LabelRef("reduce"))
		mask := s.tailMask(n)
		VADDPS(g.loadSquare(i, k*s.vbytes, mask), acc[k], acc[k])
		JMP(LabelRef("reduce"))
	}

	Label("reduce")
	Comment("Halving tree: p[j] += p[j+h] for h = 32, 16, ..., 1.")
	y := s.reduceTo256(acc)
	x := XMM()
	VEXTRACTF128(U8(1), y, x) // h = 4
	VADDPS(x, y.AsX(), x)
	t := XMM()
	VMOVHLPS(x, x, t) // h = 2
	VADDPS(t, x, x)
	VMOVSHDUP(x, t) // h = 1
	VADDSS(t, x, x)
	return x
}

// invRMS computes t = ss/float32(d) + eps, leaves for the float64 path when t is outside
// [2^-100, MaxFloat32] or NaN, and returns inv = 1/sqrt(t) in lane 0.
func (g *gen) invRMS(ss VecVirtual) VecVirtual {
	Comment("t = ss/d + eps; rows with t outside [2^-100, MaxFloat32] take the float64 path.")
	d, _ := Param("d").Resolve()
	eps, _ := Param("eps").Resolve()
	fd := XMM()
	VXORPS(fd, fd, fd)
	VCVTSI2SSQ(d.Addr, fd, fd)
	t := XMM()
	VDIVSS(fd, ss, t)
	VADDSS(eps.Addr, t, t)
	VUCOMISS(constLo, t)
	JCS(LabelRef("ret")) // t < 2^-100 or unordered
	VUCOMISS(constMax, t)
	JHI(LabelRef("ret")) // t > MaxFloat32
	VSQRTSS(t, t, t)
	inv := XMM()
	VMOVSS(constOne, inv)
	VDIVSS(t, inv, inv)
	return inv
}

// scale writes y for the row from src, inv and the weight.
func (g *gen) scale(invx VecVirtual) {
	s := g.s
	Comment("y = (src*inv)*w, rounded after each multiply.")
	invv := s.vec()
	VBROADCASTSS(invx, invv)
	var one VecVirtual
	if g.v.mode == offset {
		one = s.vec()
		VBROADCASTSS(constOne, one)
	}
	// one vector of output at byte i+disp
	out := func(i GPVirtual, disp int, mask Op) {
		t := s.vec()
		if mask == nil {
			VMULPS(at(g.src(), i, disp), invv, t)
		} else {
			s.maskedLoad(at(g.src(), i, disp), mask, t)
			VMULPS(t, invv, t)
		}
		g.applyWeight(t, func(u VecVirtual) {
			if mask == nil {
				VMOVUPS(at(g.w, i, disp), u)
			} else {
				s.maskedLoad(at(g.w, i, disp), mask, u)
			}
		}, one, s.vec)
		if mask == nil {
			VMOVUPS(t, at(g.dst, i, disp))
		} else {
			s.maskedStore(t, mask, at(g.dst, i, disp))
		}
	}

	const unroll = 4
	i := GP64()
	XORQ(i, i)
	lim := GP64()
	MOVQ(g.dB, lim)
	SUBQ(U32(unroll*s.vbytes), lim)
	JL(LabelRef("scaleone"))
	Label("scaleloop")
	for k := 0; k < unroll; k++ {
		out(i, k*s.vbytes, nil)
	}
	ADDQ(U32(unroll*s.vbytes), i)
	CMPQ(i, lim)
	JLE(LabelRef("scaleloop"))

	Label("scaleone")
	MOVQ(g.dB, lim)
	SUBQ(U32(s.vbytes), lim)
	Label("scaleoneloop")
	CMPQ(i, lim)
	JG(LabelRef("scaletail"))
	out(i, 0, nil)
	ADDQ(U32(s.vbytes), i)
	JMP(LabelRef("scaleoneloop"))

	Label("scaletail")
	if s.scalarScaleTail {
		Label("scalarloop")
		CMPQ(i, g.dB)
		JGE(LabelRef("next"))
		t := XMM()
		VMOVSS(at(g.src(), i, 0), t)
		VMULSS(invx, t, t)
		g.applyWeight(t, func(u VecVirtual) { VMOVSS(at(g.w, i, 0), u) }, one, XMM)
		VMOVSS(t, at(g.dst, i, 0))
		ADDQ(U8(4), i)
		JMP(LabelRef("scalarloop"))
	} else {
		n := GP64()
		MOVQ(g.dB, n)
		SUBQ(i, n)
		JZ(LabelRef("next"))
		out(i, 0, s.tailMask(n))
	}
	Label("next")
}

// applyWeight multiplies t by w or by (1+w) as the variant asks; loadW reads the weight into u.
// For scalar t (an XMM lane), one is used through its lane 0.
func (g *gen) applyWeight(t VecVirtual, loadW func(u VecVirtual), one VecVirtual, alloc func() VecVirtual) {
	switch g.v.mode {
	case weighted:
		u := alloc()
		loadW(u)
		mulLike(t, u)
	case offset:
		u := alloc()
		loadW(u)
		addLike(t, one, u)
		mulLike(t, u)
	}
}

// mulLike computes t = t*u with the scalar form when t is an XMM register standing for one lane.
func mulLike(t, u VecVirtual) {
	if t.Size() == 16 {
		VMULSS(u, t, t)
		return
	}
	VMULPS(u, t, t)
}

// addLike computes u = u + one in the width of t.
func addLike(t, one, u VecVirtual) {
	if t.Size() == 16 {
		VADDSS(one.AsX(), u, u)
		return
	}
	VADDPS(one, u, u)
}
