//go:build (amd64 || arm64) && gc && !purego && !noasm

package rmsnorm

import "github.com/klauspost/cpuid/v2"

// How the assembly kernels treat memory. Non-temporal stores write dst around the caches; they pay
// off only when the output would not fit in the cache anyway. Below that the next operation
// (usually a matmul reading dst) wants dst in cache, so ordinary stores are used.

// streamBytes is the size of output above which kernels stream: the last-level cache as cpuid
// reports it. Virtual machines often report no L3; their L2 would then make outputs of a few MiB
// stream around an L3 that holds them, so the fallback is streamFallback instead.
var streamBytes = func() int { // a variable so that tests can force either kind of store
	if l3 := cpuid.CPU.Cache.L3; l3 > 0 {
		return l3
	}
	return streamFallback
}()

// streamFallback is the threshold when cpuid reports no L3 (see memory_test.go for the
// measurements behind it).
const streamFallback = 16 << 20

// setMemoryFlags picks how the kernels treat memory for the validated job, whose rows hold
// elements of elemBytes bytes:
//   - a batch larger than the cache comes from memory, so the rows ahead are prefetched while a
//     row is summed and scaled; out of place, dst also goes out with non-temporal stores (in place,
//     the rows are in cache already and ordinary stores write them back at no extra cost);
//   - rows far apart (a stride) defeat the hardware prefetchers, so they are prefetched too.
func (j *job) setMemoryFlags(elemBytes uintptr) {
	if j.stride != j.d {
		j.flags = flagPF
	}
	if uintptr(j.rows*j.d)*elemBytes > uintptr(streamBytes) {
		j.flags = flagPF
		if j.dst != j.x {
			j.flags |= flagNT
		}
	}
}
