package main

import "fmt"

// Encodings of the NEON instructions the Go assembler does not accept (vector FMUL, FADD, FADDP,
// FDIV, FSQRT, FCMGE on .4S). Each is built from its fields, base | Rm<<16 | Rn<<5 | Rd, and comes
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
func faddp4s(d, n, m vreg) (uint32, string) { return three(0x6e20d400, "faddp", d, n, m) }
func fdiv4s(d, n, m vreg) (uint32, string)  { return three(0x6e20fc00, "fdiv", d, n, m) }
func fcmge4s(d, n, m vreg) (uint32, string) { return three(0x6e20e400, "fcmge", d, n, m) }

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
