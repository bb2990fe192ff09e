package rmsnorm

import (
	"fmt"
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
