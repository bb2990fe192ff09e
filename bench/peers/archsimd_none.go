//go:build !(goexperiment.simd && amd64)

package peers

// archsimdPeer needs GOEXPERIMENT=simd on amd64: simd/archsimd exists nowhere else in Go 1.26, and
// the peer's kernels are AVX-512 and AVX2 ones (Go 1.27's simd/archsimd for arm64 and wasm is not
// used here).
var archsimdPeer Func
