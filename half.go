package rmsnorm

import "math"

// The 16-bit storage formats: bfloat16 (the top half of a float32) and IEEE 754 binary16. Rows in
// these formats are []uint16 of raw bits. Widening to float32 is exact; narrowing rounds to
// nearest, ties to even, keeps subnormals, overflows binary16 to ±Inf, keeps the sign of zero and
// turns NaN into a quiet NaN. The vector kernels give the same bits (NaN payloads aside); these
// are the scalar definitions the generic kernel and the tests use.

// format is how rows are stored: x and the residual in f.in(), dst in f.out().
type format uint8

const (
	formatF32    format = iota // float32
	formatBF16                 // bfloat16 bits in a uint16
	formatF16                  // IEEE 754 binary16 bits in a uint16
	formatToBF16               // float32 x and residual, bfloat16 dst (RowsTo16)
	formatToF16                // float32 x and residual, binary16 dst (RowsTo16)
)

// size is the bytes of one element of format f (of formatF32, formatBF16 or formatF16).
func (f format) size() uintptr {
	if f == formatF32 {
		return 4
	}
	return 2
}

// in is the format of x and the residual.
func (f format) in() format {
	if f >= formatToBF16 {
		return formatF32
	}
	return f
}

// out is the format of dst.
func (f format) out() format {
	switch f {
	case formatToBF16:
		return formatBF16
	case formatToF16:
		return formatF16
	}
	return f
}

// bf16ToFloat32 widens a bfloat16: its bits are the top half of the float32.
func bf16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// float32ToBF16 narrows to bfloat16, rounding to nearest even on the integer bits (which carries
// into the exponent where it must, up to ±Inf). A NaN becomes the quiet NaN 0x7fc0, as PyTorch's
// c10::BFloat16 gives.
func float32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return 0x7fc0
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// f16ToFloat32 widens an IEEE binary16.
func f16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	e := uint32(h>>10) & 0x1f
	m := uint32(h) & 0x3ff
	switch {
	case e == 0x1f && m != 0: // NaN: its payload at the top, made quiet, as VCVTPH2PS and FCVTL make it
		return math.Float32frombits(sign | 0x7fc00000 | m<<13)
	case e == 0x1f: // ±Inf
		return math.Float32frombits(sign | 0x7f800000)
	case e != 0: // normal: rebias the exponent from 15 to 127
		return math.Float32frombits(sign | (e+112)<<23 | m<<13)
	case m == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: m * 2^-24, exact in float32.
	f := float32(m) * 0x1p-24
	if sign != 0 {
		f = -f
	}
	return f
}

// float32ToF16 narrows to IEEE binary16 with round to nearest even. A NaN keeps its sign and the
// top of its payload and becomes quiet, as x86's VCVTPS2PH gives.
func float32ToF16(f float32) uint16 {
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	a := u & 0x7fffffff
	switch {
	case a > 0x7f800000: // NaN
		return sign | 0x7e00 | uint16(a>>13)&0x3ff
	case a >= 0x477ff000: // |f| >= 65520: rounds to Inf (65504 is the largest finite)
		return sign | 0x7c00
	case a >= 0x38800000: // |f| >= 2^-14: a normal binary16
		a -= 112 << 23 // rebias the exponent from 127 to 15
		return sign | uint16((a+0xfff+(a>>13)&1)>>13)
	case a < 0x33000000: // |f| < 2^-25: rounds to zero (2^-25 itself, a tie, goes to the subnormal case and to even, 0)
		return sign
	}
	// Subnormal result: round |f| / 2^-24 to an integer, ties to even.
	e := a >> 23              // 102..112
	m := a&0x7fffff | 1<<23   // 24-bit significand: |f| = m * 2^(e-150)
	shift := 126 - e          // |f| / 2^-24 = m >> shift, shift in 14..24
	q := m >> shift           // the integer part
	rem := m & (1<<shift - 1) // the fraction, in units of 2^-shift
	half := uint32(1) << (shift - 1)
	if rem > half || rem == half && q&1 == 1 {
		q++ // may carry into the smallest normal, 0x0400, which is right
	}
	return sign | uint16(q)
}

// widen widens h from the 16-bit format f (or f's out).
func (f format) widen(h uint16) float32 {
	if f.out() == formatBF16 {
		return bf16ToFloat32(h)
	}
	return f16ToFloat32(h)
}

// narrow rounds v to the 16-bit format f (or f's out).
func (f format) narrow(v float32) uint16 {
	if f.out() == formatBF16 {
		return float32ToBF16(v)
	}
	return float32ToF16(v)
}

// round returns v rounded to the 16-bit format, as a float32.
func (f format) round(v float32) float32 { return f.widen(f.narrow(v)) }
