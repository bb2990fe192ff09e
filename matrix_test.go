package rmsnorm

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// What the kernel tests cover: the kernels under test (-kernels) and the core matrix (-matrix) of
// row lengths, row counts, value classes, eps and start offsets, with forEachCase to walk it.

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
func forEachCase(t *testing.T, check func(t *testing.T, c matrixCase)) {
	ks := simdKernels()
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
