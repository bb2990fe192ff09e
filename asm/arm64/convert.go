package main

import (
	"fmt"

	"github.com/gosimd/rmsnorm/asm/internal/spec"
)

// convert returns one conversion loop: n elements from src to dst, widened from or narrowed to
// a 16-bit format with the kernels' widen and narrow (kernel.go), sixteen at a time, then four,
// then the last one to three through a copy on the stack.
func convert(name string, c spec.Conversion) string {
	e := &emitter{v: spec.Variant{Format: c.Format}, eb: 2, ob: 2}
	sb, db := 2, 4 // bytes of a source and a destination element
	if !c.Widen {
		sb, db = 4, 2
	}
	// src and dst vectors of four lanes, as VLD1/VST1 lists.
	list := func(v vreg, n, eb int) string {
		if eb == 2 {
			return e.list(v, n)
		}
		s := "["
		for i := 0; i < n; i++ {
			if i > 0 {
				s += ", "
			}
			s += fmt.Sprintf("V%d.S4", int(v)+i)
		}
		return s + "]"
	}
	conv := func(n int) {
		for i := vreg(0); int(i) < n; i++ {
			if c.Widen {
				e.widen(16 + i)
			} else {
				e.narrow(c.Format, 16+i, 16+i, [3]vreg{20, 21, 22}, false)
			}
		}
	}
	fmt.Fprintf(&e.b, "\n// func %s%s\n", name, spec.ConvSignature)
	fmt.Fprintf(&e.b, "TEXT ·%s(SB), $32-24\n", name)
	e.op("MOVD dst+0(FP), R0")
	e.op("MOVD src+8(FP), R1")
	e.op("MOVD n+16(FP), R2")
	if c.Format == spec.BF16 && !c.Widen {
		for i, k := range []uint32{1, 0x7fff, 0xffff0000, 0x7fc00000} {
			e.op("MOVW $0x%08x, R10", k)
			e.op("VDUP R10, V%d.S4", 24+i)
		}
	}
	e.label("loop16")
	e.op("CMP $16, R2")
	e.op("BLT loop4")
	e.op("VLD1.P %d(R1), %s", 16*sb, list(16, 4, sb))
	conv(4)
	e.op("VST1.P %s, %d(R0)", list(16, 4, db), 16*db)
	e.op("SUB $16, R2, R2")
	e.op("B loop16")
	e.label("loop4")
	e.op("CMP $4, R2")
	e.op("BLT part")
	e.op("VLD1.P %d(R1), %s", 4*sb, list(16, 1, sb))
	conv(1)
	e.op("VST1.P %s, %d(R0)", list(16, 1, db), 4*db)
	e.op("SUB $4, R2, R2")
	e.op("B loop4")
	e.label("part")
	e.op("CBZ R2, done")
	e.op("ADD $8, RSP, R11")
	e.copyElems("R1", "R11", "R2", sb)
	e.op("VLD1 (R11), %s", list(16, 1, sb))
	conv(1)
	e.op("ADD $16, R11, R11")
	e.op("VST1 %s, (R11)", list(16, 1, db))
	e.copyElems("R11", "R0", "R2", db)
	e.label("done")
	e.op("RET")
	return e.b.String()
}
