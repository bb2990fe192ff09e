// Package mxcsr reads and writes the x86-64 MXCSR register (SSE's control and status word) of the
// calling thread, for tests that run the kernels with its exception flags set before a call, as
// earlier arithmetic on the thread leaves them. The caller locks its goroutine to its thread
// (runtime.LockOSThread) and puts the old value back.
package mxcsr

// Default is the MXCSR Go runs with: every exception masked, round to nearest, no flush to zero.
const Default = 0x1f80

// Invalid and Denormal are the flags (bits 0 and 1) of the invalid-operation and denormal-operand
// exceptions.
const (
	Invalid  = 1 << 0
	Denormal = 1 << 1
)
