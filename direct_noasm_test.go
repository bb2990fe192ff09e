//go:build !(amd64 || arm64) || !gc || purego || noasm

package rmsnorm

import "testing"

// callDirect runs the benchmark loop on the generic kernel's entry: the only kernel of this build.
func callDirect(b *testing.B, k kernelID, j *job) { callGeneric(b, k, j) }

// hasRowFunc reports whether kernel k has a row function (callRow): this build has none.
func hasRowFunc(k kernelID) bool { return false }

// hasRowF16Buf reports whether kernel k has the binary16 row function through a float32 copy
// (callRowF16Buf): this build has none.
func hasRowF16Buf(k kernelID) bool { return false }

// hasRowBF16 reports whether kernel k has a bfloat16 row function (callRowBF16): this build has
// none.
func hasRowBF16(k kernelID) bool { return false }
