//go:build !(amd64 || arm64) || !gc || purego || noasm

package rmsnorm

// withStreaming runs f: without assembly there is no streaming to force.
func withStreaming(on bool, f func()) { f() }
