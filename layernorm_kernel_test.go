package rmsnorm

import (
	"fmt"
	"math"
	"testing"
)

// The LayerNorm kernel functions in the memory modes of rows from memory (prefetches, and
// non-temporal stores out of place), on rows whose sums meet signed zeros, against the generic
// kernel bit for bit.

// With the memory flags forced on, every format, layer form, weight form, residual and placement
// gives the generic kernel's bits: the non-temporal stores start at each alignment of Dst (off),
// their head and the end of the row going out through the partial path.
func TestLayerNormStreaming(t *testing.T) {
	for _, k := range simdKernels() {
		for _, d := range []int{1, 7, 16, 33, 64, 100, 257, 1000} {
			n := 0
			for _, f := range layerFormats {
				for _, lf := range layerForms {
					for _, mode := range []weightMode{weighted, offset, unweighted} {
						for _, residual := range []bool{false, true} {
							n++
							const rows = 3
							lc := lcase{f: f, mode: mode, center: lf.center, bias: lf.bias,
								rn: n%2 == 0 && f.out() != formatF32 && mode != unweighted, residual: residual,
								inv: n%3 != 0, mean: lf.center && n%3 != 1, inPlace: n%4 == 0 && f.in() == f.out(),
								gap: [3]int{0, 0, 3}[n%3], wclass: classNormal, bclass: classNormal, resClass: classNormal}
							lc.dgap = [3]int{0, 5, 0}[(n/3)%3]
							if lc.inPlace {
								lc.dgap = lc.gap
							}
							x, res, w, b := layerInputs(seedFor(d, n, 33), lc, d, rows, classNormal)
							for i := range x {
								x[i] += 2 // a mean to subtract
							}
							off := (d + n) % 16
							var got, want layerOut
							withStreaming(true, func() {
								want = runLayer(t, kernelGeneric, lc, d, rows, x, res, w, b, 1e-5, off)
								got = runLayer(t, k, lc, d, rows, x, res, w, b, 1e-5, off)
							})
							sameOut(t, fmt.Sprintf("%s %s d=%d streaming", k, lc, d), got, want)
						}
					}
				}
			}
		}
	}
}

// A row of -0 sums to +0 in the contract (its partials start at +0), so its mean is +0 and each
// centered value -0 - +0 = -0: a kernel that took the first elements for the partials instead
// of adding them to +0 would get the mean -0 and outputs +0. Rows of +0 and of mixed zeros too,
// at lengths that fill the partials once, several times and in part.
func TestLayerNormZeroRows(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	for _, k := range simdKernels() {
		for _, d := range []int{5, 64, 100, 128, 300} {
			for zi, z := range []func(i int) float32{
				func(int) float32 { return negZero },
				func(int) float32 { return 0 },
				func(i int) float32 { return [2]float32{0, negZero}[i%2] },
			} {
				for _, f := range layerFormats {
					for _, mode := range []weightMode{weighted, unweighted} {
						// Two rows go one at a time; five, on AVX2, as a group of four and one.
						for _, rows := range []int{2, 5} {
							lc := lcase{f: f, mode: mode, center: true, inv: true, mean: true,
								wclass: classNormal, bclass: classNormal, resClass: classNormal}
							x, res, w, b := layerInputs(seedFor(d, zi, 34), lc, d, rows, classNormal)
							for i := range x {
								x[i] = z(i)
							}
							want := runLayer(t, kernelGeneric, lc, d, rows, x, res, w, b, 1e-5, d%16)
							got := runLayer(t, k, lc, d, rows, x, res, w, b, 1e-5, d%16)
							sameOut(t, fmt.Sprintf("%s %s d=%d rows=%d zeros %d", k, lc, d, rows, zi), got, want)
						}
					}
				}
			}
		}
	}
}
