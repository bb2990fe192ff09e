//go:build !(amd64 || arm64) || !gc || purego || noasm

package rmsnorm

// streamBytes is streamFallback: this build has no cpuid to ask for the cache size. Only the
// generic kernel runs here; of the memory flags it reads flagPF (see touchRow), and flagNT is set
// but ignored.
var streamBytes = streamFallback // a variable so that tests can force either way
