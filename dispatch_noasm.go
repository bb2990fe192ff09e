//go:build !(amd64 || arm64) || !gc || purego || noasm

package rmsnorm

// archKernels returns no SIMD kernel: this build has only the generic one.
func archKernels() []kernelID { return nil }

func (j *job) runAsm(k kernelID, from int) int { return j.runGeneric(from) }
