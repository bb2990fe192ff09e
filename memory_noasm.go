//go:build !(amd64 || arm64) || !gc || purego || noasm

package rmsnorm

import "math"

// streamBytes is never reached: no kernel of this build streams.
const streamBytes = math.MaxInt

// setMemoryFlags does nothing: only the assembly kernels read the flags.
func (j *job) setMemoryFlags(elemBytes uintptr) {}

// setBackwardMemoryFlags does nothing, like setMemoryFlags.
func (j *job) setBackwardMemoryFlags() {}
