//go:build !(amd64 || arm64) || !gc || purego || noasm

package rmsnorm

import "testing"

// callDirect runs the benchmark loop on the generic kernel's entry: the only kernel of this build.
func callDirect(b *testing.B, k kernelID, j *job) { callGeneric(b, k, j) }
