package rmsnorm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The AVX-512 sum passes of bfloat16 rows widen rows of 128 and more in even and odd halves, 32
// elements from each 64-byte load, and read the row's last 1-63 elements up to 32 words at a time
// through one mask of the words; shorter rows take an in-order copy of the pass. Every length from
// 100 to 200 (the switch at 128, and each tail length after whole blocks, the mask's edges at 32
// and 33 among them), for RMSNorm and LayerNorm, with and without a residual, one row and a
// group's five, against generic on every kernel, in guarded buffers. .ci/avx512-bochs runs it
// too, for the avx512 functions on a machine without AVX-512.
func TestBF16HalvesTails(t *testing.T) {
	forms := append([]struct{ center, bias bool }{{false, false}}, layerForms...)
	for _, k := range testKernels() {
		for d := 100; d <= 200; d++ {
			for fi, lf := range forms {
				for _, residual := range []bool{false, true} {
					for _, rows := range []int{1, 5} {
						c := lcase{f: formatBF16, mode: weightMode((d + fi) % 3), center: lf.center, bias: lf.bias,
							rn: (d+fi)%4 == 0, residual: residual, inv: true, mean: lf.center,
							wclass: classNormal, bclass: classNormal, resClass: classNormal}
						x, res, w, b := layerInputs(seedFor(d, rows, fi, 31), c, d, rows, classNormal)
						want := runLayer(t, kernelGeneric, c, d, rows, x, res, w, b, 1e-5, d%16)
						got := runLayer(t, k, c, d, rows, x, res, w, b, 1e-5, d%16)
						sameOut(t, fmt.Sprintf("%s %s d=%d rows=%d", k, c, d, rows), got, want)
					}
				}
			}
		}
	}
}

// classSpread is a normal value times 2^-20..2^20: bfloat16 rows of it have partial sums (and
// sums of squares) that float32 rounds, so that the order in which a kernel adds its partials
// shows in the bits of the mean and inv, where rows of ordinary values sum exactly in float32
// nearly always (their bfloat16 elements have 8 significant bits).
var classSpread = valueClass{"spread", func(r *rand.Rand, i int) float32 {
	return normalValue(r) * float32(math.Ldexp(1, r.IntN(41)-20))
}}

// The AVX2 sum passes of bfloat16 rows hold each pair's partials out of order and put them back
// after the halving tree's first two steps (asm/amd64: partial); a put-back in the wrong place
// would change only the rounding of sums, which rows of classSpread make visible. RMSNorm and
// every LayerNorm form, with and without a residual, one row, three, a group of four, five and
// eight, at lengths around the block of 64 and the pair of 16, Inv and Mean compared bit for bit
// with the rows, against generic on every kernel.
func TestBF16SumOrder(t *testing.T) {
	forms := append([]struct{ center, bias bool }{{false, false}}, layerForms...)
	dims := []int{2, 8, 14, 16, 24, 40, 48, 62, 64, 66, 72, 80, 96, 100, 112, 128, 130, 160, 192, 256, 520, 1024}
	for _, k := range testKernels() {
		for _, d := range dims {
			for fi, lf := range forms {
				for _, residual := range []bool{false, true} {
					for _, rows := range []int{1, 3, 4, 5, 8} {
						c := lcase{f: formatBF16, mode: weightMode((d + fi) % 3), center: lf.center, bias: lf.bias,
							residual: residual, inv: true, mean: lf.center,
							wclass: classNormal, bclass: classNormal, resClass: classSpread}
						x, res, w, b := layerInputs(seedFor(d, rows, fi, 33), c, d, rows, classSpread)
						want := runLayer(t, kernelGeneric, c, d, rows, x, res, w, b, 1e-30, 0)
						got := runLayer(t, k, c, d, rows, x, res, w, b, 1e-30, 0)
						sameOut(t, fmt.Sprintf("%s %s d=%d rows=%d", k, c, d, rows), got, want)
					}
				}
			}
		}
	}
}
