//go:build linux || darwin

// amd64 alone (the file's name): Bochs runs the amd64 kernels, and qemu-arm (32-bit) reports a
// fault without its address, which bochsFault then rightly does not excuse.

package rmsnorm

import (
	"testing"
	"unsafe"
)

// bochsFault excuses a memory fault of the avx512 kernel within a vector's width after the end of
// a 16-bit buffer, under -bochs, and nothing else: not a fault farther on, not another kernel's,
// not a panic that is no fault, not without the flag.
func TestBochsFault(t *testing.T) {
	defer func(on bool, n int64) {
		*bochsFlag = on
		bochsFaults.Store(n)
	}(*bochsFlag, bochsFaults.Load())
	g := newGuardedRegion(t, 64)
	s := regionSlice[uint16](g, 10, true) // flush against the end guard
	ends := ends16(s, 1, 10, 10)
	if len(ends) != 1 || ends[0] != g.endGuard() {
		t.Fatalf("ends16 gives %#x, the guard starts at %#x", ends, g.endGuard())
	}
	if ends16(regionSlice[float32](g, 10, true), 1, 10, 10) != nil {
		t.Fatal("ends16 gives ends of float32 rows")
	}
	// byteAt reads the byte off bytes past the end of s.
	byteAt := func(off int) func() {
		return func() { sink = float32(*(*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s)), 2*len(s)+off))) }
	}
	for _, on := range []bool{false, true} {
		*bochsFlag = on
		for _, c := range []struct {
			name             string
			k                kernelID
			f                func()
			faulted, excused bool
		}{
			{"the first byte past the end", kernelAVX512, byteAt(0), true, on},
			{"63 bytes past the end", kernelAVX512BF16, byteAt(63), true, on},
			{"64 bytes past the end", kernelAVX512, byteAt(64), true, false},
			{"the avx2 kernel", kernelAVX2, byteAt(0), true, false},
			{"a panic that is no fault", kernelAVX512, func() { panic("not a fault") }, true, false},
			{"no fault", kernelAVX512, func() { sink = float32(s[9]) }, false, false},
		} {
			faulted, excused := bochsFault(c.k, c.f, ends...)
			if faulted != c.faulted || excused != c.excused {
				t.Errorf("-bochs=%v, %s: faulted %v, excused %v; want %v, %v", on, c.name, faulted, excused, c.faulted, c.excused)
			}
		}
	}
}
