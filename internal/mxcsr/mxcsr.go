// Package mxcsr reads and writes the x86-64 MXCSR register (SSE's control and status word) of the
// calling thread, for tests that run the kernels under settings Go never makes itself: exception
// flags set before a call, as earlier arithmetic on the thread leaves them, or exceptions unmasked,
// as C code in the process can leave them. The caller locks its goroutine to its thread
// (runtime.LockOSThread) and puts the old value back.
package mxcsr

// Default is the MXCSR Go runs with: every exception masked, round to nearest, no flush to zero.
const Default = 0x1f80

// Invalid and Denormal are the flags (bits 0 and 1) of the invalid-operation and denormal-operand
// exceptions; InvalidMask and DenormalMask their masks (bits 7 and 8).
const (
	Invalid      = 1 << 0
	Denormal     = 1 << 1
	InvalidMask  = 1 << 7
	DenormalMask = 1 << 8
)
