package main

import (
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
