// Package peers holds what a Go user would write instead of the rmsnorm package, so that the
// benchmarks can put them side by side: the textbook loop in plain Go (one accumulator, a divide
// per element), the composition of vector routines from github.com/viterin/vek and from gonum's
// blas32, and (with GOEXPERIMENT=simd on amd64) a kernel written with simd/archsimd. It is a
// module of its own, so that none of these dependencies reaches the users of rmsnorm.
//
// Every peer computes y = x / sqrt(mean(x^2) + eps) * w row by row; they round differently from
// the rmsnorm contract, and peers_test.go checks that they agree with it to float32 accuracy.
//
// The LayerNorm peers (LayerNorms) are the textbook loop and the LayerNorm layer of spago, a Go
// machine-learning library; peers_test.go checks them against a Norm with Center, Weight and Bias.
package peers

import (
	"math"

	"github.com/viterin/vek/vek32"
	"gonum.org/v1/gonum/blas/blas32"
)

// Func normalizes the rows of x (each len(w) long) into dst.
type Func func(dst, x, w []float32, eps float32)

// Peer is one implementation under comparison.
type Peer struct {
	Name string
	Fn   Func
}

// All returns the peers available in this build: archsimd only with GOEXPERIMENT=simd on amd64.
func All() []Peer {
	ps := []Peer{{"textbook", Textbook}, {"vek", Vek}, {"gonum", Gonum}}
	if archsimdPeer != nil {
		ps = append(ps, Peer{"archsimd", archsimdPeer})
	}
	return ps
}

// Textbook is RMSNorm as textbooks write it, in plain Go: one float32 accumulator for the sum
// of squares, then a divide by the rms and a multiply by the weight per element.
func Textbook(dst, x, w []float32, eps float32) {
	d := len(w)
	for r := 0; r+d <= len(x); r += d {
		row, out := x[r:r+d], dst[r:r+d]
		var ms float32
		for _, v := range row {
			ms += v * v
		}
		ms /= float32(d)
		rms := float32(math.Sqrt(float64(ms + eps)))
		for i, v := range row {
			out[i] = v / rms * w[i]
		}
	}
}

// Vek composes vek's SIMD routines: the sum of squares as a dot product of the row with itself,
// a scale by 1/rms, and an element-wise product with w.
func Vek(dst, x, w []float32, eps float32) {
	d := len(w)
	for r := 0; r+d <= len(x); r += d {
		row, out := x[r:r+d], dst[r:r+d]
		inv := 1 / float32(math.Sqrt(float64(vek32.Dot(row, row)/float32(d)+eps)))
		vek32.MulNumber_Into(out, row, inv)
		vek32.Mul_Inplace(out, w)
	}
}

// Gonum uses blas32: Dot for the sum of squares, Scal for the scale (in place, on a copy of the
// row), and a plain loop for the weight, which BLAS has no routine for.
func Gonum(dst, x, w []float32, eps float32) {
	d := len(w)
	for r := 0; r+d <= len(x); r += d {
		row, out := x[r:r+d], dst[r:r+d]
		v := blas32.Vector{N: d, Inc: 1, Data: row}
		inv := 1 / float32(math.Sqrt(float64(blas32.Dot(v, v)/float32(d)+eps)))
		copy(out, row)
		blas32.Scal(inv, blas32.Vector{N: d, Inc: 1, Data: out})
		for i := range out {
			out[i] *= w[i]
		}
	}
}
