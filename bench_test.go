package rmsnorm

import (
	"fmt"
	"math"
	"testing"
)

// Benchmarks: BenchmarkForward/<kernel>/<rows>x<d> for every available kernel, and
// BenchmarkCopy/<rows>x<d> moving the same bytes, so that one run gives the ratio to copy().
// SetBytes counts x read plus y written.

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

// seedForward is the algorithm of the RMSNorm notes written plainly: one accumulator, then a
// divide per element. It is the baseline the generic kernel is measured against.
func seedForward(dst, x, w []float32, eps float32) {
	d := len(w)
	for r := 0; r < len(x)/d; r++ {
		row, out := x[r*d:(r+1)*d], dst[r*d:(r+1)*d]
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

func BenchmarkSeed(b *testing.B) {
	for _, s := range benchShapes {
		x, w := benchData(s)
		y := make([]float32, len(x))
		b.Run(s.String(), func(b *testing.B) {
			b.SetBytes(int64(8 * len(x)))
			for b.Loop() {
				seedForward(y, x, w, 1e-6)
			}
		})
	}
}
