//go:build linux || darwin

package rmsnorm

import "unsafe"

// The -bochs helpers for the guard-page tests (see bochs_test.go), which run where guard pages do.

// bochsFault runs f as faults does and reports whether it faulted, and whether -bochs excuses the
// fault: one of the avx512 kernel (k) on memory at most 64 bytes (a vector) after one of ends, the
// ends of the call's 16-bit buffers or of their rows, where Bochs's masked 16-bit accesses touch
// masked-off bytes. Any other panic or fault is not excused. It counts those it excuses.
func bochsFault(k kernelID, f func(), ends ...uintptr) (faulted, excused bool) {
	faulted, addr, onMemory := faultAt(f)
	if !faulted || !onMemory || !*bochsFlag || k != kernelAVX512 && k != kernelAVX512BF16 {
		return faulted, false
	}
	for _, e := range ends {
		if addr >= e && addr-e < 64 {
			bochsFaults.Add(1)
			return true, true
		}
	}
	return true, false
}

// ends16 returns the address just past each row of s (rows of d elements, stride apart) when s
// holds 16-bit elements, for bochsFault; nothing for float32 ones.
func ends16[T elem](s []T, rows, stride, d int) []uintptr {
	if _, ok := any(s).([]uint16); !ok || len(s) == 0 {
		return nil
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	var ends []uintptr
	for r := range rows {
		ends = append(ends, base+uintptr(2*(r*stride+d)))
	}
	return ends
}
