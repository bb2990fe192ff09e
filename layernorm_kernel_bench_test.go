package rmsnorm

import (
	"testing"

	"github.com/gosimd/rmsnorm/internal/benchutil"
)

// BenchmarkLayerNormKernel/<kernel>/<shape>/<norm> puts RMSNorm and LayerNorm side by side on each
// kernel: Norm.Forward with the same weight, rmsnorm without Center, layernorm with Center and a
// bias (BERT's), on float32 rows and on bfloat16 rows (bf16 suffix). The pairs run one after the
// other, so that -count interleaves them.
func BenchmarkLayerNormKernel(b *testing.B) {
	shapes := benchutil.Must("1x1024,1x4096,2048x4096")
	for _, k := range available {
		b.Run(k.name(), func(b *testing.B) {
			for _, s := range shapes {
				x, w := benchData(s)
				bias := make([]float32, s.D)
				fill(bias, normal, seedFor(s.D, 36))
				y := make([]float32, len(x))
				copy(y, x)
				x16, y16 := make([]uint16, len(x)), make([]uint16, len(x))
				for i, v := range x {
					x16[i] = formatBF16.narrow(v)
				}
				copy(y16, x16)
				b.Run(s.String(), func(b *testing.B) {
					for _, nc := range []struct {
						name string
						n    Norm
					}{
						{"rmsnorm", Norm{Weight: w, Eps: 1e-6}},
						{"layernorm", Norm{Weight: w, Bias: bias, Center: true, Eps: 1e-12}},
					} {
						b.Run(nc.name, func(b *testing.B) {
							withKernel(b, k)
							b.SetBytes(int64(8 * len(x)))
							for b.Loop() {
								nc.n.Forward(y, x)
							}
						})
						b.Run(nc.name+"bf16", func(b *testing.B) {
							withKernel(b, k)
							b.SetBytes(int64(4 * len(x)))
							for b.Loop() {
								nc.n.ForwardBF16(y16, x16)
							}
						})
					}
				})
			}
		})
	}
}
