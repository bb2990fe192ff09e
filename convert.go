package rmsnorm

import (
	"fmt"
	"unsafe"
)

// Conversions between float32 and the 16-bit formats, on their own: widening at load (a bfloat16
// weight, say), narrowing at save. Each runs a vector loop of the active kernel; all kernels give
// the generic loop's bits (NaN payloads aside).

// BF16ToFloat32 widens the bfloat16 values of src (raw bits) into dst, exactly. It panics, before
// writing anything, unless len(dst) == len(src) and dst and src share no memory.
func BF16ToFloat32(dst []float32, src []uint16) {
	convert(convWidenBF16, "BF16ToFloat32", ptr(dst), len(dst), 4, ptr(src), len(src), 2)
}

// Float32ToBF16 rounds the float32 values of src to bfloat16 (raw bits) into dst: to nearest,
// ties to even, subnormals kept, NaN to the quiet NaN 0x7fc0. It panics, before writing
// anything, unless len(dst) == len(src) and dst and src share no memory.
func Float32ToBF16(dst []uint16, src []float32) {
	convert(convNarrowBF16, "Float32ToBF16", ptr(dst), len(dst), 2, ptr(src), len(src), 4)
}

// F16ToFloat32 widens the IEEE 754 binary16 values of src (raw bits) into dst, exactly,
// subnormals included; a NaN keeps its sign and payload and comes out quiet (a signalling one
// gets the quiet bit, as the CPUs' conversion instructions give it). It panics, before writing
// anything, unless len(dst) == len(src) and dst and src share no memory.
func F16ToFloat32(dst []float32, src []uint16) {
	convert(convWidenF16, "F16ToFloat32", ptr(dst), len(dst), 4, ptr(src), len(src), 2)
}

// Float32ToF16 rounds the float32 values of src to IEEE 754 binary16 (raw bits) into dst: to
// nearest, ties to even, subnormals kept, magnitudes from 65520 up to ±Inf, NaN to a quiet NaN of
// the same sign. It panics, before writing anything, unless len(dst) == len(src) and dst and src
// share no memory.
func Float32ToF16(dst []uint16, src []float32) {
	convert(convNarrowF16, "Float32ToF16", ptr(dst), len(dst), 2, ptr(src), len(src), 4)
}

// convOp is one of the four conversions.
type convOp uint8

const (
	convWidenBF16 convOp = iota
	convWidenF16
	convNarrowBF16
	convNarrowF16
)

// convert validates a conversion of n elements and runs it with the active kernel.
func convert(op convOp, fn string, dst unsafe.Pointer, nd int, dsize uintptr, src unsafe.Pointer, ns int, ssize uintptr) {
	if nd != ns {
		panic("rmsnorm: " + fn + ": " + fmt.Sprintf("len(dst) = %d, want len(src) = %d", nd, ns))
	}
	if !disjoint(uintptr(dst), uintptr(nd)*dsize, uintptr(src), uintptr(ns)*ssize) {
		panic("rmsnorm: " + fn + ": dst overlaps src")
	}
	if nd == 0 {
		return
	}
	convertWith(activeKernel(), op, dst, src, nd)
}

// convertWith runs conversion op on n elements with kernel k.
func convertWith(k kernelID, op convOp, dst, src unsafe.Pointer, n int) {
	if k != kernelGeneric && convertAsm(k, op, dst, src, n) {
		return
	}
	convertGeneric(op, dst, src, n)
}

// convertGeneric is the generic kernel's conversion loop.
func convertGeneric(op convOp, dst, src unsafe.Pointer, n int) {
	switch op {
	case convWidenBF16, convWidenF16:
		f := formatBF16
		if op == convWidenF16 {
			f = formatF16
		}
		widenInto(unsafe.Slice((*float32)(dst), n), unsafe.Slice((*uint16)(src), n), f)
	default:
		f := formatBF16
		if op == convNarrowF16 {
			f = formatF16
		}
		narrowInto(unsafe.Slice((*uint16)(dst), n), unsafe.Slice((*float32)(src), n), f)
	}
}
