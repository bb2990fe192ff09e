//go:build !(goexperiment.simd && amd64)

package peers

// archsimdPeer needs GOEXPERIMENT=simd on amd64 (simd/archsimd exists nowhere else in Go 1.26).
var archsimdPeer Func
