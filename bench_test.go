package rmsnorm

import (
	"fmt"
	"testing"
)

// Benchmarks: BenchmarkForward/<kernel>/<rows>x<d> for every available kernel, and
// BenchmarkCopy/<rows>x<d> moving the same bytes, so that one run gives the ratio to copy().
// SetBytes counts x read plus y written. What users would write instead (the notes' loop, vek,
// gonum, simd/archsimd) is in the bench/peers module.

type shape struct{ rows, d int }

func (s shape) String() string { return fmt.Sprintf("%dx%d", s.rows, s.d) }

var benchShapes = []shape{{1, 128}, {1, 1024}, {1, 4096}, {1, 16384}, {32768, 128}, {2048, 4096}}

// benchData returns x and w for a shape, reused across kernels.
func benchData(s shape) (x, w []float32) {
	r := seedFor(s.rows, s.d)
	x = make([]float32, s.rows*s.d)
	fill(x, valueClasses[0], r)
	w = make([]float32, s.d)
	fill(w, valueClasses[0], r)
	return x, w
}

func BenchmarkForward(b *testing.B) {
	for _, k := range available {
		b.Run(k.String(), func(b *testing.B) {
			for _, s := range benchShapes {
				x, w := benchData(s)
				y := make([]float32, len(x))
				b.Run(s.String(), func(b *testing.B) {
					b.SetBytes(int64(8 * len(x)))
					b.ReportAllocs()
					for b.Loop() {
						j := job{dst: y, x: x, w: w, d: s.d, eps: 1e-6, mode: weighted}
						j.checkForward()
						j.runWith(k)
					}
				})
			}
		})
	}
}

// BenchmarkForwardPublic measures the exported entry point with the active kernel, dispatch
// included.
func BenchmarkForwardPublic(b *testing.B) {
	for _, s := range benchShapes {
		x, w := benchData(s)
		y := make([]float32, len(x))
		b.Run(s.String(), func(b *testing.B) {
			b.SetBytes(int64(8 * len(x)))
			b.ReportAllocs()
			for b.Loop() {
				Forward(y, x, w, 1e-6)
			}
		})
	}
}

func BenchmarkCopy(b *testing.B) {
	for _, s := range benchShapes {
		x, _ := benchData(s)
		y := make([]float32, len(x))
		b.Run(s.String(), func(b *testing.B) {
			b.SetBytes(int64(8 * len(x)))
			for b.Loop() {
				copy(y, x)
			}
		})
	}
}

// BenchmarkResidual compares the fused residual add (one pass: h = x + res, res = h,
// dst = RMSNorm(h)) with the same work done as a separate add loop followed by Forward. Bytes
// count x and res read plus res and dst written.
func BenchmarkResidual(b *testing.B) {
	for _, s := range []shape{{1, 4096}, {2048, 4096}} {
		x, w := benchData(s)
		res := make([]float32, len(x))
		copy(res, x)
		y := make([]float32, len(x))
		n := Norm{Weight: w, Eps: 1e-6}
		b.Run("fused/"+s.String(), func(b *testing.B) {
			b.SetBytes(int64(16 * len(x)))
			b.ReportAllocs()
			for b.Loop() {
				n.Apply(Rows{Dst: y, X: x, Residual: res})
			}
		})
		b.Run("separate/"+s.String(), func(b *testing.B) {
			b.SetBytes(int64(16 * len(x)))
			for b.Loop() {
				for i, v := range x {
					res[i] += v
				}
				Forward(y, res, w, 1e-6)
			}
		})
	}
}

// BenchmarkQKNorm normalizes 2048 tokens x 16 heads of 128 inside a fused QKV buffer (16 q, 8 k
// and 8 v heads per token, so rows are 4096 floats apart) one head at a time, against the same
// 32768 rows of 128 stored back to back.
func BenchmarkQKNorm(b *testing.B) {
	const tokens, heads, headDim, width = 2048, 16, 128, 32 * 128
	qkv := make([]float32, tokens*width)
	fill(qkv, valueClasses[0], seedFor(tokens, width))
	w := make([]float32, headDim)
	fill(w, valueClasses[0], seedFor(headDim))
	n := Norm{Weight: w, Eps: 1e-6}
	b.Run("strided/32768x128", func(b *testing.B) {
		b.SetBytes(int64(8 * tokens * heads * headDim))
		b.ReportAllocs()
		for b.Loop() {
			for h := 0; h < heads; h++ {
				q := qkv[h*headDim:]
				n.Apply(Rows{Dst: q, X: q, N: tokens, Stride: width})
			}
		}
	})
	// The same rows token by token: a token's q heads are contiguous, so each call is 16 rows
	// back to back.
	b.Run("pertoken/32768x128", func(b *testing.B) {
		b.SetBytes(int64(8 * tokens * heads * headDim))
		b.ReportAllocs()
		for b.Loop() {
			for t := 0; t < tokens; t++ {
				q := qkv[t*width : t*width+heads*headDim]
				n.Forward(q, q)
			}
		}
	})
	// copy() of the q regions token by token: what the memory system gives for this layout.
	out := make([]float32, tokens*width)
	b.Run("copy-pertoken/32768x128", func(b *testing.B) {
		b.SetBytes(int64(8 * tokens * heads * headDim))
		for b.Loop() {
			for t := 0; t < tokens; t++ {
				copy(out[t*width:t*width+heads*headDim], qkv[t*width:t*width+heads*headDim])
			}
		}
	})
	flat := make([]float32, tokens*heads*headDim)
	copy(flat, qkv)
	b.Run("contiguous/32768x128", func(b *testing.B) {
		b.SetBytes(int64(8 * len(flat)))
		b.ReportAllocs()
		for b.Loop() {
			n.Forward(flat, flat)
		}
	})
	flat2 := make([]float32, len(flat))
	b.Run("copy-contiguous/32768x128", func(b *testing.B) {
		b.SetBytes(int64(8 * len(flat)))
		for b.Loop() {
			copy(flat2, flat)
		}
	})
}
