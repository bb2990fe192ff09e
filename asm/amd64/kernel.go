package main

import (
	"fmt"

	"github.com/gosimd/rmsnorm/asm/internal/spec"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

const (
	flagNT  = spec.FlagNT
	flagRD  = spec.FlagRD
	flagPF  = spec.FlagPF
	flagNTA = spec.FlagNTA
)

const (
	sumBlock = 64 * 4 // bytes of a row that fill the 64 partial sums once
	group    = 4      // rows per group on the short-row path
	// groupMaxBytes is the longest row (in bytes) the group path takes: four rows must stay in
	// L1 between the sum and the scale pass, and longer rows hide the latency on their own.
	groupMaxBytes = spec.GroupMax * 4
)

// gen builds one kernel function.
type gen struct {
	s *isa
	v spec.Variant

	dst, x, w, res, inv GPVirtual
	dB                  GPVirtual // row length in bytes
	strideB             GPVirtual // row stride in bytes
	flags               GPVirtual
	prefix              string // label prefix of the path being emitted
}

func (g *gen) label(name string) string { return g.prefix + name }
func (g *gen) Label(name string)        { Label(g.label(name)) }
func (g *gen) ref(name string) LabelRef { return LabelRef(g.label(name)) }

func kernel(s *isa, v spec.Variant) {
	name := s.name + v.Name()
	TEXT(name, NOSPLIT, spec.Signature)
	Pragma("noescape")
	Doc(v.Doc(name)...)
	g := &gen{s: s, v: v}
	g.dst = Load(Param("dst"), GP64()).(GPVirtual)
	g.x = Load(Param("x"), GP64()).(GPVirtual)
	if v.Mode != spec.Unweighted {
		g.w = Load(Param("w"), GP64()).(GPVirtual)
	}
	if v.Residual {
		g.res = Load(Param("res"), GP64()).(GPVirtual)
	}
	g.inv = Load(Param("inv"), GP64()).(GPVirtual)
	g.dB = Load(Param("d"), GP64()).(GPVirtual)
	SHLQ(U8(2), g.dB)
	rows := Load(Param("rows"), GP64()).(GPVirtual)
	g.strideB = Load(Param("stride"), GP64()).(GPVirtual)
	SHLQ(U8(2), g.strideB)
	g.flags = Load(Param("flags"), GP64()).(GPVirtual)

	done := GP64()
	XORQ(done, done)
	if !v.Residual {
		// The residual forms always take the one-row path: a group that meets a row needing the
		// float64 path would have updated res for the rows after it.
		g.groupPath(rows, done)
	}
	g.rowPath(rows, done)

	Label("ret")
	TESTQ(U32(flagNT), g.flags)
	JZ(LabelRef("vzero"))
	SFENCE() // order the non-temporal stores before whatever the caller does next
	Label("vzero")
	VZEROUPPER()
	Store(done, ReturnIndex(0))
	RET()
}

// rowPath normalizes one row at a time until rows are done or a row needs the float64 path.
func (g *gen) rowPath(rows, done GPVirtual) {
	g.prefix = ""
	Label("row")
	CMPQ(done, rows)
	JAE(LabelRef("ret"))

	acc := g.sumSquares(g.x, 2)
	Comment("Halving tree: p[j] += p[j+h] for h = 32, 16, ..., 1.")
	ss := g.s.finish1(g.s.partial(acc))
	inv := g.invRMS(ss)

	Comment("Report 1/rms if asked.")
	TESTQ(g.inv, g.inv)
	JZ(LabelRef("scale"))
	VMOVSS(inv, Mem{Base: g.inv, Index: done, Scale: 4})
	Label("scale")
	g.scaleBoth(g.src(g.x), g.dst, inv, 1)

	ADDQ(g.strideB, g.dst)
	ADDQ(g.strideB, g.x)
	if g.v.Residual {
		ADDQ(g.strideB, g.res)
	}
	INCQ(done)
	JMP(LabelRef("row"))
}

// groupPath normalizes four short rows at a time: their sums are formed one after the other, the
// last halving-tree steps and the scalar steps run on all four at once in one XMM register, so the
// long sqrt and divide latencies are paid once per group instead of once per row. A group with a
// row that needs the float64 path is left to the one-row path, which recomputes it and stops there.
func (g *gen) groupPath(rows, done GPVirtual) {
	s := g.s
	CMPQ(g.dB, U32(groupMaxBytes))
	JA(LabelRef("row"))
	Label("group")
	left := GP64()
	MOVQ(rows, left)
	SUBQ(done, left)
	CMPQ(left, U8(group))
	JL(LabelRef("row"))

	Comment("Sums of four rows, each partly reduced.")
	q := make([]VecVirtual, group)
	xr := GP64()
	MOVQ(g.x, xr)
	for r := range q {
		g.prefix = fmt.Sprintf("g%d", r)
		q[r] = s.partial(g.sumSquares(xr, 0))
		if r < group-1 {
			ADDQ(g.strideB, xr)
		}
	}
	Comment("The rest of the halving tree, four rows at once.")
	ss := s.finish4(q)

	Comment("t = ss/d + eps for the four rows; any t outside [2^-100, MaxFloat32] sends the group to the one-row path.")
	t := s.packed()
	g.prefix = "G"
	g.divideByD(ss, t, true)
	e := s.packed()
	eps, _ := Param("eps").Resolve()
	VBROADCASTSS(eps.Addr, e)
	VADDPS(e, t, t)
	s.allIn(t, g.ref("inrange"))
	JMP(LabelRef("row"))
	g.Label("inrange")
	g.prefix = ""
	VSQRTPS(t, t)
	inv4 := s.packed()
	VBROADCASTSS(constOne, inv4)
	VDIVPS(t, inv4, inv4)

	Comment("Report 1/rms if asked.")
	TESTQ(g.inv, g.inv)
	JZ(LabelRef("gscale"))
	s.storeLanes4(inv4, Mem{Base: g.inv, Index: done, Scale: 4})
	Label("gscale")
	for r := 0; r < group; r++ {
		g.prefix = fmt.Sprintf("g%d", r)
		g.scaleBoth(g.x, g.dst, s.lane(inv4, r), 2*group)
		ADDQ(g.strideB, g.x)
		ADDQ(g.strideB, g.dst)
	}
	g.prefix = ""
	ADDQ(U8(group), done)
	JMP(LabelRef("group"))
}

// src is the row the scale pass reads: h (in res) for the residual variants, else x.
func (g *gen) src(x GPVirtual) GPVirtual {
	if g.v.Residual {
		return g.res
	}
	return x
}

func at(base, i GPVirtual, disp int) Mem { return Mem{Base: base, Index: i, Scale: 1, Disp: disp} }

// loadSquare reads one vector of the row at byte i+disp (all lanes, or the first bytes part
// covers), forms h = x + res and stores it back to res in the residual variants, and returns its
// square.
func (g *gen) loadSquare(x, i GPVirtual, disp int, p part) VecVirtual {
	s := g.s
	t := s.vec()
	if p == nil {
		VMOVUPS(at(x, i, disp), t)
	} else {
		p.load(at(x, i, disp), t)
	}
	if g.v.Residual {
		if p == nil {
			VADDPS(at(g.res, i, disp), t, t)
			VMOVUPS(t, at(g.res, i, disp))
		} else {
			r := s.vec()
			p.load(at(g.res, i, disp), r)
			VADDPS(r, t, t)
			p.store(t, at(g.res, i, disp))
		}
	}
	VMULPS(t, t, t)
	return t
}

// sumSquares accumulates the row at x into the 64 partials, held in 64/lanes accumulators.
//
// With ahead > 0, the loop over whole blocks comes in a second version, taken with flagPF, that
// prefetches the row `ahead` rows further on: the scale pass prefetches too, and between them the
// memory never idles while a streamed batch is normalized.
func (g *gen) sumSquares(x GPVirtual, ahead int) []VecVirtual {
	s := g.s
	Comment("Sum of squares: element i goes to partial i%64.")
	acc := make([]VecVirtual, sumBlock/s.vbytes)
	for k := range acc {
		acc[k] = s.vec()
	}
	i := GP64()
	lim := GP64()
	MOVQ(g.dB, lim)
	SUBQ(U32(sumBlock), lim)
	JGE(g.ref("firstblock"))
	for k := range acc {
		s.zero(acc[k])
	}
	XORQ(i, i)
	JMP(g.ref("sumtail"))

	g.Label("firstblock")
	Comment("+0 + square is the square itself: the first block initializes the partials.")
	XORQ(i, i)
	for k := range acc {
		sq := g.loadSquare(x, i, k*s.vbytes, nil)
		s.move(sq, acc[k])
	}
	MOVQ(U32(sumBlock), i)
	if ahead > 0 {
		TESTQ(U32(flagPF), g.flags)
		JNZ(g.ref("sumpfcheck"))
	}
	JMP(g.ref("sumcheck"))

	g.Label("sumloop")
	for k := range acc {
		VADDPS(g.loadSquare(x, i, k*s.vbytes, nil), acc[k], acc[k])
	}
	ADDQ(U32(sumBlock), i)
	g.Label("sumcheck")
	CMPQ(i, lim)
	JLE(g.ref("sumloop"))
	if ahead > 0 {
		JMP(g.ref("sumtail"))
		pf := GP64()
		g.Label("sumpfloop")
		for off := 0; off < sumBlock; off += 64 {
			PREFETCHT0(at(pf, i, off))
		}
		for k := range acc {
			VADDPS(g.loadSquare(x, i, k*s.vbytes, nil), acc[k], acc[k])
		}
		ADDQ(U32(sumBlock), i)
		g.Label("sumpfcheck")
		LEAQ(Mem{Base: x, Index: g.strideB, Scale: uint8(ahead)}, pf)
		CMPQ(i, lim)
		JLE(g.ref("sumpfloop"))
	}

	g.Label("sumtail")
	Comment("Fewer than 64 elements remain: whole vectors first, then one partial vector.")
	rem := GP64()
	MOVQ(g.dB, rem)
	SUBQ(i, rem)
	for k := range acc {
		CMPQ(rem, U32((k+1)*s.vbytes))
		JL(g.ref(fmt.Sprintf("sumpart%d", k)))
		VADDPS(g.loadSquare(x, i, k*s.vbytes, nil), acc[k], acc[k])
	}
	// Not reached: rem < sumBlock.
	JMP(g.ref("summed"))
	for k := range acc {
		g.Label(fmt.Sprintf("sumpart%d", k))
		n := GP64()
		MOVQ(rem, n)
		SUBQ(U32(k*s.vbytes), n)
		JZ(g.ref("summed"))
		VADDPS(g.loadSquare(x, i, k*s.vbytes, s.part(n, g.label(fmt.Sprintf("sumpart%d", k)))), acc[k], acc[k])
		if k < len(acc)-1 {
			JMP(g.ref("summed"))
		}
	}
	g.Label("summed")
	return acc
}

// divideByD sets t = ss/float32(d), exactly as a division, as ss*rd when d is a power of two.
func (g *gen) divideByD(ss, t VecVirtual, packed bool) {
	fd, _ := Param("fd").Resolve()
	rd, _ := Param("rd").Resolve()
	c := XMM()
	if packed {
		c = g.s.packed()
	}
	TESTQ(U32(flagRD), g.flags)
	JZ(g.ref("divide"))
	if packed {
		VBROADCASTSS(rd.Addr, c)
		VMULPS(c, ss, t)
	} else {
		VMULSS(rd.Addr, ss, t)
	}
	JMP(g.ref("divided"))
	g.Label("divide")
	if packed {
		VBROADCASTSS(fd.Addr, c)
		VDIVPS(c, ss, t)
	} else {
		VDIVSS(fd.Addr, ss, t)
	}
	g.Label("divided")
}

// invRMS computes t = ss/float32(d) + eps, leaves for the float64 path when t is outside
// [2^-100, MaxFloat32] or NaN, and returns inv = 1/sqrt(t) in lane 0.
func (g *gen) invRMS(ss VecVirtual) VecVirtual {
	Comment("t = ss/d + eps; rows with t outside [2^-100, MaxFloat32] take the float64 path.")
	eps, _ := Param("eps").Resolve()
	t := XMM()
	g.divideByD(ss, t, false)
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

// memMode is how a scale pass treats memory.
type memMode int

const (
	cached          memMode = iota // ordinary stores, no prefetch
	strided                        // prefetch the rows ahead into the caches (PREFETCHT0)
	streamedInPlace                // prefetch with PREFETCHNTA; ordinary stores (the lines are in cache)
	streamed                       // PREFETCHNTA and non-temporal stores
)

// scaleBoth emits the scale pass once per memory mode and picks one by the flags: batches larger
// than the cache are streamed, and rows far apart are prefetched `ahead` rows further on so that
// reads stay in flight while this row is scaled.
func (g *gen) scaleBoth(src, dst GPVirtual, invx VecVirtual, ahead int) {
	invv := g.s.vec()
	VBROADCASTSS(invx, invv)
	var one VecVirtual
	if g.v.Mode == spec.Offset {
		one = g.s.vec()
		VBROADCASTSS(constOne, one)
	}
	TESTQ(U32(flagPF), g.flags)
	JNZ(g.ref("scalepf"))
	g.scale(src, dst, invx, invv, one, nil, cached)
	JMP(g.ref("scaled"))
	g.Label("scalepf")
	pf := GP64()
	LEAQ(Mem{Base: src, Index: g.strideB, Scale: uint8(ahead)}, pf)
	TESTQ(U32(flagNT), g.flags)
	JNZ(g.ref("scalent"))
	TESTQ(U32(flagNTA), g.flags)
	JNZ(g.ref("scalenta"))
	g.scale(src, dst, invx, invv, one, pf, strided)
	JMP(g.ref("scaled"))
	g.Label("scalenta")
	g.scale(src, dst, invx, invv, one, pf, streamedInPlace)
	JMP(g.ref("scaled"))
	g.Label("scalent")
	g.scale(src, dst, invx, invv, one, pf, streamed)
	g.Label("scaled")
}

// scale writes y = (src*inv)*w (or the variant's form) for one row. Unless mode is cached, the
// lines of the row at pf are prefetched along the way; when streamed, the aligned middle of the
// row goes out with non-temporal stores, the unaligned head and the tail with ordinary ones.
func (g *gen) scale(src, dst GPVirtual, invx, invv, one VecVirtual, pf GPVirtual, mode memMode) {
	s := g.s
	nt := mode == streamed
	p := [...]string{cached: "s", strided: "p", streamedInPlace: "q", streamed: "n"}[mode]
	Comment("y = (src*inv)*w, rounded after each multiply.")
	// one vector of output at byte i+disp
	out := func(i GPVirtual, disp int, pt part) {
		t := s.vec()
		if pt == nil {
			VMULPS(at(src, i, disp), invv, t)
		} else {
			pt.load(at(src, i, disp), t)
			VMULPS(t, invv, t)
		}
		g.applyWeight(t, i, disp, pt, one)
		switch {
		case pt != nil:
			pt.store(t, at(dst, i, disp))
		case nt:
			VMOVNTPS(t, at(dst, i, disp))
		default:
			VMOVUPS(t, at(dst, i, disp))
		}
	}
	// one element, for the AVX2 head and tail
	scalar := func(i GPVirtual) {
		t := XMM()
		VMOVSS(at(src, i, 0), t)
		VMULSS(invx, t, t)
		g.applyWeight(t, i, 0, nil, one)
		VMOVSS(t, at(dst, i, 0))
	}

	i := GP64()
	XORQ(i, i)
	if nt {
		Comment("Ordinary stores up to the first vector-aligned element of dst.")
		if s.scalarScaleTail {
			g.Label(p + "head")
			a := GP64()
			LEAQ(at(dst, i, 0), a)
			TESTQ(U32(s.vbytes-1), a)
			JZ(g.ref(p + "body"))
			CMPQ(i, g.dB)
			JGE(g.ref(p + "done"))
			scalar(i)
			ADDQ(U8(4), i)
			JMP(g.ref(p + "head"))
		} else {
			n := GP64()
			MOVQ(dst, n)
			NEGQ(n)
			ANDQ(U32(s.vbytes-1), n)
			JZ(g.ref(p + "body"))
			CMPQ(n, g.dB)
			JLE(g.ref(p + "head"))
			MOVQ(g.dB, n)
			g.Label(p + "head")
			MOVQ(n, i)
			out(XORself(), 0, s.part(n, g.label(p+"headpart")))
		}
		g.Label(p + "body")
	}

	const unroll = 4
	lim := GP64()
	MOVQ(g.dB, lim)
	SUBQ(U32(unroll*s.vbytes), lim)
	g.Label(p + "loop")
	CMPQ(i, lim)
	JG(g.ref(p + "one"))
	for off := 0; mode != cached && off < unroll*s.vbytes; off += 64 {
		if mode == strided {
			PREFETCHT0(at(pf, i, off))
		} else {
			PREFETCHNTA(at(pf, i, off))
		}
	}
	for k := 0; k < unroll; k++ {
		out(i, k*s.vbytes, nil)
	}
	ADDQ(U32(unroll*s.vbytes), i)
	JMP(g.ref(p + "loop"))

	g.Label(p + "one")
	ADDQ(U32((unroll-1)*s.vbytes), lim)
	g.Label(p + "oneloop")
	CMPQ(i, lim)
	JG(g.ref(p + "tail"))
	out(i, 0, nil)
	ADDQ(U32(s.vbytes), i)
	JMP(g.ref(p + "oneloop"))

	g.Label(p + "tail")
	if s.scalarScaleTail {
		CMPQ(i, g.dB)
		JGE(g.ref(p + "done"))
		scalar(i)
		ADDQ(U8(4), i)
		JMP(g.ref(p + "tail"))
	} else {
		n := GP64()
		MOVQ(g.dB, n)
		SUBQ(i, n)
		JZ(g.ref(p + "done"))
		out(i, 0, s.part(n, g.label(p+"tailpart")))
	}
	g.Label(p + "done")
}

// XORself returns a fresh zeroed GP register (an index of 0).
func XORself() GPVirtual {
	z := GP64()
	XORQ(z, z)
	return z
}

// applyWeight multiplies t by w or by (1+w), as the variant asks, reading the weight at byte
// i+disp (only the bytes pt covers, when set). A 16-byte t stands for one scalar lane.
func (g *gen) applyWeight(t VecVirtual, i GPVirtual, disp int, pt part, one VecVirtual) {
	if g.v.Mode == spec.Unweighted {
		return
	}
	scalar := t.Size() == 16
	m := at(g.w, i, disp)
	switch {
	case g.v.Mode == spec.Weighted && scalar:
		VMULSS(m, t, t)
	case g.v.Mode == spec.Weighted && pt == nil:
		VMULPS(m, t, t)
	default:
		u := XMM()
		if !scalar {
			u = g.s.vec()
		}
		switch {
		case scalar:
			VMOVSS(m, u)
		case pt == nil:
			VMOVUPS(m, u)
		default:
			pt.load(m, u)
		}
		if g.v.Mode == spec.Offset {
			if scalar {
				VADDSS(one.AsX(), u, u)
			} else {
				VADDPS(one, u, u)
			}
		}
		if scalar {
			VMULSS(u, t, t)
		} else {
			VMULPS(u, t, t)
		}
	}
}
