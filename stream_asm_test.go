//go:build (amd64 || arm64) && gc && !purego && !noasm

package rmsnorm

import "math"

// withStreaming runs f with non-temporal stores forced on or off, whatever the size.
func withStreaming(on bool, f func()) {
	saved := streamBytes
	defer func() { streamBytes = saved }()
	streamBytes = math.MaxInt
	if on {
		streamBytes = 0
	}
	f()
}
