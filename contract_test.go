package rmsnorm

import (
	"fmt"
	"math"
	"testing"
)

// The numeric contract (package documentation) across kernels: every kernel under test gives the
// generic kernel's bits for every input, writes nothing outside dst and leaves its inputs alone;
// special values give what the contract says; a row on the float64 path is handed over and the
// kernel resumes after it; a row's bits depend on the row alone.

// checkPlacements runs kernel k with x at each of the start offsets (w and dst at offsets derived
// from it), out of place and in place, inside guards, and compares with want.
func checkPlacements(t *testing.T, ctx string, k kernelID, x, w []float32, eps float32, want []float32, offsets []int) {
	t.Helper()
	for _, off := range offsets {
		xo, wo, do := off, (off*5+3)%16, (off*7+1)%16
		gx := newGuarded[float32]("x", len(x), xo)
		copy(gx.s, x)
		gw := newGuarded[float32]("w", len(w), wo)
		copy(gw.s, w)
		gd := newGuarded[float32]("dst", len(x), do)
		// Odd offsets stream out of place and store normally in place; even ones the reverse.
		nt := off%2 == 1
		withStreaming(nt, func() { forwardWith(k, gd.s, gx.s, gw.s, eps) })
		c := fmt.Sprintf("%s offsets x=%d w=%d dst=%d stream=%v", ctx, xo, wo, do, nt)
		if i := firstDiff(gd.s, want); i >= 0 {
			t.Fatalf("%s: y[%d] = %v (%#08x), generic gives %v (%#08x)", c, i,
				gd.s[i], math.Float32bits(gd.s[i]), want[i], math.Float32bits(want[i]))
		}
		if i := firstDiff(gx.s, x); i >= 0 {
			t.Fatalf("%s: x[%d] changed", c, i)
		}
		if i := firstDiff(gw.s, w); i >= 0 {
			t.Fatalf("%s: w[%d] changed", c, i)
		}
		gx.check(t, c)
		gw.check(t, c)
		gd.check(t, c)

		// In place: dst is x.
		copy(gx.s, x)
		withStreaming(!nt, func() { forwardWith(k, gx.s, gx.s, gw.s, eps) })
		c = fmt.Sprintf("%s in place offsets x=%d w=%d stream=%v", ctx, xo, wo, !nt)
		if i := firstDiff(gx.s, want); i >= 0 {
			t.Fatalf("%s: y[%d] = %v, generic gives %v", c, i, gx.s[i], want[i])
		}
		gx.check(t, c)
		gw.check(t, c)
	}
}

// The special values of the contract on every kernel under test (generic included, so on every
// platform and under purego): a zero row, a NaN, an Inf, a signed zero.
func TestSpecialValues(t *testing.T) {
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	negz := float32(math.Copysign(0, -1))
	for _, k := range testKernels() {
		t.Run(k.String(), func(t *testing.T) {
			for _, d := range []int{1, 2, 3, 7, 63, 64, 65, 130, 1000} {
				w := make([]float32, d)
				for i := range w {
					w[i] = 1 + float32(i%5)/4
				}
				x := make([]float32, d)
				y := make([]float32, d)

				// All zero: zeros for eps > 0, NaN for eps == 0.
				forwardWith(k, y, x, w, 1e-6)
				for i, v := range y {
					if v != 0 || math.Signbit(float64(v)) {
						t.Fatalf("d=%d zero row eps=1e-6: y[%d] = %v, want +0", d, i, v)
					}
				}
				forwardWith(k, y, x, w, 0)
				for i, v := range y {
					if v == v {
						t.Fatalf("d=%d zero row eps=0: y[%d] = %v, want NaN", d, i, v)
					}
				}

				// A NaN makes the row NaN.
				for i := range x {
					x[i] = float32(i%7) - 3
				}
				x[d/2] = nan
				forwardWith(k, y, x, w, 1e-6)
				for i, v := range y {
					if v == v {
						t.Fatalf("d=%d NaN row: y[%d] = %v, want NaN", d, i, v)
					}
				}

				// An Inf gives NaN there and signed zeros elsewhere.
				for i := range x {
					x[i] = float32(i%7) - 3
				}
				x[d-1] = -inf
				forwardWith(k, y, x, w, 1e-6)
				for i, v := range y {
					if i == d-1 {
						if v == v {
							t.Fatalf("d=%d Inf row: y[%d] = %v at the Inf, want NaN", d, i, v)
						}
						continue
					}
					if v != 0 || math.Signbit(float64(v)) != math.Signbit(float64(x[i])) {
						t.Fatalf("d=%d Inf row: y[%d] = %v for x = %v, want a zero of x's sign", d, i, v, x[i])
					}
				}

				// Signed zeros keep their sign.
				for i := range x {
					x[i] = 1
				}
				x[0] = negz
				forwardWith(k, y, x, w, 1e-6)
				if y[0] != 0 || !math.Signbit(float64(y[0])) {
					t.Fatalf("d=%d: y[0] = %v for x[0] = -0, want -0", d, y[0])
				}
			}
		})
	}
}

// A row that needs the float64 path, at every position of a batch: the kernels must hand it over
// and resume after it, also when it sits inside a group of short rows.
func TestFloat64RowPositions(t *testing.T) {
	for _, k := range testKernels() {
		for _, d := range []int{1, 7, 64, 128, 300, 513} {
			for pos := 0; pos < 9; pos++ {
				r := seedFor(d, pos)
				x := make([]float32, 9*d)
				fill(x, classNormal, r)
				for i := 0; i < d; i++ {
					x[pos*d+i] *= 1e30 // the squares overflow
				}
				if pos == 4 {
					x[2*d] = float32(math.NaN()) // a second one in the same group
				}
				w := make([]float32, d)
				fill(w, classNormal, r)
				want := make([]float32, len(x))
				forwardWith(kernelGeneric, want, x, w, 1e-6)
				for _, nt := range []bool{false, true} {
					got := make([]float32, len(x))
					withStreaming(nt, func() { forwardWith(k, got, x, w, 1e-6) })
					if i := firstDiff(got, want); i >= 0 {
						t.Fatalf("%s d=%d float64 row at %d stream=%v: y[%d] = %v, generic gives %v", k, d, pos, nt, i, got[i], want[i])
					}
				}
				if v := want[pos*d]; v != v || math.IsInf(float64(v), 0) {
					t.Fatalf("d=%d: the overflowing row gave %v, want a finite value", d, v)
				}
			}
		}
	}
}

// A row's bits depend on nothing but the row, w and eps: not on the other rows of the batch, its
// position in it, the batch size, its alignment, whether it is normalized in place, whether the
// stores stream, or which kernel runs it. Every result is compared with the row normalized alone
// by the generic kernel.
func TestDeterminism(t *testing.T) {
	for _, k := range testKernels() {
		t.Run(k.String(), func(t *testing.T) {
			// A normal row at positions 0, 3 and 6 of batches of 1, 4, 5 and 9 rows whose other
			// rows cycle through the value classes, x at offsets 0, 5, 10 and 15, in place and
			// not, streaming and not.
			for _, d := range []int{1, 17, 64, 128, 129, 512, 1000, 4097} {
				row := normalRows(d, 1, 40)
				w := normalRows(d, 1, 41)
				ref := make([]float32, d)
				forwardWith(kernelGeneric, ref, row, w, 1e-5)
				for _, rows := range []int{1, 4, 5, 9} {
					for pos := 0; pos < rows; pos += 3 {
						for off := 0; off < 16; off += 5 {
							for _, inPlace := range []bool{false, true} {
								for _, stream := range []bool{false, true} {
									gx := newGuarded[float32]("x", rows*d, off)
									fill(gx.s, valueClasses[(pos+off)%len(valueClasses)], seedFor(d, rows, pos, off))
									copy(gx.s[pos*d:], row)
									dst := gx.s
									if !inPlace {
										dst = newGuarded[float32]("dst", rows*d, (off+7)%16).s
									}
									withStreaming(stream, func() { forwardWith(k, dst, gx.s, w, 1e-5) })
									if i := firstDiff(dst[pos*d:(pos+1)*d], ref); i >= 0 {
										t.Fatalf("%s d=%d rows=%d pos=%d off=%d inPlace=%v stream=%v: y[%d] differs from the row alone on generic",
											k, d, rows, pos, off, inPlace, stream, i)
									}
								}
							}
						}
					}
				}
			}

			// A wide row (on the float64 path from 64 elements on), alone and at every position
			// of batches of 2, 3 and 7 rows whose other rows come from random classes.
			for _, d := range []int{1, 5, 64, 100, 128, 1000, 4097} {
				r := seedFor(d, 77)
				w := make([]float32, d)
				fill(w, classNormal, r)
				row := make([]float32, d)
				fill(row, classWide, r)
				ref := make([]float32, d)
				forwardWith(kernelGeneric, ref, row, w, 1e-6)
				alone := make([]float32, d)
				forwardWith(k, alone, row, w, 1e-6)
				if i := firstDiff(alone, ref); i >= 0 {
					t.Fatalf("%s d=%d wide row alone: y[%d] differs from generic", k, d, i)
				}
				for _, rows := range []int{2, 3, 7} {
					for pos := 0; pos < rows; pos++ {
						x := make([]float32, rows*d)
						fill(x, valueClasses[r.IntN(len(valueClasses))], r)
						copy(x[pos*d:], row)
						y := make([]float32, len(x))
						forwardWith(k, y, x, w, 1e-6)
						if i := firstDiff(y[pos*d:(pos+1)*d], ref); i >= 0 {
							t.Fatalf("%s d=%d rows=%d pos=%d wide row: y[%d] differs from the row alone", k, d, rows, pos, i)
						}
					}
				}
			}
		})
	}
}
