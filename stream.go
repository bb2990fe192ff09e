package rmsnorm

import "github.com/klauspost/cpuid/v2"

// Non-temporal stores write dst around the caches. They pay off only when the output would not
// fit in the cache anyway; below that the next operation (usually a matmul reading dst) wants dst
// in cache, so ordinary stores are used.

// streamBytes is the size of output above which kernels stream: the last-level cache as cpuid
// reports it, or the L2 when there is no L3, or 8 MiB when cpuid knows neither.
var streamBytes = func() int { // a variable so that tests can force either kind of store
	switch c := cpuid.CPU.Cache; {
	case c.L3 > 0:
		return c.L3
	case c.L2 > 0:
		return c.L2
	}
	return 8 << 20
}()

// streaming reports whether the job's output is larger than the cache.
func streaming(j *job) bool { return j.rows*j.d*4 > streamBytes }

// streamFlags picks how the kernels treat memory:
//   - a batch larger than the cache comes from memory, so the next rows are prefetched while a row
//     is scaled, non-temporally (PREFETCHNTA: they are read twice and then done with); out of
//     place, dst also goes out with non-temporal stores (in place, the rows are in cache already
//     and ordinary stores write them back at no extra cost);
//   - rows far apart (a stride) defeat the hardware prefetchers, so they are prefetched too.
func streamFlags(j *job) int {
	flags := 0
	big := streaming(j)
	if big {
		flags |= flagPF | flagNTA
	} else if j.stride != j.d {
		flags |= flagPF
	}
	if big && &j.dst[0] != &j.x[0] {
		flags |= flagNT
	}
	return flags
}
