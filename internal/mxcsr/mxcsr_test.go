//go:build amd64 && gc && !purego && !noasm

package mxcsr

import (
	"runtime"
	"testing"
)

// Set then Get gives back what was set (the flags included), and Go's default is in place before.
func TestSetGet(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	old := Get()
	if old&^(Invalid|Denormal|0x3c) != Default { // the six flags aside
		t.Fatalf("MXCSR is %#x, not Go's %#x (flags aside)", old, Default)
	}
	defer Set(old)
	for _, v := range []uint32{Default | Invalid | Denormal, Default &^ (InvalidMask | DenormalMask), Default} {
		Set(v)
		if got := Get(); got != v {
			t.Errorf("Set(%#x), then Get() = %#x", v, got)
		}
	}
}
