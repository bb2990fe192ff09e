package rmsnorm

import (
	"fmt"
	"testing"
)

// TestWholeVectorTails runs rows whose last elements past a multiple of 64 are whole vectors
// (d a multiple of 8: the AVX2 sum passes add them straight into their partials) on every kernel
// against generic: RMSNorm and each LayerNorm form, every format, with and without a residual,
// one row and a batch (short rows without a residual go four at a time), Inv and Mean reported.
// The rows are normal values around 3, so that every output depends on the mean and the sum of
// squares: a vector added to the wrong partial, one too many or too few, or an h not stored back
// changes the bits. d = 48 + 64k once let a missed exit of LayerNorm's mean pass through, its
// other tests' rows being ones whose outputs do not depend on the mean.
func TestWholeVectorTails(t *testing.T) {
	forms := append([]struct{ center, bias bool }{{false, false}}, layerForms...)
	n := 0
	for _, k := range simdKernels() {
		for _, f := range layerFormats {
			for _, d := range []int{8, 16, 24, 32, 40, 48, 56, 72, 80, 96, 104, 112, 120, 160, 176, 200, 1000} {
				for _, lf := range forms {
					for _, residual := range []bool{false, true} {
						for _, rows := range []int{1, 5} {
							n++
							lc := lcase{f: f, mode: []weightMode{weighted, offset, unweighted}[n%3], center: lf.center, bias: lf.bias,
								residual: residual, inv: true, mean: lf.center,
								wclass: classNormal, bclass: classNormal, resClass: classNormal}
							x, res, w, b := layerInputs(seedFor(d, rows, n, 37), lc, d, rows, classNormal)
							for i := range x {
								x[i] += 3
							}
							ctx := fmt.Sprintf("%s %s d=%d rows=%d", k, lc, d, rows)
							got := runLayer(t, k, lc, d, rows, x, res, w, b, 1e-5, n%8)
							want := runLayer(t, kernelGeneric, lc, d, rows, x, res, w, b, 1e-5, n%8)
							sameOut(t, ctx, got, want)
						}
					}
				}
			}
		}
	}
}
