package rmsnorm

import (
	"fmt"
	"math"
	"testing"
)

// oneRowDims are the row lengths of TestOneRowMatchesGeneric: every multiple of 64 up to 1024,
// powers of two and not (the AVX-512 one-row path multiplies by 1/d for the first and divides by d
// for the others), and the model widths above it; and lengths that are not multiples of 64, which
// the one-row path leaves to the general one.
var oneRowDims = []int{
	64, 128, 192, 256, 320, 384, 448, 512, 576, 640, 704, 768, 832, 896, 960, 1024,
	1536, 2048, 2560, 3072, 3584, 4096, 5120, 8192,
	1, 63, 65, 100, 1000,
}

// TestOneRowMatchesGeneric runs single rows, the calls the AVX-512 float32 function takes on its
// one-row path (kernel.go's oneRow) when nothing else is asked: each kernel against generic, bit
// for bit, on rows of every value class (those whose t leaves [2^-100, MaxFloat32] return to Go
// for the float64 path), with Inv, and as row r of a job of three rows, from = r, to = r+1, as
// Workers and the float64 path's restart call it. The matrix tests cover the other forms.
func TestOneRowMatchesGeneric(t *testing.T) {
	const rows = 3
	for _, k := range testKernels() {
		if k == kernelGeneric {
			continue
		}
		for _, d := range oneRowDims {
			for ci, c := range valueClasses {
				for seed := range 6 {
					r := seedFor(d, ci, seed, 61)
					x := make([]float32, rows*d)
					fill(x, c, r)
					w := make([]float32, d)
					fill(w, classNormal, r)
					eps := []float32{0, 1e-6, 1e-5}[seed%3]
					name := fmt.Sprintf("%s/d=%d/%s/seed=%d", k.name(), d, c.name, seed)

					// One row through Forward's path.
					got, want := make([]float32, d), make([]float32, d)
					forwardWith(k, got, x[:d], w, eps)
					forwardWith(kernelGeneric, want, x[:d], w, eps)
					if i := firstDiff(got, want); i >= 0 {
						t.Fatalf("%s: Forward: y[%d] = %v (%#08x), generic %v (%#08x)", name, i, got[i], bitsOf(got[i]), want[i], bitsOf(want[i]))
					}

					// Row r of three, alone, with Inv.
					for from := range rows {
						g, wnt := oneRowOf(k, x, w, d, rows, from, eps), oneRowOf(kernelGeneric, x, w, d, rows, from, eps)
						if i := firstDiff(g, wnt); i >= 0 {
							t.Fatalf("%s: row %d of %d: element %d = %v (%#08x), generic %v (%#08x) (the last is inv)",
								name, from, rows, i, g[i], bitsOf(g[i]), wnt[i], bitsOf(wnt[i]))
						}
					}
				}
			}
		}
	}
}

// oneRowOf runs kernel k on row from of the rows x (rows rows of d) alone, as a job of all of
// them whose call covers [from, from+1), and returns that row of dst followed by inv[from]. The
// rows of dst and inv the call must not touch hold NaN; oneRowOf panics if one changed.
func oneRowOf(k kernelID, x, w []float32, d, rows, from int, eps float32) []float32 {
	dst, inv := make([]float32, len(x)), make([]float32, rows)
	for i := range dst {
		dst[i] = float32(math.NaN())
	}
	for i := range inv {
		inv[i] = float32(math.NaN())
	}
	v := forwardVariant[formatF32][weighted][0]
	var j job
	j.init(ptr(dst), ptr(x), ptr(w), d, d, d, eps, 0, uint32(k)*numEntries+uint32(v), weighted, formatF32, v, nil, ptr(inv), nil, nil, rows)
	if r := callKernel(&j, from, from+1); r < from+1 {
		j.finish(r, from+1)
	}
	for r := range rows {
		if r == from {
			continue
		}
		for i, y := range dst[r*d : (r+1)*d] {
			if y == y {
				panic(fmt.Sprintf("the call on row %d wrote row %d, element %d", from, r, i))
			}
		}
		if inv[r] == inv[r] {
			panic(fmt.Sprintf("the call on row %d wrote inv[%d]", from, r))
		}
	}
	return append(dst[from*d:(from+1)*d:(from+1)*d], inv[from])
}
