package rmsnorm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// On a CPU with AVX512_BF16 the avx512 kernel (kernelAVX512BF16, "avx512+bf16" in tests) narrows
// to bfloat16 with VCVTNE2PS2BF16, which reads subnormal float32 lanes as zero and keeps NaN
// payloads, and takes the integer rounding for every vector with such a lane
// (asm/amd64/bf16cvt.go). These tests put those lanes at every position of the vectors, pairs of
// vectors and row ends the kernels narrow, in conversions and in the forward forms, and check
// that every kernel under test gives the generic kernel's bits, NaN included: the contract's
// bfloat16 NaN is 0x7fc0 whatever the NaN it came from, on every kernel.

// logBF16Paths says which ways of narrowing to bfloat16 the kernels under test cover.
func logBF16Paths(t *testing.T) {
	t.Helper()
	if slices.Contains(testKernels(), kernelAVX512BF16) {
		t.Log("--> bfloat16 narrowed with VCVTNE2PS2BF16 (avx512+bf16) and with integer rounding (the other kernels)")
	} else {
		t.Log("--> no avx512+bf16 here (no AVX512_BF16, or not under test): integer rounding only")
	}
}

// fixLanes are float32 values, as bits, that VCVTNE2PS2BF16 rounds otherwise than the contract
// (subnormals, NaNs) and, to check that the fix-up does not disturb them, their neighbours among
// the values it rounds right.
var fixLanes = []uint32{
	0x00000001, 0x80000001, // the smallest subnormals: ±0
	0x00008000, 0x00018000, 0x80008001, // ties and just past one: to even, up
	0x007fffff, 0x807f8000, // the largest subnormals round up to the smallest normal
	0x00400000, 0x0000ffff,
	0x7fc00000, 0xffc00000, 0x7f800001, 0xff812345, 0x7fffffff, // quiet and signalling NaNs
	0, 0x80000000, 0x00800000, 0x7f800000, 0xff800000, 0x7f7fffff, 0x3f808000, // zeros, normal, Inf, overflow, tie
}

// check16Exact is check16 for bfloat16, with NaN bits compared too.
func check16Exact(t *testing.T, ctx string, got, want []uint16) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: [%d] = %#04x, generic gives %#04x", ctx, i, got[i], want[i])
		}
	}
}

// Float32ToBF16 on every kernel under test, a value of fixLanes at every position of every length
// up to 80 and around 128, a second one elsewhere, among normal values.
func TestBF16NarrowingLanes(t *testing.T) {
	logBF16Paths(t)
	lens := []int{127, 128, 129, 130}
	for n := 1; n <= 80; n++ {
		lens = append(lens, n)
	}
	r := rand.New(rand.NewPCG(16, 1))
	runs := 0
	for _, n := range lens {
		src := make([]float32, n)
		for p := 0; p < n; p++ {
			for i, v := range fixLanes {
				fill(src, classNormal, r)
				src[p] = math.Float32frombits(v)
				src[(p*7+3)%n] = math.Float32frombits(fixLanes[(i+5)%len(fixLanes)])
				want := make([]uint16, n)
				convertGeneric(convNarrowBF16, ptr(want), ptr(src), n)
				for _, k := range testKernels() {
					got := make([]uint16, n)
					convertWith(k, convNarrowBF16, ptr(got), ptr(src), n)
					check16Exact(t, fmt.Sprintf("%s n=%d p=%d %#08x", k, n, p, v), got, want)
					runs++
				}
			}
		}
	}
	t.Logf("%d conversions on kernels %v", runs, testKernels())
}

// ForwardBF16 and ApplyBF16 (RoundNormalized, UnitOffset, a residual) on every kernel under
// test, for rows of every length up to 70 and around the block of 64: a row element whose output,
// normalized value or residual sum is subnormal at one position, and a NaN weight (or Inf weight
// on a zero element) at another, among normal values.
func TestBF16ForwardLanes(t *testing.T) {
	logBF16Paths(t)
	dims := []int{127, 128, 129, 4096}
	for d := 1; d <= 70; d++ {
		dims = append(dims, d)
	}
	forms := []vcase{
		{mode: weighted}, {mode: weighted, rn: true}, {mode: offset}, {mode: unweighted},
		{mode: weighted, residual: true}, {mode: offset, residual: true, rn: true},
	}
	runs := 0
	for _, d := range dims {
		r := seedFor(d, 16)
		positions := []int{0, d / 2, d - 1}
		if d <= 70 {
			positions = nil
			for p := 0; p < d; p++ {
				positions = append(positions, p)
			}
		}
		for _, p := range positions {
			x32, res32, w := make([]float32, d), make([]float32, d), make([]float32, d)
			fill(x32, classNormal, r)
			fill(res32, classNormal, r)
			fill(w, classNormal, r)
			x32[p] = 0x1p-130 * float32(1+p%5) // bfloat16 subnormals: so is x*inv (about 1) and y
			res32[p] = 0
			if q := (p*7 + 3) % d; q != p {
				w[q] = float32(math.NaN())
				if p%2 == 1 {
					x32[q], w[q] = 0, float32(math.Inf(1)) // 0*Inf
				}
			}
			x, res := narrowAll(x32, formatBF16), narrowAll(res32, formatBF16)
			for _, c := range forms {
				n := Norm{Weight: w, Eps: 1e-6, UnitOffset: c.mode == offset, RoundNormalized: c.rn}
				if c.mode == unweighted {
					n = Norm{Dim: d, Eps: 1e-6}
				}
				run := func(k kernelID) (y, h []uint16) {
					y = make([]uint16, d)
					if c.residual {
						h = slices.Clone(res)
					}
					applyRowsWith(k, &n, formatBF16, y, x, h, nil, 0, 0)
					return y, h
				}
				wantY, wantH := run(kernelGeneric)
				for _, k := range testKernels() {
					y, h := run(k)
					ctx := fmt.Sprintf("%s d=%d p=%d %s", k, d, p, c)
					check16Exact(t, ctx+" y", y, wantY)
					check16Exact(t, ctx+" residual", h, wantH)
					runs++
				}
			}
		}
	}
	t.Logf("%d rows on kernels %v", runs, testKernels())
}

// Float32ToBF16 on every SIMD kernel under test against the generic loop for every float32
// pattern with -matrix=full (4.3 billion, about 7 s per kernel here), every 4099th otherwise, in
// runs of a million: the fix-up's branch taken or not in every combination the values give.
func TestBF16NarrowingAllPatterns(t *testing.T) {
	logBF16Paths(t)
	step := uint64(4099)
	if matrixSize() == "full" {
		step = 1
	}
	const run = 1 << 20
	src := make([]float32, run)
	want := make([]uint16, run)
	got := make([]uint16, run)
	n := uint64(0)
	for u := uint64(0); u < 1<<32; {
		m := 0
		for ; m < run && u < 1<<32; m, u = m+1, u+step {
			src[m] = math.Float32frombits(uint32(u))
		}
		convertGeneric(convNarrowBF16, ptr(want), ptr(src), m)
		for _, k := range simdKernels() {
			convertWith(k, convNarrowBF16, ptr(got), ptr(src), m)
			check16Exact(t, fmt.Sprintf("%s from %#08x", k, math.Float32bits(src[0])), got[:m], want[:m])
		}
		n += uint64(m)
	}
	t.Logf("%d patterns on kernels %v", n, simdKernels())
}

// ApplyBF16 with a residual on every kernel under test, where x + r is NaN at one position (Inf
// plus -Inf, whose sum x86 makes the negative NaN 0xffc00000, or a NaN of either sign in x): the
// residual stored there, and every output of the row, which the NaN makes NaN, are exactly 0x7fc0;
// the other residual lanes are the generic kernel's.
func TestBF16NaNResidual(t *testing.T) {
	dims := []int{127, 128, 129, 130}
	for d := 1; d <= 70; d++ {
		dims = append(dims, d)
	}
	nans := []struct{ x, r uint16 }{{0x7f80, 0xff80}, {0xff81, 0x3f80}, {0x7fc1, 0xbf80}}
	forms := []vcase{{mode: weighted, residual: true}, {mode: offset, residual: true, rn: true}, {mode: unweighted, residual: true}}
	runs := 0
	for _, d := range dims {
		r := seedFor(d, 17)
		positions := []int{0, d / 2, d - 1}
		if d <= 70 {
			positions = nil
			for p := 0; p < d; p++ {
				positions = append(positions, p)
			}
		}
		x32, res32, w := make([]float32, d), make([]float32, d), make([]float32, d)
		fill(x32, classNormal, r)
		fill(res32, classNormal, r)
		fill(w, classNormal, r)
		for _, p := range positions {
			for i, nan := range nans {
				x, res := narrowAll(x32, formatBF16), narrowAll(res32, formatBF16)
				x[p], res[p] = nan.x, nan.r
				for _, c := range forms {
					n := Norm{Weight: w, Eps: 1e-6, UnitOffset: c.mode == offset, RoundNormalized: c.rn}
					if c.mode == unweighted {
						n = Norm{Dim: d, Eps: 1e-6}
					}
					run := func(k kernelID) (y, h []uint16) {
						y, h = make([]uint16, d), slices.Clone(res)
						applyRowsWith(k, &n, formatBF16, y, x, h, nil, 0, 0)
						return y, h
					}
					_, wantH := run(kernelGeneric)
					for _, k := range testKernels() {
						y, h := run(k)
						ctx := fmt.Sprintf("%s d=%d p=%d nan=%d %s", k, d, p, i, c)
						if h[p] != 0x7fc0 {
							t.Fatalf("%s: residual [%d] = %#04x, want 0x7fc0", ctx, p, h[p])
						}
						check16Exact(t, ctx+" residual", h, wantH)
						for j := range y {
							if y[j] != 0x7fc0 {
								t.Fatalf("%s: y[%d] = %#04x, want 0x7fc0", ctx, j, y[j])
							}
						}
						runs++
					}
				}
			}
		}
	}
	t.Logf("%d rows on kernels %v", runs, testKernels())
}
