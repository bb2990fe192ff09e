package rmsnorm

import "sync"

// Multi-core rows (Norm.Workers). Rows are independent in the forward pass, so any split gives the
// same bits; the backward pass splits on the blocks of the weight gradient (runBackward).
//
// A split costs the start of the goroutines: about 0.2 us when the other cores are busy or have
// just been (the runtime keeps an idle thread spinning for a while), but 6-10 us once they have
// been idle for 10 us or more and their threads sleep in the kernel (measured on a 2-vCPU AMD EPYC
// Zen 5 virtual machine, Linux). On that machine a two-way split only paid where the rows did not
// fit the 32 MiB L3 (two cores draw more memory bandwidth than one; in cache, the two vCPUs gained
// nothing), as BenchmarkWorkers shows, forced split against one goroutine:
//
//	rows x 4096    forward          backward
//	64             0.87x            0.84x
//	256            0.91x            0.96x
//	512            0.99x            1.53x
//	1024           1.34x            1.90x
//	2048           1.30x            1.42x
//	16384          1.25x            1.18x
//
// So a goroutine takes at least workerBytes of rows read and written: 12 MiB.

// workerBytes is the least memory (rows read and written) a goroutine of a split call moves.
var workerBytes uintptr = 12 << 20 // a variable so that tests can split small calls

// workersFor returns how many goroutines a call moving bytes of rows should use: at most
// workers, at most units, and no more than one per workerBytes.
func workersFor(workers int, bytes uintptr, units int) int {
	w := min(workers, units, int(bytes/workerBytes))
	return max(w, 1)
}

// runWorkers runs the validated forward job with kernel k on up to workers goroutines: the rows
// split into contiguous ranges of nearly equal size.
func (j *job) runWorkers(k kernelID, workers int, elemBytes uintptr) {
	buffers := uintptr(2) // x read, dst written (in place: read and written back)
	if j.res != nil {
		buffers += 2
	}
	w := workersFor(workers, buffers*uintptr(j.rows)*uintptr(j.d)*elemBytes, j.rows)
	if w <= 1 {
		j.run()
		return
	}
	j.split(k, w)
}

// split runs the forward job on w goroutines. It takes the job by value: the goroutines share
// this copy, and the caller's job stays on its stack.
//
//go:noinline
func (j job) split(k kernelID, w int) {
	parallel(w, func(i int) {
		jw := j
		jw.runRange(k, j.rows*i/w, j.rows*(i+1)/w)
	})
}

// parallel runs fn(0), ..., fn(n-1) on n goroutines, fn(0) on the calling one, and returns when
// all have returned.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	wg.Add(n - 1)
	for i := 1; i < n; i++ {
		go func() {
			defer wg.Done()
			fn(i)
		}()
	}
	fn(0)
	wg.Wait()
}
