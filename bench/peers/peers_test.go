package peers

import (
	"math"
	"math/rand/v2"
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
