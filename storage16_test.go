package rmsnorm

import (
	"cmp"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// 16-bit storage: the conversions against independent references, every kernel against generic
// for ForwardBF16/ForwardF16 and every variant of ApplyBF16/ApplyF16, and what the 16-bit
// contract says through the public API.

var formats16 = []format{formatBF16, formatF16}

// narrowAll rounds float32 values to format f.
func narrowAll(x []float32, f format) []uint16 {
	h := make([]uint16, len(x))
	for i, v := range x {
		h[i] = f.narrow(v)
	}
	return h
}

// widenAll widens 16-bit values of format f.
func widenAll(h []uint16, f format) []float32 {
	x := make([]float32, len(h))
	for i, v := range h {
		x[i] = f.widen(v)
	}
	return x
}

// refWiden is the value of a 16-bit pattern of format f from its fields, in float64: an
// independent reading of the formats (bfloat16: 8 exponent bits with bias 127 and 7 fraction
// bits; binary16: 5 and 15, 10). NaN patterns give NaN.
func refWiden(h uint16, f format) float64 {
	eb, fb, bias := 8, 7, 127
	if f == formatF16 {
		eb, fb, bias = 5, 10, 15
	}
	sign := 1.0
	if h>>15 == 1 {
		sign = -1
	}
	e := int(h>>fb) & (1<<eb - 1)
	m := float64(int(h) & (1<<fb - 1))
	switch {
	case e == 1<<eb-1 && m == 0:
		return math.Inf(int(sign))
	case e == 1<<eb-1:
		return math.NaN()
	case e == 0:
		return sign * math.Ldexp(m, 1-bias-fb)
	}
	return sign * math.Ldexp(1+m/float64(int(1)<<fb), e-bias)
}

// Every one of the 65536 patterns of each format widens to its value, on every kernel's
// conversion loop and in the scalar definition the generic kernel uses.
func TestConversionsWiden(t *testing.T) {
	h := make([]uint16, 1<<16)
	for i := range h {
		h[i] = uint16(i)
	}
	for _, f := range formats16 {
		op := map[format]convOp{formatBF16: convWidenBF16, formatF16: convWidenF16}[f]
		for _, k := range testKernels() {
			got := make([]float32, len(h))
			convertWith(k, op, ptr(got), ptr(h), len(h))
			for i, v := range got {
				want := refWiden(h[i], f)
				if want != want {
					// A NaN keeps its sign and payload: bfloat16's bits move to the top of the
					// float32, float16's payload too, with the quiet bit set (F16ToFloat32).
					nan := uint32(h[i]) << 16
					if f == formatF16 {
						nan = uint32(h[i]&0x8000)<<16 | 0x7fc00000 | uint32(h[i]&0x3ff)<<13
					}
					if b := math.Float32bits(v); b != nan {
						t.Fatalf("%s %s: %#04x widens to %#08x, want the NaN %#08x", k, fname(f), h[i], b, nan)
					}
					if b := math.Float32bits(f.widen(h[i])); b != nan {
						t.Fatalf("%s: the scalar widening of %#04x gives %#08x, want the NaN %#08x", fname(f), h[i], b, nan)
					}
					continue
				}
				if float64(v) != want || math.Signbit(float64(v)) != math.Signbit(want) {
					t.Fatalf("%s %s: %#04x widens to %v, want %v", k, fname(f), h[i], v, want)
				}
				if f.widen(h[i]) != v {
					t.Fatalf("%s: the scalar widening of %#04x gives %v, want %v", fname(f), h[i], f.widen(h[i]), v)
				}
			}
		}
	}
}

// refNarrow rounds v to format f by exact arithmetic on the values (math/big): the finite value of
// the format nearest v, ties to the one with an even last bit, ±Inf beyond the largest finite
// value by half a unit or more, the sign kept for zeros and NaN for NaN. finite lists the finite
// non-negative values of the format in increasing order.
func refNarrow(v float32, finite []uint16, f format) (h uint16, nan bool) {
	if v != v {
		return 0, true
	}
	var sign uint16
	if math.Signbit(float64(v)) {
		sign = 0x8000
	}
	a := new(big.Float).SetFloat64(math.Abs(float64(v)))
	val := func(i int) *big.Float {
		if i == len(finite) { // one unit past the largest finite value: where ±Inf starts rounding
			top := refWiden(finite[len(finite)-1], f)
			ulp := top - refWiden(finite[len(finite)-2], f)
			return new(big.Float).SetFloat64(top + ulp)
		}
		return new(big.Float).SetFloat64(refWiden(finite[i], f))
	}
	inf := uint16(0x7f80)
	if f == formatF16 {
		inf = 0x7c00
	}
	i := sort16(len(finite)+1, func(i int) bool { return val(i).Cmp(a) >= 0 })
	switch {
	case i == len(finite)+1:
		return sign | inf, false
	case val(i).Cmp(a) == 0:
		if i == len(finite) {
			return sign | inf, false
		}
		return sign | finite[i], false
	}
	lo, hi := new(big.Float).Sub(a, val(i-1)), new(big.Float).Sub(val(i), a)
	pick := i
	if c := lo.Cmp(hi); c < 0 || c == 0 && finite[i-1]&1 == 0 {
		pick = i - 1
	}
	if pick == len(finite) {
		return sign | inf, false
	}
	return sign | finite[pick], false
}

// sort16 is sort.Search, kept local to read as the search it is.
func sort16(n int, f func(int) bool) int {
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if !f(m) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// narrowCases are float32 values at every rounding boundary of format f: each finite value of the
// format, the midpoints between neighbours and one float32 unit on either side of them, the
// largest finite value and the start of the overflow (65520 for binary16), the subnormal range,
// zeros, infinities and NaNs; then random patterns.
func narrowCases(f format, finite []uint16, r *rand.Rand) []float32 {
	var vs []float32
	next := func(v float32, dir float64) float32 { return math.Nextafter32(v, float32(dir)) }
	for i, h := range finite {
		v := float32(refWiden(h, f))
		vs = append(vs, v, -v)
		if i+1 < len(finite) {
			mid := float32((refWiden(h, f) + refWiden(finite[i+1], f)) / 2) // exact: 12 or 9 bits
			vs = append(vs, mid, next(mid, 0), next(mid, math.Inf(1)), -mid)
		}
	}
	top := refWiden(finite[len(finite)-1], f)
	ulp := top - refWiden(finite[len(finite)-2], f)
	over := float32(top + ulp/2) // 65520 for binary16
	vs = append(vs, over, next(over, 0), next(over, math.Inf(1)), -over, float32(top+ulp), math.MaxFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)),
		float32(math.NaN()), math.Float32frombits(0x7f800001), math.Float32frombits(0xffffffff),
		math.Float32frombits(0xffc00000), math.Float32frombits(0xff800001), math.Float32frombits(0x7fc02000),
		math.Float32frombits(0xffffe000), math.Float32frombits(0x7f802000),
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, 0x1p-126, math.Nextafter32(0x1p-126, 0))
	for range 200000 {
		vs = append(vs, math.Float32frombits(r.Uint32()))
	}
	return vs
}

// Rounding to each format matches refNarrow at every boundary and on random patterns, on every
// kernel's conversion loop and in the scalar definition.
func TestConversionsNarrow(t *testing.T) {
	for _, f := range formats16 {
		var finite []uint16
		for h := 0; h < 0x8000; h++ {
			if v := refWiden(uint16(h), f); !math.IsInf(v, 0) && v == v {
				finite = append(finite, uint16(h))
			}
		}
		vs := narrowCases(f, finite, rand.New(rand.NewPCG(uint64(f), 16)))
		want := make([]uint16, len(vs))
		isNaN := make([]bool, len(vs))
		for i, v := range vs {
			want[i], isNaN[i] = refNarrow(v, finite, f)
		}
		op := map[format]convOp{formatBF16: convNarrowBF16, formatF16: convNarrowF16}[f]
		for _, k := range testKernels() {
			got := make([]uint16, len(vs))
			convertWith(k, op, ptr(got), ptr(vs), len(vs))
			for i, v := range vs {
				switch {
				case isNaN[i] && !(refWiden(got[i], f) != refWiden(got[i], f)):
					t.Fatalf("%s %s: %v (%#08x) narrows to %#04x, want a NaN", k, fname(f), v, math.Float32bits(v), got[i])
				case isNaN[i] && f == formatBF16 && got[i] != 0x7fc0: // the contract's one bfloat16 NaN
					t.Fatalf("%s bf16: %#08x narrows to %#04x, want 0x7fc0", k, math.Float32bits(v), got[i])
				case isNaN[i] && f == formatF16 && got[i] != f16NaN(v): // Float32ToF16's NaN
					t.Fatalf("%s f16: %#08x narrows to %#04x, want %#04x", k, math.Float32bits(v), got[i], f16NaN(v))
				case !isNaN[i] && got[i] != want[i] && !bochsTie(v, got[i], want[i], f):
					t.Fatalf("%s %s: %v (%#08x) narrows to %#04x, want %#04x", k, fname(f), v, math.Float32bits(v), got[i], want[i])
				case !same16(got[i], f.narrow(v), f):
					t.Fatalf("%s: the scalar rounding of %v gives %#04x, the kernel %#04x", fname(f), v, f.narrow(v), got[i])
				}
			}
		}
		t.Logf("%s: %d values rounded by every kernel as the exact reference does", fname(f), len(vs))
	}
}

// f16NaN is the binary16 NaN Float32ToF16 gives for the float32 NaN v: its sign, the top ten
// bits of its payload, and the quiet bit (VCVTPS2PH's and FCVTN's bits).
func f16NaN(v float32) uint16 {
	b := math.Float32bits(v)
	return uint16(b>>16)&0x8000 | 0x7e00 | uint16(b>>13)&0x3ff
}

// The public conversions check their arguments.
func TestConversionsBadInput(t *testing.T) {
	h := make([]uint16, 8)
	f := make([]float32, 8)
	mustPanic(t, "BF16ToFloat32 length", []string{"rmsnorm: BF16ToFloat32: ", "len(dst) = 7", "len(src) = 8"}, func() { BF16ToFloat32(f[:7], h) })
	mustPanic(t, "Float32ToF16 length", []string{"rmsnorm: Float32ToF16: ", "len(dst) = 8", "len(src) = 5"}, func() { Float32ToF16(h, f[:5]) })
	alias := unsafe.Slice((*uint16)(unsafe.Pointer(&f[0])), 8)
	mustPanic(t, "Float32ToBF16 overlap", []string{"rmsnorm: Float32ToBF16: ", "dst overlaps src"}, func() { Float32ToBF16(alias, f) })
	mustPanic(t, "F16ToFloat32 overlap", []string{"rmsnorm: F16ToFloat32: ", "dst overlaps src"}, func() { F16ToFloat32(f, alias) })
	for i := range f {
		if f[i] != 0 {
			t.Fatalf("a conversion wrote before panicking: %v", f)
		}
	}
	BF16ToFloat32(nil, nil) // nothing to do
}

// forward16With is ForwardBF16 or ForwardF16 with an explicit kernel.
func forward16With(k kernelID, f format, dst, x []uint16, w []float32, eps float32) {
	nm := map[format]*names{formatBF16: &forwardBF16Names, formatF16: &forwardF16Names}[f]
	forwardRows(nm, f, dst, x, w, eps, k)
}

// check16 fails unless got holds want's values (NaN payloads aside).
func check16(t *testing.T, ctx string, f format, got, want []uint16) {
	t.Helper()
	for i := range want {
		if !same16(got[i], want[i], f) {
			t.Fatalf("%s: y[%d] = %#04x, generic gives %#04x", ctx, i, got[i], want[i])
		}
	}
}

// What the 16-bit contract says, through the public API: the output is the float32 contract on
// the widened rows, rounded once (twice with RoundNormalized, through the row's own inv); the
// residual is rounded to the format before it is normalized.
func TestStorage16Semantics(t *testing.T) {
	for _, f := range formats16 {
		for _, d := range []int{1, 7, 64, 130, 4096} {
			const rows = 5
			x := narrowAll(normalRows(d, rows, 60), f)
			r16 := narrowAll(normalRows(d, rows, 61), f)
			w := normalRows(d, 1, 62)
			x32 := widenAll(x, f)
			ctx := fmt.Sprintf("%s d=%d", fname(f), d)
			apply := func(n Norm, r Rows16) {
				if f == formatBF16 {
					n.ApplyBF16(r)
				} else {
					n.ApplyF16(r)
				}
			}

			// Default: y = round16 of Forward on the widened rows.
			want32 := make([]float32, len(x))
			Forward(want32, x32, w, 1e-6)
			y := make([]uint16, len(x))
			if f == formatBF16 {
				ForwardBF16(y, x, w, 1e-6)
			} else {
				ForwardF16(y, x, w, 1e-6)
			}
			check16(t, ctx+" Forward16", f, y, narrowAll(want32, f))

			// RoundNormalized: y = round16(round16(x*inv)*w), with the inv of the row.
			inv := make([]float32, rows)
			apply(Norm{Weight: w, Eps: 1e-6, RoundNormalized: true}, Rows16{Dst: y, X: x, Inv: inv})
			for i := range y {
				n := f.round(x32[i] * inv[i/d])
				if want := f.narrow(n * w[i%d]); !same16(y[i], want, f) {
					t.Fatalf("%s RoundNormalized: y[%d] = %#04x, want %#04x", ctx, i, y[i], want)
				}
			}
			// With UnitOffset too: y = round16(round16(x*inv)*(1+w)), 1+w rounded to float32.
			apply(Norm{Weight: w, Eps: 1e-6, RoundNormalized: true, UnitOffset: true}, Rows16{Dst: y, X: x, Inv: inv})
			for i := range y {
				n := f.round(x32[i] * inv[i/d])
				if want := f.narrow(n * (1 + w[i%d])); !same16(y[i], want, f) {
					t.Fatalf("%s RoundNormalized UnitOffset: y[%d] = %#04x, want %#04x", ctx, i, y[i], want)
				}
			}
			// Without a weight RoundNormalized changes nothing.
			y2 := make([]uint16, len(x))
			apply(Norm{Dim: d, Eps: 1e-6, RoundNormalized: true}, Rows16{Dst: y, X: x})
			apply(Norm{Dim: d, Eps: 1e-6}, Rows16{Dst: y2, X: x})
			check16(t, ctx+" unweighted RoundNormalized", f, y, y2)

			// Residual: h = round16(x + r) goes back into the residual and is what is normalized.
			h := make([]uint16, len(x))
			for i := range h {
				h[i] = f.narrow(x32[i] + f.widen(r16[i]))
			}
			res := slices.Clone(r16)
			apply(Norm{Weight: w, Eps: 1e-6}, Rows16{Dst: y, X: x, Residual: res})
			check16(t, ctx+" residual stored", f, res, h)
			Forward(want32, widenAll(h, f), w, 1e-6)
			check16(t, ctx+" residual normalized", f, y, narrowAll(want32, f))
		}
	}
}

// Rows whose float32 squares would overflow in binary16 (|x| > 256) come out right: the squares
// and their sum are float32. Against float64, every output is within a rounding of binary16.
func TestF16LargeValues(t *testing.T) {
	for _, d := range []int{1, 8, 100, 4096} {
		r := rand.New(rand.NewPCG(uint64(d), 256))
		x := make([]uint16, d)
		for i := range x {
			x[i] = float32ToF16(float32((r.Float64()*2 - 1) * 65000))
		}
		x[0] = 0x7bff // 65504, the largest finite binary16
		w := ones(d)
		y := make([]uint16, d)
		ForwardF16(y, x, w, 1e-6)
		ref := ref64(widenAll(x, formatF16), w, 1e-6)
		for i, v := range y {
			got := float64(f16ToFloat32(v))
			if math.IsInf(got, 0) || got != got {
				t.Fatalf("d=%d: y[%d] = %v for x = %v", d, i, got, f16ToFloat32(x[i]))
			}
			// Half a unit of binary16 (2^-11 relative) for the rounding, plus float32's error.
			if e := math.Abs(got - ref[i]); e > math.Abs(ref[i])*0x1p-11*1.01+0x1p-24 {
				t.Fatalf("d=%d: y[%d] = %v, float64 gives %v", d, i, got, ref[i])
			}
		}
	}
}

// bfloat16 has float32's range, so its rows reach the float64 path as float32 rows do, and come
// out right: [3e38 4e38] would overflow the float32 squares.
func TestBF16Float64Path(t *testing.T) {
	for _, k := range testKernels() {
		x := narrowAll([]float32{3e38, 3e38, -3e38, 1e38}, formatBF16)
		w := []float32{1, 1, 1, 1}
		y := make([]uint16, len(x))
		forward16With(k, formatBF16, y, x, w, 1e-6)
		ref := ref64(widenAll(x, formatBF16), w, 1e-6)
		for i, v := range y {
			if want := float32ToBF16(float32(ref[i])); v != want {
				t.Fatalf("%s: y[%d] = %#04x (%v), float64 rounded gives %#04x (%v)", k, i, v, bf16ToFloat32(v), want, ref[i])
			}
		}
	}
}

// TestF16SquaresExact checks, for every binary16 value, what lets the avx512 kernel sum the squares
// of float16 rows with one fused multiply-add (fusedSquares in the generator): the float32
// product x*x is exact, so a + x*x rounded once equals the contract's a + round(x*x). bfloat16
// values have no such property: the squares of the tiniest ones fall below float32's normal range
// and round there (squares that overflow to +Inf are left out: fused or not, they give +Inf).
func TestF16SquaresExact(t *testing.T) {
	inexact := func(f format) (n int, first uint16) {
		for h := range 1 << 16 {
			x := f.widen(uint16(h))
			sq := x * x
			if math.IsNaN(float64(x)) || math.IsInf(float64(sq), 0) {
				continue
			}
			if float64(sq) != float64(x)*float64(x) {
				if n == 0 {
					first = uint16(h)
				}
				n++
			}
		}
		return n, first
	}
	if n, h := inexact(formatF16); n != 0 {
		t.Errorf("float16: %d values whose float32 square rounds, the first 0x%04x (%g)", n, h, formatF16.widen(h))
	}
	if n, _ := inexact(formatBF16); n == 0 {
		t.Errorf("bfloat16: every finite square exact in float32; expected the tiny values' to round")
	}
}

// TestF16EveryValueRows runs every finite binary16 value through the kernels, sorted by magnitude
// into rows of 1024 (so that the rows of subnormals and of the smallest normals are summed by
// themselves), with and without a residual, RoundNormalized on and off and three eps, against
// generic: the sum passes that fuse the squares (fusedSquares) meet every value they can square,
// the residual's h included.
func TestF16EveryValueRows(t *testing.T) {
	var vals []uint16
	for h := range 1 << 16 {
		if v := formatF16.widen(uint16(h)); !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) {
			vals = append(vals, uint16(h))
		}
	}
	slices.SortStableFunc(vals, func(a, b uint16) int { return cmp.Compare(a&0x7fff, b&0x7fff) })
	const d = 1024
	rows := len(vals) / d
	x := vals[:rows*d]
	res := make([]uint16, len(x)) // h = round16(x - x/2): every magnitude again, rounded
	for i, h := range x {
		res[i] = formatF16.narrow(-formatF16.widen(h) / 2)
	}
	w := make([]float32, d)
	for i := range w {
		w[i] = 1 + float32(i%7)/8
	}
	for _, k := range kernelsFor(t, formatF16) {
		if k == kernelGeneric {
			continue
		}
		for _, eps := range []float32{0, 1e-12, 1e-6} {
			for _, residual := range []bool{false, true} {
				for _, rn := range []bool{false, true} {
					c := vcase{residual: residual, rn: rn, withInv: true}
					checkVariant(t, "every float16", k, c, formatF16, d, rows, x, res, w, eps, 0)
				}
			}
		}
	}
}
