package rmsnorm

import (
	"sync"
	"sync/atomic"
	"testing"
)

// Many goroutines normalize their own rows with one shared weight (and one shared Norm) while
// another keeps switching kernels. Run under -race: no race may be reported, and every output
// must equal the generic result, whichever kernel each call picked up.
func TestConcurrentForwardAndSetKernel(t *testing.T) {
	const workers, iters = 8, 200
	defer SetKernel(Kernel())
	d := 300
	w := normalRows(d, 1, 30)
	norm := Norm{Weight: w, Eps: 1e-6}
	var stop atomic.Bool
	var switches atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ks := Kernels()
		for i := 0; !stop.Load(); i++ {
			if err := SetKernel(ks[i%len(ks)]); err != nil {
				t.Error(err)
				return
			}
			switches.Add(1)
		}
	}()
	errs := make(chan string, workers)
	var work sync.WaitGroup
	for g := 0; g < workers; g++ {
		work.Add(1)
		go func(g int) {
			defer work.Done()
			rows := 1 + g%5
			x := normalRows(d, rows, 31+g)
			want := make([]float32, len(x))
			forwardWith(kernelGeneric, want, x, w, 1e-6)
			y := make([]float32, len(x))
			res := make([]float32, len(x))
			for i := 0; i < iters; i++ {
				if g%2 == 0 {
					Forward(y, x, w, 1e-6)
				} else {
					norm.Apply(Rows{Dst: y, X: x, Residual: res}) // res is zero: h = x
					clear(res)
				}
				if j := firstDiff(y, want); j >= 0 {
					errs <- "concurrent call differs from generic"
					return
				}
			}
		}(g)
	}
	work.Wait()
	stop.Store(true)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	t.Logf("%d goroutines x %d calls while the kernel switched %d times", workers, iters, switches.Load())
}

// One row's bits do not depend on anything but the row: not its position, the batch size, its
// alignment, whether it is normalized in place, streamed, or which kernel runs it.
func TestDeterminism(t *testing.T) {
	for _, d := range []int{1, 17, 64, 128, 129, 512, 1000, 4097} {
		row := normalRows(d, 1, 40)
		w := normalRows(d, 1, 41)
		ref := make([]float32, d)
		forwardWith(kernelGeneric, ref, row, w, 1e-5)
		for _, k := range testKernels() {
			for _, rows := range []int{1, 4, 5, 9} {
				for pos := 0; pos < rows; pos += 3 {
					for off := 0; off < 16; off += 5 {
						for _, inPlace := range []bool{false, true} {
							for _, stream := range []bool{false, true} {
								gx := newGuarded("x", rows*d, off)
								fill(gx.s, valueClasses[(pos+off)%len(valueClasses)], seedFor(d, rows, pos, off))
								copy(gx.s[pos*d:], row)
								dst := gx.s
								if !inPlace {
									dst = newGuarded("dst", rows*d, (off+7)%16).s
								}
								withStreaming(stream, func() { forwardWith(k, dst, gx.s, w, 1e-5) })
								if i := firstDiff(dst[pos*d:(pos+1)*d], ref); i >= 0 {
									t.Fatalf("%s d=%d rows=%d pos=%d off=%d inPlace=%v stream=%v: y[%d] differs from the row alone on generic",
										k, d, rows, pos, off, inPlace, stream, i)
								}
							}
						}
					}
				}
			}
		}
	}
}
