package rmsnorm

import "math"

// withStreaming runs f with the memory flags of rows from memory (non-temporal stores, prefetches,
// the generic kernel's touchRow) forced on or off, whatever the size.
func withStreaming(on bool, f func()) {
	saved := streamBytes
	defer func() { streamBytes = saved }()
	streamBytes = math.MaxInt
	if on {
		streamBytes = 0
	}
	f()
}
