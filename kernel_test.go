package rmsnorm

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gosimd/rmsnorm/internal/streamrule"
)

// The kernels-against-generic tests, and what they cover: the kernels under test (-kernels) and the core matrix (-matrix) of
// row lengths, row counts, value classes, eps and start offsets, with forEachCase to walk it.

// kernelsFlag narrows the kernels under test, for emulators too slow to run them all (Bochs runs
// only avx512). The generic kernel remains the reference either way.
var kernelsFlag = flag.String("kernels", "", "comma-separated kernels to test (default: every available kernel)")

// testKernels returns the kernels the tests run: every available one, or those -kernels names
// (as users name them). Where that is kernelAVX512BF16, kernelAVX512 follows it: the avx512
// kernel as a CPU without AVX512_BF16 runs it, so that a CPU with it tests both ways of narrowing
// to bfloat16.
func testKernels() []kernelID {
	names := Kernels()
	if *kernelsFlag != "" {
		names = strings.Split(*kernelsFlag, ",")
	}
	var ks []kernelID
	for _, name := range names {
		i := slices.IndexFunc(available, func(k kernelID) bool { return k.name() == name })
		if i < 0 {
			panic("-kernels: kernel " + name + " is not available here; available: " + strings.Join(Kernels(), ", "))
		}
		ks = append(ks, available[i])
		if available[i] == kernelAVX512BF16 {
			ks = append(ks, kernelAVX512)
		}
	}
	return ks
}

// repeats reports whether kernel k, on rows of format f, runs only functions that another kernel
// under test runs for f: kernelAVX512 beside kernelAVX512BF16, whose functions differ only where
// rows are narrowed to bfloat16 (TestAsmSharedFunctions holds the table to this). The core-matrix
// tests leave such a run out: it would repeat the other kernel's, bit for bit. The tests of
// dispatch, the pipe and the guard pages still run both.
func repeats(k kernelID, f format) bool {
	return k == kernelAVX512 && f.out() != formatBF16 && slices.Contains(testKernels(), kernelAVX512BF16)
}

// kernelsFor returns the kernels under test less those that repeat another for every format of
// fs (see repeats), and logs the ones it leaves out.
// A kernel kept for some formats of fs alone is logged too: the check skips the others.
func kernelsFor(t *testing.T, fs ...format) []kernelID {
	t.Helper()
	var ks []kernelID
	for _, k := range testKernels() {
		var left []string
		for _, f := range fs {
			if repeats(k, f) {
				left = append(left, fname(f))
			}
		}
		switch {
		case len(left) == len(fs):
			t.Logf("%s is left out: for %s rows it runs the functions of %s", k, strings.Join(left, ", "), kernelAVX512BF16)
			continue
		case len(left) > 0:
			t.Logf("%s runs without its %s rows: for those it runs the functions of %s", k, strings.Join(left, ", "), kernelAVX512BF16)
		}
		ks = append(ks, k)
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

// matrixFlag sizes the core matrix (see matrix for the exact lists):
//   - quick, the default: every tail of every vector width (row lengths 1..67), the lengths
//     around the block and group sizes up to 4097, one row and a group of four plus one, four
//     start offsets, every value class;
//   - full, the exhaustive sweep for CI: row lengths 1..300 and lengths around the block sizes up
//     to 65537, 1..5 rows, all 16 start offsets in a 64-byte line, every value class;
//   - short: full with three offsets (-short itself keeps quick, which the emulators under qemu
//     run: in an emulator the quick matrix already takes most of the time);
//   - tiny, for Bochs (hundreds of times slower than native, and the only AVX-512 this project's
//     CI has): quick's lengths without 511, 512, 4095 and 4096, two offsets, five classes.
//
// It sizes the validation sweep too (sweepPlanFor in validation_matrix_test.go).
var matrixFlag = flag.String("matrix", "", "size of the core test matrix: "+
	"quick (the default: d 1..67 and the block sizes 127..4097, rows 1 and 5, 4 offsets, all value classes), "+
	"full (d 1..300 and 511..65537, rows 1..5, 16 offsets, all classes), "+
	"short (full with 3 offsets) or "+
	"tiny (d 1..67 and 9 block sizes, rows 1 and 5, 2 offsets, 5 classes)")

// matrixSize returns the size -matrix and -short select.
func matrixSize() string {
	if *matrixFlag != "" {
		return *matrixFlag
	}
	return "quick"
}

// testMatrix is what the core-matrix tests iterate over.
type testMatrix struct {
	dims    []int // row lengths: every tail shape of every vector width, and lengths around the block sizes
	rows    []int
	offsets []int // start offsets in floats from a 64-byte boundary
	classes []valueClass
}

func matrix() testMatrix {
	size := matrixSize()
	var m testMatrix
	switch size {
	case "quick":
		// 1..67: every partial block of 64 (the tails of every vector width), one block, and one
		// block with a tail.
		for d := 1; d <= 67; d++ {
			m.dims = append(m.dims, d)
		}
		// Around two and four blocks of 64, around the longest row of a group (groupMax = 512),
		// 1023, and around 4096.
		m.dims = append(m.dims, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1023, 4095, 4096, 4097)
		m.rows = []int{1, 5}           // 5 rows: one group of four short rows, then one
		m.offsets = []int{0, 3, 8, 13} // aligned to 64 bytes, to 32, and neither
		m.classes = valueClasses
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
		m.classes = []valueClass{classNormal, classTiny, classHuge, classSubnormal, classSpecial}
	default:
		panic("-matrix must be quick, full, short or tiny, not " + size)
	}
	return m
}

// testEps are the eps the core matrix cycles through.
var testEps = []float32{1e-6, 1e-5, 0, 1e-12, 0.5}

// matrixCase is one point of the core matrix: kernel k on rows rows of d values drawn from class,
// with eps.
type matrixCase struct {
	k        kernelID
	d, rows  int
	class    valueClass
	ci       int // index of class in the matrix's classes: part of the seed and of the eps cycle
	nclasses int // how many classes the matrix has
	eps      float32
	offsets  []int // the matrix's start offsets, for the check to place its buffers at
}

// repeats reports whether the case's kernel repeats another's for rows of format f (see repeats).
func (c matrixCase) repeats(f format) bool { return repeats(c.k, f) }

// rand returns the case's random source, seedFor(d, rows, ci, salt...): a test salts it to draw
// data of its own.
func (c matrixCase) rand(salt ...int) *rand.Rand {
	return seedFor(append([]int{c.d, c.rows, c.ci}, salt...)...)
}

// weightClasses are the weights the core matrix cycles through: ordinary ones, and those whose
// bits a kernel could change where normal weights would not show it: signed zeros (a kernel that
// adds to the weight must keep -0), subnormals, and ±Inf, NaN and ±MaxFloat32.
var weightClasses = []valueClass{classNormal, classSignedZero, classSubnormal, classSpecial}

// weightClass returns the class of the case's weight: it cycles with the row length and the
// class of x, so that each variant meets each weight class.
func (c matrixCase) weightClass() valueClass {
	return weightClasses[(c.d+c.ci)%len(weightClasses)]
}

func (c matrixCase) String() string {
	return fmt.Sprintf("%s d=%d rows=%d %s eps=%g", c.k, c.d, c.rows, c.class.name, c.eps)
}

// forEachCase runs check on every point of the core matrix for every SIMD kernel under test, one
// subtest per kernel: every row length, row count and value class, each with the eps of the cycle
// testEps[(d+rows+ci)%5]. The check makes its inputs from c.rand, computes the generic kernel's
// result once, and compares kernel c.k's at the offsets (all of c.offsets, or one per sub-case).
// fs are the formats the check covers: a kernel that repeats another for all of them is left out,
// and a check that covers several skips those where c.repeats.
func forEachCase(t *testing.T, fs []format, check func(t *testing.T, c matrixCase)) {
	t.Helper()
	ks := slices.DeleteFunc(kernelsFor(t, fs...), func(k kernelID) bool { return k == kernelGeneric })
	if len(ks) == 0 {
		t.Logf("no SIMD kernel on this CPU (%v); the generic kernel is checked by the other tests", Kernels())
		return
	}
	m := matrix()
	for _, k := range ks {
		t.Run(k.String(), func(t *testing.T) {
			for _, d := range m.dims {
				for _, rows := range m.rows {
					for ci, class := range m.classes {
						check(t, matrixCase{k: k, d: d, rows: rows, class: class, ci: ci, nclasses: len(m.classes),
							eps: testEps[(d+rows+ci)%len(testEps)], offsets: m.offsets})
					}
				}
			}
		})
	}
}

// The kernels against generic: each test below runs every kernel under test on the core matrix
// and compares its output with the generic kernel's, bit for bit. The checks they call live
// beside the features they cover (contract_test.go, variants_test.go, storage16_test.go,
// backward_test.go).

// Forward on every SIMD kernel over the core matrix (above), at every start offset of
// the matrix, in place and not, streaming and not, inside guard values.
func TestKernelsMatchGeneric(t *testing.T) {
	forEachCase(t, []format{formatF32}, func(t *testing.T, c matrixCase) {
		r := c.rand()
		x := make([]float32, c.rows*c.d)
		fill(x, c.class, r)
		w := make([]float32, c.d)
		fill(w, classNormal, r)
		want := make([]float32, len(x))
		forwardWith(kernelGeneric, want, x, w, c.eps)
		checkPlacements(t, c.String(), c.k, x, w, c.eps, want, c.offsets)
	})
}

// Every combination of the variants against generic, on every buffer, guards and gaps between
// rows included.
func TestVariantsMatchGeneric(t *testing.T) {
	// Every combination on every kernel under test (generic too: its guards and gaps), at the
	// lengths around each vector width and the block sizes (28 lengths from 1 to 4097), for 1, 4
	// and 9 rows. The middle row's first element is scaled by 1e30, which sends that row to the
	// float64 path in 82 of the 84 batches (not for d = 1 with 4 rows, nor d = 5 with 9). The
	// rows are of the wide class, whose squares overflow too: from 16 elements on every row of
	// these batches takes the float64 path, and the variants' float32 path is left to the matrix
	// below.
	// batch checks every combination on kernel k for rows of d whose x is of class c (the
	// residual and the weight normal), the middle row scaled by 1e30 when scale is set.
	batch := func(t *testing.T, name string, k kernelID, c valueClass, d, rows, seed int, scale bool) {
		r := seedFor(d, rows, seed)
		x := make([]float32, rows*d)
		fill(x, c, r)
		if scale {
			x[(rows/2)*d] *= 1e30
		}
		res := make([]float32, rows*d)
		fill(res, classNormal, r)
		w := make([]float32, d)
		fill(w, classNormal, r)
		for i, vc := range allVcases() {
			checkVariant(t, name, k, vc, formatF32, d, rows, x, res, w, 1e-6, (d+i)%16)
		}
	}
	t.Run("combinations", func(t *testing.T) {
		dims := []int{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1023, 4097}
		for _, k := range kernelsFor(t, formatF32) {
			t.Run(k.String(), func(t *testing.T) {
				for _, d := range dims {
					for _, rows := range []int{1, 4, 9} {
						batch(t, "wide", k, classWide, d, rows, 9, true)
					}
				}
			})
		}
	})

	// Rows longer than groupMax, which the AVX-512 function takes four at a time with flagGroups
	// (f32Groups), both ways, on the float32 path: a group, a group and a row, and two groups
	// around a row that takes the float64 path (9 rows).
	t.Run("long groups", func(t *testing.T) {
		bothLongGroups(func() {
			for _, k := range kernelsFor(t, formatF32) {
				for _, d := range longGroupDims {
					for _, rows := range []int{4, 5, 9} {
						batch(t, "long groups", k, classNormal, d, rows, 10, rows == 9)
					}
				}
			}
		})
	})

	// The core matrix on every SIMD kernel: each combination once per row length and row count,
	// with the value class and the offset cycling through the matrix's.
	t.Run("matrix", func(t *testing.T) {
		cases := allVcases()
		forEachCase(t, []format{formatF32}, func(t *testing.T, c matrixCase) {
			r := c.rand(6)
			x := make([]float32, c.rows*c.d)
			fill(x, c.class, r)
			// The residual's class is the one listed after the ci-th in valueClasses: with
			// every class in the matrix, the one after x's.
			res := make([]float32, c.rows*c.d)
			fill(res, valueClasses[(c.ci+1)%len(valueClasses)], r)
			w := make([]float32, c.d)
			fill(w, c.weightClass(), r)
			for i, vc := range cases {
				// Case i runs with the class ci for which (i+ci)%nclasses == 0: every case once
				// per (d, rows) while the matrix has fewer classes than there are cases.
				if (i+c.ci)%c.nclasses != 0 && c.nclasses < len(cases) {
					continue
				}
				off := c.offsets[(c.d+i)%len(c.offsets)]
				checkVariant(t, c.class.name, c.k, vc, formatF32, c.d, c.rows, x, res, w, c.eps, off)
			}
		})
	})
}

// ForwardBF16 and ForwardF16 on every SIMD kernel over the core matrix, the values of each class
// rounded to the format, at every start offset, in place and not, streaming and not, inside
// guards.
func TestKernelsMatchGeneric16(t *testing.T) {
	forEachCase(t, formats16, func(t *testing.T, c matrixCase) {
		for _, f := range formats16 {
			if c.repeats(f) {
				continue
			}
			r := c.rand(16, int(f))
			x32 := make([]float32, c.rows*c.d)
			fill(x32, c.class, r)
			x := narrowAll(x32, f)
			w := make([]float32, c.d)
			fill(w, classNormal, r)
			want := make([]uint16, len(x))
			forward16With(kernelGeneric, f, want, x, w, c.eps)
			for _, off := range c.offsets {
				xo, wo, do := off, (off*5+3)%16, (off*7+1)%16
				gx, gw, gd := newGuarded[uint16]("x", len(x), xo), newGuarded[float32]("w", len(w), wo), newGuarded[uint16]("dst", len(x), do)
				copy(gx.s, x)
				copy(gw.s, w)
				nt := off%2 == 1
				ctx := fmt.Sprintf("%s %s offsets x=%d w=%d dst=%d stream=%v", c, fname(f), xo, wo, do, nt)
				withStreaming(nt, func() { forward16With(c.k, f, gd.s, gx.s, gw.s, c.eps) })
				check16(t, ctx, f, gd.s, want)
				if !slices.Equal(gx.s, x) {
					t.Fatalf("%s: x changed", ctx)
				}
				gx.check(t, ctx)
				gw.check(t, ctx)
				gd.check(t, ctx)
				withStreaming(!nt, func() { forward16With(c.k, f, gx.s, gx.s, gw.s, c.eps) })
				check16(t, ctx+" in place", f, gx.s, want)
				gx.check(t, ctx+" in place")
			}
		}
	})
}

// Every combination of the variants of ApplyBF16 and ApplyF16, RoundNormalized on and off, on
// every kernel under test, against generic, as TestVariantsMatchGeneric does for float32.
// longGroupDims are rows longer than groupMax, which the AVX-512 functions take four at a time
// with flagGroups (up to longGroupMax), and one length past that.
var longGroupDims = []int{576, 700, 768, longGroupMax, longGroupMax + 64}

// withLongGroups runs f with the AVX-512 groups of rows longer than groupMax forced on:
// avx512LongGroups, and f32Groups taking float32 rows of every call in cache.
func withLongGroups(f func()) {
	defer func(on bool, g streamrule.F32Groups) { avx512LongGroups, f32Groups = on, g }(avx512LongGroups, f32Groups)
	avx512LongGroups, f32Groups = true, streamrule.F32Groups{Bytes: math.MaxInt}
	f()
}

// bothLongGroups runs f with the AVX-512 groups of rows longer than groupMax forced on (as
// withLongGroups), then off.
func bothLongGroups(f func()) {
	withLongGroups(f)
	defer func(on bool, g streamrule.F32Groups) { avx512LongGroups, f32Groups = on, g }(avx512LongGroups, f32Groups)
	avx512LongGroups, f32Groups = false, streamrule.F32Groups{}
	f()
}

func TestVariantsMatchGeneric16(t *testing.T) {
	combinations := func(t *testing.T, dims, rowCounts []int) {
		for _, k := range kernelsFor(t, formats16...) {
			t.Run(k.String(), func(t *testing.T) {
				for _, f := range formats16 {
					if repeats(k, f) {
						continue
					}
					for _, d := range dims {
						for _, rows := range rowCounts {
							r := seedFor(d, rows, 16, int(f))
							x32 := make([]float32, rows*d)
							fill(x32, classNormal, r)
							for i := 0; i < d; i++ {
								x32[(rows/2)*d+i] *= 1e30 // the middle row takes the float64 path (bfloat16 has the range)
							}
							if f == formatF16 {
								x32[(rows/2)*d] = float32(math.Inf(1)) // binary16 has not: an Inf sends the row there
							}
							res := make([]float32, rows*d)
							fill(res, classNormal, r)
							w := make([]float32, d)
							fill(w, classNormal, r)
							x, rs := narrowAll(x32, f), narrowAll(res, f)
							for i, vc := range allVcases16() {
								checkVariant(t, "16", k, vc, f, d, rows, x, rs, w, 1e-6, (d+i)%16)
							}
						}
					}
				}
			})
		}
	}
	t.Run("combinations", func(t *testing.T) {
		combinations(t, []int{1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 511, 512, 513, 4097}, []int{1, 4, 9})
	})
	t.Run("long groups", func(t *testing.T) {
		bothLongGroups(func() { combinations(t, longGroupDims, []int{4, 9}) })
	})
	t.Run("matrix", func(t *testing.T) {
		cases := allVcases16()
		forEachCase(t, formats16, func(t *testing.T, c matrixCase) {
			for _, f := range formats16 {
				if c.repeats(f) {
					continue
				}
				r := c.rand(6, int(f))
				x32 := make([]float32, c.rows*c.d)
				fill(x32, c.class, r)
				res := make([]float32, c.rows*c.d)
				fill(res, valueClasses[(c.ci+1)%len(valueClasses)], r)
				w := make([]float32, c.d)
				fill(w, c.weightClass(), r)
				x, rs := narrowAll(x32, f), narrowAll(res, f)
				for i, vc := range cases {
					if (i+c.ci)%c.nclasses != 0 && c.nclasses < len(cases) {
						continue
					}
					off := c.offsets[(c.d+i)%len(c.offsets)]
					checkVariant(t, c.class.name, c.k, vc, f, c.d, c.rows, x, rs, w, c.eps, off)
				}
			}
		})
	})
}

// formatsTo16 are the formats of float32 rows normalized into 16-bit ones: ApplyToBF16 and
// ApplyToF16.
var formatsTo16 = []format{formatToBF16, formatToF16}

// Every combination of the variants of ApplyToBF16 and ApplyToF16 (weight forms, residual, Inv,
// strides, DstStride, RoundNormalized) on every kernel under test, against generic, as
// TestVariantsMatchGeneric16 does for 16-bit rows.
func TestVariantsMatchGenericTo16(t *testing.T) {
	combinations := func(t *testing.T, dims, rowCounts []int) {
		for _, k := range kernelsFor(t, formatsTo16...) {
			t.Run(k.String(), func(t *testing.T) {
				for _, f := range formatsTo16 {
					if repeats(k, f) {
						continue
					}
					for _, d := range dims {
						for _, rows := range rowCounts {
							r := seedFor(d, rows, 17, int(f))
							x := make([]float32, rows*d)
							fill(x, classNormal, r)
							for i := 0; i < d; i++ {
								x[(rows/2)*d+i] *= 1e30 // the middle row takes the float64 path
							}
							if rows > 1 {
								x[d-1] = float32(math.Inf(-1)) // and so does the first, with an Inf
							}
							res := make([]float32, rows*d)
							fill(res, classNormal, r)
							w := make([]float32, d)
							fill(w, classNormal, r)
							for i, vc := range allVcasesTo16() {
								checkVariantTo16(t, "to16", k, vc, f, d, rows, x, res, w, 1e-6, (d+i)%16)
							}
						}
					}
				}
			})
		}
	}
	t.Run("combinations", func(t *testing.T) {
		combinations(t, []int{1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 511, 512, 513, 4097}, []int{1, 4, 9})
	})
	t.Run("long groups", func(t *testing.T) {
		bothLongGroups(func() { combinations(t, longGroupDims, []int{4, 9}) })
	})
	t.Run("matrix", func(t *testing.T) {
		cases := allVcasesTo16()
		forEachCase(t, formatsTo16, func(t *testing.T, c matrixCase) {
			for _, f := range formatsTo16 {
				if c.repeats(f) {
					continue
				}
				r := c.rand(7, int(f))
				x := make([]float32, c.rows*c.d)
				fill(x, c.class, r)
				res := make([]float32, c.rows*c.d)
				fill(res, valueClasses[(c.ci+1)%len(valueClasses)], r)
				w := make([]float32, c.d)
				fill(w, c.weightClass(), r)
				for i, vc := range cases {
					if (i+c.ci)%c.nclasses != 0 && c.nclasses < len(cases) {
						continue
					}
					off := c.offsets[(c.d+i)%len(c.offsets)]
					checkVariantTo16(t, c.class.name, c.k, vc, f, c.d, c.rows, x, res, w, c.eps, off)
				}
			}
		})
	})
}

func TestBackwardKernelsMatchGeneric(t *testing.T) {
	splitAll(t)
	forEachCase(t, []format{formatF32}, func(t *testing.T, c matrixCase) {
		r := c.rand(71)
		for ci := range 6 {
			bc := backwardCase{
				mode:    weightMode(ci % 3),
				withInv: ci%2 == 0,
				withDW:  ci%3 != 2 && ci != 3, // case 3: a weight without DW, its own loop in a kernel
				inPlace: ci >= 3,
			}
			if c.rows > 1 && ci%2 == 1 {
				bc.stride = c.d + 1 + ci
			}
			if c.rows > 2 && ci == 4 {
				// Two workers on rows of one block (the matrix has at most 5 rows): workersFor keeps
				// the call on one goroutine. Block mode, each block in its slot, is TestBackwardBlocks'.
				bc.workers = 2
			}
			off := c.offsets[(ci+c.d)%len(c.offsets)]
			checkBackward(t, c, bc, off, r.Uint64())
		}
	})
}
