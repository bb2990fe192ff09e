package rmsnorm

import (
	"slices"
	"testing"

	"github.com/gosimd/rmsnorm/internal/benchutil"
)

// BenchmarkLayerNorm/kernel=K/form=F/shape=S/norm=N puts LayerNorm (a Norm with Center, Weight
// and Bias, BERT's eps 1e-12) beside RMSNorm (a Norm with Weight) on the same rows, kernel and
// call, so that `benchstat -col /norm` gives LayerNorm's time over RMSNorm's: the claim that
// RMSNorm is the cheaper of the two, measured per kernel. It times whatever each kernel runs for
// a LayerNorm, so it keeps measuring as kernels gain their own LayerNorm code.
//
// form f32 is Norm.Apply on float32 rows, at the shapes of layerNormShapes; bf16 (Norm.ApplyBF16)
// and f32Add (Norm.Apply with Rows.Residual, the post-norm block of BERT) run at 2048x4096 only.
// SetBytes counts x read and y written, and the residual read and written with f32Add: the two
// norms of a line move the same bytes, so their MB/s compare.
func BenchmarkLayerNorm(b *testing.B) {
	forms := []struct {
		name   string
		shapes []benchutil.Shape
	}{
		{"f32", layerNormShapes},
		{"bf16", benchutil.Must("2048x4096")},
		{"f32Add", benchutil.Must("2048x4096")},
	}
	for _, k := range available {
		b.Run("kernel="+k.name(), func(b *testing.B) {
			for _, f := range forms {
				b.Run("form="+f.name, func(b *testing.B) {
					for _, s := range f.shapes {
						// The rows are made here, inside the shape's run, so that a -bench
						// pattern that leaves the shape out does not build its 512 MiB.
						b.Run("shape="+s.String(), func(b *testing.B) { benchLayerNormShape(b, k, f.name, s) })
					}
				})
			}
		})
	}
}

// layerNormShapes are the shapes of BenchmarkLayerNorm's f32 form: single rows in cache, per-head
// q/k rows, a batch larger than the cache and one far larger (benchutil.Large).
var layerNormShapes = benchutil.Must("1x1024,1x4096,32768x128,2048x4096," + benchutil.Large)

// benchLayerNormShape runs RMSNorm then LayerNorm in form on the rows of shape s with kernel k.
func benchLayerNormShape(b *testing.B, k kernelID, form string, s benchutil.Shape) {
	x, w := benchData(s)
	bias := make([]float32, s.D)
	fill(bias, normal, seedFor(s.D, 2))
	norms := []struct {
		name string
		n    Norm
	}{
		{"RMSNorm", Norm{Weight: w, Eps: 1e-6}},
		{"LayerNorm", Norm{Weight: w, Bias: bias, Center: true, Eps: 1e-12}},
	}
	y := slices.Clone(x) // the output's pages exist before anything is timed
	bytes := 8 * len(x)
	var res []float32
	var x16, y16 []uint16
	switch form {
	case "f32Add":
		res = slices.Clone(x)
		bytes *= 2
	case "bf16":
		x16 = narrowAll(x, formatBF16)
		y16 = slices.Clone(x16)
		bytes /= 2
	}
	for _, nn := range norms {
		n := nn.n
		call := func() { n.Apply(Rows{Dst: y, X: x}) }
		switch form {
		case "f32Add":
			// Each call adds x into res again: its values grow linearly with the calls, far
			// from float32's limits, which changes neither norm's path nor its time.
			call = func() { n.Apply(Rows{Dst: y, X: x, Residual: res}) }
		case "bf16":
			call = func() { n.ApplyBF16(Rows16{Dst: y16, X: x16}) }
		}
		b.Run("norm="+nn.name, func(b *testing.B) {
			withKernel(b, k)
			b.SetBytes(int64(bytes))
			b.ReportAllocs()
			for b.Loop() {
				call()
			}
		})
	}
}

// BenchmarkLayerNormBias/kernel=K/norm=N separates what the bias costs from what centering costs,
// on one row of 4096 floats, where the row, the output, the weight and a bias (64 KiB) no longer
// fit a 48 KiB L1d: RMSNorm and LayerNorm (Center), each without and with a bias (Apply, float32
// rows, the same weight).
func BenchmarkLayerNormBias(b *testing.B) {
	s := benchutil.Must("1x4096")[0]
	x, w := benchData(s)
	bias := make([]float32, s.D)
	fill(bias, normal, seedFor(s.D, 2))
	y := slices.Clone(x)
	norms := []struct {
		name string
		n    Norm
	}{
		{"RMSNorm", Norm{Weight: w, Eps: 1e-6}},
		{"RMSNormBias", Norm{Weight: w, Bias: bias, Eps: 1e-6}},
		{"LayerNormNoBias", Norm{Weight: w, Center: true, Eps: 1e-12}},
		{"LayerNorm", Norm{Weight: w, Bias: bias, Center: true, Eps: 1e-12}},
	}
	for _, k := range available {
		b.Run("kernel="+k.name(), func(b *testing.B) {
			for _, nn := range norms {
				n := nn.n
				b.Run("norm="+nn.name, func(b *testing.B) {
					withKernel(b, k)
					b.SetBytes(int64(8 * len(x)))
					b.ReportAllocs()
					for b.Loop() {
						n.Apply(Rows{Dst: y, X: x})
					}
				})
			}
		})
	}
}

// BenchmarkLayerNormBackward/kernel=K/shape=S/norm=N is the backward pass of a training step
// for RMSNorm (a Norm with Weight: Inv and DW) beside LayerNorm (Center, Weight and Bias: Inv,
// Mean, DW and DB) on the same rows and kernel, so that `benchstat -col /norm` gives what the
// centered backward costs over RMSNorm's. SetBytes counts x and dy read and dx written.
func BenchmarkLayerNormBackward(b *testing.B) {
	for _, k := range available {
		b.Run("kernel="+k.name(), func(b *testing.B) {
			for _, s := range benchutil.Must("1x1024,1x4096,2048x4096") {
				b.Run("shape="+s.String(), func(b *testing.B) {
					x, w := benchData(s)
					dy := slices.Clone(x)
					fill(dy, normal, seedFor(s.Rows, s.D, 1))
					bias := make([]float32, s.D)
					fill(bias, normal, seedFor(s.D, 2))
					dx, y := slices.Clone(dy), slices.Clone(x)
					inv, mean := make([]float32, s.Rows), make([]float32, s.Rows)
					dw, db := make([]float32, s.D), make([]float32, s.D)
					norms := []struct {
						name string
						n    Norm
						g    Grad
					}{
						{"RMSNorm", Norm{Weight: w, Eps: 1e-6}, Grad{DX: dx, X: x, DY: dy, Inv: inv, DW: dw}},
						{"LayerNorm", Norm{Weight: w, Bias: bias, Center: true, Eps: 1e-12},
							Grad{DX: dx, X: x, DY: dy, Inv: inv, Mean: mean, DW: dw, DB: db}},
					}
					for _, nn := range norms {
						b.Run("norm="+nn.name, func(b *testing.B) {
							withKernel(b, k)
							rows := Rows{Dst: y, X: x, Inv: inv}
							if nn.n.Center {
								rows.Mean = mean
							}
							nn.n.Apply(rows)
							b.SetBytes(int64(12 * len(x)))
							b.ReportAllocs()
							for b.Loop() {
								nn.n.Backward(nn.g)
							}
						})
					}
				})
			}
		})
	}
}
