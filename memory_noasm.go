//go:build !(amd64 || arm64) || !gc || purego || noasm

package rmsnorm

// streamBytes is streamFallback: this build has no cpuid to ask for the cache size. Only the
// generic kernel runs here, and of the flags it reads only flagPF (see touchRow).
var streamBytes = streamFallback // a variable so that tests can force either way
