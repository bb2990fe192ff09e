package rmsnorm

import (
	"flag"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// Every available kernel must give the generic kernel's bits for every input, write nothing
// outside dst and leave its inputs alone.

// forwardWith is Forward with an explicit kernel instead of the active one.
func forwardWith(k kernelID, dst, x, w []float32, eps float32) {
	forwardRows(&forwardNames, dst, x, w, eps, vWeighted, k)
}

// applyWith is n.Apply(*r) with an explicit kernel instead of the active one.
func applyWith(k kernelID, n *Norm, r *Rows) {
	applyRows(n, &applyNames, r.Dst, r.X, r.Residual, r.Inv, r.N, r.Stride, k)
}

// kernelsFlag narrows the kernels under test, for emulators too slow to run them all (Bochs runs
// only avx512). The generic kernel remains the reference either way.
var kernelsFlag = flag.String("kernels", "", "comma-separated kernels to test (default: every available kernel)")

// testKernels returns the kernels the tests run: every available one, or those -kernels names.
func testKernels() []kernelID {
	if *kernelsFlag == "" {
		return available
	}
	var ks []kernelID
	for _, name := range strings.Split(*kernelsFlag, ",") {
		i := slices.IndexFunc(available, func(k kernelID) bool { return k.String() == name })
		if i < 0 {
			panic("-kernels: kernel " + name + " is not available here; available: " + strings.Join(Kernels(), ", "))
		}
		ks = append(ks, available[i])
	}
	return ks
}

// simdKernels returns the kernels under test other than generic.
func simdKernels() []kernelID {
	var ks []kernelID
	for _, k := range testKernels() {
		if k != kernelGeneric {
			ks = append(ks, k)
		}
	}
	return ks
}

// matrixFlag sizes the kernel test matrix. Emulators run the suite too: qemu with -short, and
// Bochs (the only AVX-512 this project's CI has, about 500 times slower than native) with tiny.
var matrixFlag = flag.String("matrix", "", "size of the kernel test matrix: full, short or tiny (default: full, or short with -short)")

// testMatrix is what the kernel tests iterate over.
type testMatrix struct {
	dims    []int // row lengths: every tail shape of every vector width, and lengths around the block sizes
	rows    []int
	offsets []int // start offsets in floats from a 64-byte boundary
	classes []valueClass
}

func matrix() testMatrix {
	size := *matrixFlag
	if size == "" {
		size = "full"
		if testing.Short() {
			size = "short"
		}
	}
	var m testMatrix
	switch size {
	case "full", "short":
		for d := 1; d <= 300; d++ {
			m.dims = append(m.dims, d)
		}
		m.dims = append(m.dims, 511, 512, 513, 1023, 4095, 4096, 4097, 5120, 8192, 16384, 65537)
		m.rows = []int{1, 2, 3, 4, 5}
		m.classes = valueClasses
		m.offsets = []int{0, 3, 13}
		if size == "full" {
			m.offsets = []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
		}
	case "tiny":
		for d := 1; d <= 67; d++ {
			m.dims = append(m.dims, d)
		}
		m.dims = append(m.dims, 127, 128, 129, 255, 256, 257, 513, 1023, 4097)
		m.rows = []int{1, 5} // 5 rows: one group of four short rows, then one
		m.offsets = []int{0, 13}
		for _, c := range valueClasses {
			switch c.name {
			case "normal", "tiny", "huge", "subnormal", "special":
				m.classes = append(m.classes, c)
			}
		}
	default:
		panic("-matrix must be full, short or tiny, not " + size)
	}
	return m
}

var testEps = []float32{1e-6, 1e-5, 0, 1e-12, 0.5}

func TestKernelsMatchGeneric(t *testing.T) {
	ks := simdKernels()
	if len(ks) == 0 {
		t.Logf("no SIMD kernel on this CPU (%v); the generic kernel is checked by the other tests", Kernels())
		return
	}
	for _, k := range ks {
		t.Run(k.String(), func(t *testing.T) {
			m := matrix()
			for _, d := range m.dims {
				for _, rows := range m.rows {
					for ci, c := range m.classes {
						r := seedFor(d, rows, ci)
						x := make([]float32, rows*d)
						fill(x, c, r)
						w := make([]float32, d)
						fill(w, valueClasses[0], r)
						eps := testEps[(d+rows+ci)%len(testEps)]
						want := make([]float32, len(x))
						forwardWith(kernelGeneric, want, x, w, eps)
						ctx := fmt.Sprintf("%s d=%d rows=%d %s eps=%g", k, d, rows, c.name, eps)
						checkPlacements(t, ctx, k, x, w, eps, want)
					}
				}
			}
		})
	}
}

// checkPlacements runs kernel k at every start offset, out of place and in place, inside guards,
// and compares with want.
func checkPlacements(t *testing.T, ctx string, k kernelID, x, w []float32, eps float32, want []float32) {
	t.Helper()
	for _, off := range matrix().offsets {
		xo, wo, do := off, (off*5+3)%16, (off*7+1)%16
		gx := newGuarded("x", len(x), xo)
		copy(gx.s, x)
		gw := newGuarded("w", len(w), wo)
		copy(gw.s, w)
		gd := newGuarded("dst", len(x), do)
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

// A row that needs the float64 path, at every position of a batch: the kernels must hand it over
// and resume after it, also when it sits inside a group of short rows.
func TestFloat64RowPositions(t *testing.T) {
	for _, k := range testKernels() {
		for _, d := range []int{1, 7, 64, 128, 300, 513} {
			for pos := 0; pos < 9; pos++ {
				r := seedFor(d, pos)
				x := make([]float32, 9*d)
				fill(x, valueClasses[0], r)
				for i := 0; i < d; i++ {
					x[pos*d+i] *= 1e30 // the squares overflow
				}
				if pos == 4 {
					x[2*d] = float32(math.NaN()) // a second one in the same group
				}
				w := make([]float32, d)
				fill(w, valueClasses[0], r)
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

// The generic kernel's guarantees, checked on every platform (and so under purego).
func TestGenericSpecialValues(t *testing.T) {
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

// A row's result does not depend on the other rows of the batch or its position in it.
func TestRowIndependence(t *testing.T) {
	for _, k := range testKernels() {
		t.Run(k.String(), func(t *testing.T) {
			for _, d := range []int{1, 5, 64, 100, 128, 1000, 4097} {
				r := seedFor(d, 77)
				w := make([]float32, d)
				fill(w, valueClasses[0], r)
				row := make([]float32, d)
				fill(row, valueClasses[5], r)
				alone := make([]float32, d)
				forwardWith(k, alone, row, w, 1e-6)
				for _, rows := range []int{2, 3, 7} {
					for pos := 0; pos < rows; pos++ {
						x := make([]float32, rows*d)
						fill(x, valueClasses[r.IntN(len(valueClasses))], r)
						copy(x[pos*d:], row)
						y := make([]float32, len(x))
						forwardWith(k, y, x, w, 1e-6)
						if i := firstDiff(y[pos*d:(pos+1)*d], alone); i >= 0 {
							t.Fatalf("d=%d rows=%d pos=%d: y[%d] differs from the row computed alone", d, rows, pos, i)
						}
					}
				}
			}
		})
	}
}

// callGeneric runs the benchmark loop on the generic kernel's entry.
func callGeneric(b *testing.B, k kernelID, j *job) {
	if k != kernelGeneric {
		b.Fatalf("no direct call for kernel %s, variant %d", k, j.v)
	}
	for b.Loop() {
		runGeneric(j, 0, j.rows)
	}
}
