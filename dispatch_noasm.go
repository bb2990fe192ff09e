//go:build !(amd64 || arm64) || !gc || purego || noasm

package rmsnorm

import "unsafe"

// archKernels returns no SIMD kernel: this build has only the generic one.
func archKernels() []kernelID { return nil }

// callKernel runs rows [from, to) of j with the generic kernel, the only one of this build.
func callKernel(j *job, from, to int) int {
	if j.v >= numVariants {
		return runGenericBackward(j, from, to)
	}
	return runGeneric(j, from, to)
}

// convertAsm reports that this build has no vector conversion loop.
func convertAsm(k kernelID, op convOp, dst, src unsafe.Pointer, n int) bool { return false }

// callRow returns rowNone: this build has no row function (see the assembly builds' callRow).
func callRow(dst, x, res, w unsafe.Pointer, d int, eps float32, k kernelID) int { return rowNone }

// callRowF16 returns rowNone: this build has no row function (see the assembly builds' callRowF16).
func callRowF16(dst, x, res, w unsafe.Pointer, d int, eps float32, k kernelID) int { return rowNone }

// callRowF16Buf returns rowNone: this build has no row function (see the assembly builds' callRowF16Buf).
func callRowF16Buf(dst, x, res, w unsafe.Pointer, d int, eps float32, k kernelID) int { return rowNone }

// callRowBF16 returns rowNone: this build has no row function (see the assembly builds' callRowBF16).
func callRowBF16(dst, x, res, w unsafe.Pointer, d int, eps float32, k kernelID) int { return rowNone }

// callRowF16RN returns rowNone: this build has no row function (see the assembly builds' callRowF16RN).
func callRowF16RN(dst, x, res, w unsafe.Pointer, d int, eps float32, k kernelID) int { return rowNone }

// callRowBF16RN returns rowNone: this build has no row function (see the assembly builds' callRowBF16RN).
func callRowBF16RN(dst, x, res, w unsafe.Pointer, d int, eps float32, k kernelID) int { return rowNone }
