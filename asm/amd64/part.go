package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// part reads and writes the first bytes of a vector at the end of a row, never touching memory
// past them: on reads the other lanes are zero (and +0 adds exactly to a partial sum), on writes
// their memory is left alone.
type part interface {
	load(m Mem, v VecVirtual)
	store(v VecVirtual, m Mem)
}

// maskPart is AVX-512's: a k-mask, with the architecture's fault suppression for masked-off lanes.
type maskPart struct{ k Op }

func (p maskPart) load(m Mem, v VecVirtual)  { VMOVUPS_Z(m, p.k, v) }
func (p maskPart) store(v VecVirtual, m Mem) { VMOVUPS(v, p.k, m) }

// insertPart is AVX2's: one element at a time (VMOVSS, VINSERTPS, VEXTRACTPS). VMASKMOVPS would
// be shorter, but whether it faults on masked-off elements in an unmapped page is left to the
// implementation by AMD's manual (and qemu's emulation does fault), so it is not used.
type insertPart struct {
	n     GPVirtual // bytes, 4..28
	label string
	uses  int
}

func (p *insertPart) labels() (string, string) {
	p.uses++
	l := fmt.Sprintf("%s_%d", p.label, p.uses)
	return l + "lo", l + "hi"
}

func (p *insertPart) load(m Mem, v VecVirtual) {
	done, hiDone := p.labels()
	VXORPS(v, v, v) // a whole-register write, so that Avo's liveness sees v defined
	lo := v.AsX()
	VMOVSS(m, lo)
	for lane := 1; lane < 4; lane++ {
		CMPQ(p.n, U8(4*lane+4))
		JL(LabelRef(done))
		VINSERTPS(U8(lane<<4), m.Offset(4*lane), lo, lo)
	}
	CMPQ(p.n, U8(20))
	JL(LabelRef(done))
	hi := XMM()
	VMOVSS(m.Offset(16), hi)
	for lane := 1; lane < 3; lane++ {
		CMPQ(p.n, U8(16+4*lane+4))
		JL(LabelRef(hiDone))
		VINSERTPS(U8(lane<<4), m.Offset(16+4*lane), hi, hi)
	}
	Label(hiDone)
	VINSERTF128(U8(1), hi, v, v)
	Label(done)
}

func (p *insertPart) store(v VecVirtual, m Mem) {
	done, _ := p.labels()
	lo := v.AsX()
	VMOVSS(lo, m)
	for lane := 1; lane < 4; lane++ {
		CMPQ(p.n, U8(4*lane+4))
		JL(LabelRef(done))
		VEXTRACTPS(U8(lane), lo, m.Offset(4*lane))
	}
	hi := XMM()
	VEXTRACTF128(U8(1), v, hi)
	for lane := 0; lane < 3; lane++ {
		CMPQ(p.n, U8(16+4*lane+4))
		JL(LabelRef(done))
		VEXTRACTPS(U8(lane), hi, m.Offset(16+4*lane))
	}
	Label(done)
}
