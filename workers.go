package rmsnorm

import "sync"

// Multi-core rows (Norm.Workers). Rows are independent in the forward pass, so any split gives the
// same bits; the backward pass splits on the blocks of the weight gradient (runBackward). A split
// costs the start of the goroutines and, on a machine whose other cores sleep, their wake-up:
// below workerBytes of rows per goroutine that costs more than the work saved.

// workerBytes is the least memory (rows read and written) a goroutine of a split call must move.
// Measured on a 2-core AMD EPYC (Zen 5) virtual machine with BenchmarkWorkers (bench_test.go),
// where starting the second goroutine and waking the second vCPU costs about 5-20 us: the README's
// "Workers" section has the table.
var workerBytes uintptr = 4 << 20 // a variable so that tests can split small calls

// workersForBytes returns how many goroutines a call moving bytes of rows should use: at most
// workers, at most units, and no more than one per workerBytes.
func (j *job) workersForBytes(workers int, bytes uintptr, units int) int {
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
	w := j.workersForBytes(workers, buffers*uintptr(j.rows)*uintptr(j.d)*elemBytes, j.rows)
	if w <= 1 {
		j.run(k)
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
