//go:build gc && !purego && !noasm

package mxcsr

// Get returns the thread's MXCSR (STMXCSR).
func Get() uint32

// Set loads v into the thread's MXCSR (LDMXCSR).
func Set(v uint32)
