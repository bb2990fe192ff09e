package main

import "fmt"

// Encodings of the NEON instructions the Go assembler does not accept (vector FMUL, FADD, FSUB,
// FADDP, FDIV, FSQRT, FCMGE, FCMEQ on .4S; SHLL, FCVTL, FCVTN and SHRN between .4S and .4H). Each is built from its fields, base | Rm<<16 | Rn<<5 | Rd, and comes
// with its text in GNU syntax, which the test in this directory decodes back with
// golang.org/x/arch/arm64/arm64asm and compares.

type vreg int // a NEON register number, 0..31

func check(regs ...vreg) {
	for _, r := range regs {
		if r < 0 || r > 31 {
			panic(fmt.Sprintf("vector register %d out of range", r))
		}
	}
}

// three encodes a three-register vector instruction on .4S.
func three(base uint32, name string, d, n, m vreg) (uint32, string) {
	check(d, n, m)
	return base | uint32(m)<<16 | uint32(n)<<5 | uint32(d), fmt.Sprintf("%s v%d.4s, v%d.4s, v%d.4s", name, d, n, m)
}

func fmul4s(d, n, m vreg) (uint32, string)  { return three(0x6e20dc00, "fmul", d, n, m) }
func fadd4s(d, n, m vreg) (uint32, string)  { return three(0x4e20d400, "fadd", d, n, m) }
func fsub4s(d, n, m vreg) (uint32, string)  { return three(0x4ea0d400, "fsub", d, n, m) }
func faddp4s(d, n, m vreg) (uint32, string) { return three(0x6e20d400, "faddp", d, n, m) }
func fdiv4s(d, n, m vreg) (uint32, string)  { return three(0x6e20fc00, "fdiv", d, n, m) }
func fcmge4s(d, n, m vreg) (uint32, string) { return three(0x6e20e400, "fcmge", d, n, m) }
func fcmeq4s(d, n, m vreg) (uint32, string) { return three(0x4e20e400, "fcmeq", d, n, m) }

// two encodes a two-register instruction between .4S and .4H lanes; text names its operands.
func two(base uint32, text string, d, n vreg) (uint32, string) {
	check(d, n)
	return base | uint32(n)<<5 | uint32(d), fmt.Sprintf(text, d, n)
}

// shll16 encodes SHLL Vd.4S, Vn.4H, #16: each 16-bit lane moved to the top of a 32-bit lane
// (bfloat16 to float32).
func shll16(d, n vreg) (uint32, string) { return two(0x2e613800, "shll v%d.4s, v%d.4h, #16", d, n) }

// fcvtl encodes FCVTL Vd.4S, Vn.4H: binary16 to float32, exact.
func fcvtl(d, n vreg) (uint32, string) { return two(0x0e217800, "fcvtl v%d.4s, v%d.4h", d, n) }

// fcvtn encodes FCVTN Vd.4H, Vn.4S: float32 to binary16, rounded as FPCR says (to nearest, ties
// to even, subnormals kept, under Go's default FPCR).
func fcvtn(d, n vreg) (uint32, string) { return two(0x0e216800, "fcvtn v%d.4h, v%d.4s", d, n) }

// shrn16 encodes SHRN Vd.4H, Vn.4S, #16: the top 16 bits of each 32-bit lane.
func shrn16(d, n vreg) (uint32, string) { return two(0x0f108400, "shrn v%d.4h, v%d.4s, #16", d, n) }

// fsqrt4s encodes FSQRT Vd.4S, Vn.4S.
func fsqrt4s(d, n vreg) (uint32, string) {
	check(d, n)
	return 0x6ea1f800 | uint32(n)<<5 | uint32(d), fmt.Sprintf("fsqrt v%d.4s, v%d.4s", d, n)
}

// faddpScalar encodes FADDP Sd, Vn.2S: lane 0 plus lane 1, one rounded addition.
func faddpScalar(d, n vreg) (uint32, string) {
	check(d, n)
	return 0x7e30d800 | uint32(n)<<5 | uint32(d), fmt.Sprintf("faddp s%d, v%d.2s", d, n)
}
