package peers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gosimd/rmsnorm"
)

// Every peer computes RMSNorm: on normal data it agrees with rmsnorm to float32 accuracy (the
// rounding differs: fused multiply-adds, other summation orders, a divide instead of a multiply).
func TestPeersAgree(t *testing.T) {
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
		for _, p := range All() {
			got := make([]float32, len(x))
			p.Fn(got, x, w, 1e-6)
			for i := range got {
				if e := math.Abs(float64(got[i]-want[i])) / (math.Abs(float64(want[i])) + 1e-6); e > 2e-5 {
					t.Fatalf("%s d=%d: y[%d] = %v, rmsnorm gives %v", p.Name, d, i, got[i], want[i])
				}
			}
		}
	}
	t.Logf("peers: %v", names())
}

func names() []string {
	var ns []string
	for _, p := range All() {
		ns = append(ns, p.Name)
	}
	return ns
}

var shapes = []struct{ rows, d int }{{1, 128}, {1, 1024}, {1, 4096}, {1, 16384}, {32768, 128}, {2048, 4096}}

// BenchmarkPeers/shape=RxD/impl=NAME: the peers, every rmsnorm kernel and copy() of the same
// bytes; `benchstat -col /impl` puts them side by side per shape. Bytes count x read plus y
// written.
func BenchmarkPeers(b *testing.B) {
	for _, s := range shapes {
		x := make([]float32, s.rows*s.d)
		w := make([]float32, s.d)
		r := rand.New(rand.NewPCG(uint64(s.rows), uint64(s.d)))
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		for i := range w {
			w[i] = 1 + float32(r.NormFloat64())/4
		}
		y := make([]float32, len(x))
		shape := fmt.Sprintf("shape=%dx%d", s.rows, s.d)
		run := func(impl string, f func()) {
			b.Run(shape+"/impl="+impl, func(b *testing.B) {
				b.SetBytes(int64(8 * len(x)))
				for b.Loop() {
					f()
				}
			})
		}
		run("copy", func() { copy(y, x) })
		for _, k := range rmsnorm.Kernels() {
			rmsnorm.SetKernel(k)
			run("rmsnorm-"+k, func() { rmsnorm.Forward(y, x, w, 1e-6) })
		}
		rmsnorm.SetKernel(rmsnorm.Kernels()[0])
		for _, p := range All() {
			run(p.Name, func() { p.Fn(y, x, w, 1e-6) })
		}
	}
}
