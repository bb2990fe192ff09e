//go:build (amd64 || arm64) && gc && !purego && !noasm

package rmsnorm

import "github.com/klauspost/cpuid/v2"

// streamBytes is the size of the rows a call reads and writes (x, dst when it is not x, the
// residual) from which kernels stream: the last-level cache as cpuid reports it. Virtual machines
// often report no L3; their L2 would then stream rows of a few MiB around an L3 that holds them,
// so the fallback is streamFallback instead.
var streamBytes = func() int { // a variable so that tests can force either kind of store
	if l3 := cpuid.CPU.Cache.L3; l3 > 0 {
		return l3
	}
	return streamFallback
}()
