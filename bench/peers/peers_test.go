package peers

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gosimd/rmsnorm"
	"github.com/gosimd/rmsnorm/internal/benchutil"
)

// Every peer computes RMSNorm: on normal data it agrees with rmsnorm to float32 accuracy (the
// rounding differs: fused multiply-adds, other summation orders, a divide instead of a multiply).
func TestPeersAgree(t *testing.T) {
	for _, p := range All() {
		checkAgrees(t, p.Name, p.Fn)
	}
	t.Logf("peers: %v", names())
}

// checkAgrees fails t unless fn agrees with rmsnorm to float32 accuracy, on three rows of normal
// data for lengths around the vector widths of the peers and beyond.
func checkAgrees(t *testing.T, name string, fn Func) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	for _, d := range []int{1, 7, 8, 9, 15, 16, 17, 31, 33, 128, 1000, 4096, 4097} {
		const rows = 3
		x := make([]float32, rows*d)
		w := make([]float32, d)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		for i := range w {
			w[i] = float32(r.NormFloat64())
		}
		want := make([]float32, len(x))
		rmsnorm.Forward(want, x, w, 1e-6)
		got := make([]float32, len(x))
		fn(got, x, w, 1e-6)
		for i := range got {
			if e := math.Abs(float64(got[i]-want[i])) / (math.Abs(float64(want[i])) + 1e-6); e > 2e-5 {
				t.Fatalf("%s d=%d: y[%d] = %v, rmsnorm gives %v", name, d, i, got[i], want[i])
			}
		}
	}
}

func names() []string {
	var ns []string
	for _, p := range All() {
		ns = append(ns, p.Name)
	}
	return ns
}

// BenchmarkPeers/shape=RxD/impl=NAME: the peers, every rmsnorm kernel and copy() of the same
// bytes, on the standard shapes and data of internal/benchutil (the ones the bench commands
// measure); `benchstat -col /impl` puts them side by side per shape. Bytes count x read plus y
// written.
func BenchmarkPeers(b *testing.B) {
	active := rmsnorm.Kernel()
	defer rmsnorm.SetKernel(active)
	for _, s := range benchutil.Must(benchutil.Standard) {
		x, w := benchutil.Data(s)
		y := make([]float32, len(x))
		run := func(impl string, f func()) {
			b.Run("shape="+s.String()+"/impl="+impl, func(b *testing.B) {
				b.SetBytes(int64(8 * len(x)))
				for b.Loop() {
					f()
				}
			})
		}
		run("copy", func() { copy(y, x) })
		for _, k := range rmsnorm.Kernels() {
			if err := rmsnorm.SetKernel(k); err != nil {
				b.Fatal(err)
			}
			run("rmsnorm-"+k, func() { rmsnorm.Forward(y, x, w, 1e-6) })
		}
		if err := rmsnorm.SetKernel(active); err != nil {
			b.Fatal(err)
		}
		for _, p := range All() {
			run(p.Name, func() { p.Fn(y, x, w, 1e-6) })
		}
	}
}

// Every LayerNorm peer computes LayerNorm as rmsnorm does (the mean, the biased variance, eps
// inside the square root, the weight then the bias): it agrees with a Norm with Center, Weight
// and Bias to float32 accuracy. With eps 1 (as large as the variance) a peer that added eps
// outside the square root, or divided by d-1, would be far off; with 1e-12 (BERT's) it checks the
// usual case.
func TestLayerNormPeersAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, p := range LayerNorms() {
		for _, eps := range []float32{1e-12, 1} {
			for _, d := range []int{2, 7, 8, 9, 16, 17, 33, 128, 1000, 4096, 4097} {
				const rows = 3
				x, w, b := make([]float32, rows*d), make([]float32, d), make([]float32, d)
				for _, s := range [][]float32{x, w, b} {
					for i := range s {
						s[i] = float32(r.NormFloat64())
					}
				}
				want, n := make([]float32, len(x)), make([]float32, len(x))
				rmsnorm.Norm{Weight: w, Bias: b, Center: true, Eps: eps}.Forward(want, x)
				rmsnorm.Norm{Dim: d, Center: true, Eps: eps}.Forward(n, x) // (x-mean)*inv
				got := make([]float32, len(x))
				p.New(w, b, eps)(got, x)
				for i := range got {
					// The error scales with the terms of y = n*w + b, which may cancel: relative
					// to them, not to y.
					scale := math.Abs(float64(w[i%d]))*(math.Abs(float64(n[i]))+1) + math.Abs(float64(b[i%d]))
					if e := math.Abs(float64(got[i] - want[i])); e > 2e-5*scale {
						t.Fatalf("%s eps=%g d=%d: y[%d] = %v, rmsnorm gives %v", p.Name, eps, d, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// BenchmarkLayerNormPeers/shape=RxD/impl=NAME: the LayerNorm peers, rmsnorm's LayerNorm (a Norm
// with Center, Weight and Bias) on every kernel and copy() of the same bytes, on the standard
// shapes and data of internal/benchutil with BERT's eps 1e-12; `benchstat -col /impl` puts them
// side by side per shape. Bytes count x read plus y written.
func BenchmarkLayerNormPeers(b *testing.B) {
	active := rmsnorm.Kernel()
	defer rmsnorm.SetKernel(active)
	for _, s := range benchutil.Must(benchutil.Standard) {
		x, w := benchutil.Data(s)
		bias := slices.Clone(w)
		for i := range bias {
			bias[i]--
		}
		y := make([]float32, len(x))
		run := func(impl string, f func()) {
			b.Run("shape="+s.String()+"/impl="+impl, func(b *testing.B) {
				b.SetBytes(int64(8 * len(x)))
				for b.Loop() {
					f()
				}
			})
		}
		run("copy", func() { copy(y, x) })
		n := rmsnorm.Norm{Weight: w, Bias: bias, Center: true, Eps: 1e-12}
		for _, k := range rmsnorm.Kernels() {
			if err := rmsnorm.SetKernel(k); err != nil {
				b.Fatal(err)
			}
			run("rmsnorm-"+k, func() { n.Forward(y, x) })
		}
		if err := rmsnorm.SetKernel(active); err != nil {
			b.Fatal(err)
		}
		for _, p := range LayerNorms() {
			f := p.New(w, bias, 1e-12)
			run(p.Name, func() { f(y, x) })
		}
	}
}
