//go:build goexperiment.simd && amd64

package peers

import (
	"math"
	"simd/archsimd"
)

// archsimdPeer is RMSNorm as a Go user would write it with simd/archsimd (GOEXPERIMENT=simd):
// 16-lane AVX-512 vectors where the CPU has them, 8-lane AVX2+FMA vectors otherwise, fused
// multiply-add for the sum of squares, masked loads for the tail.
//
// The loads, stores and the pairwise add go through one-line helpers, since Go 1.27 renamed them:
// archsimd_go126_amd64.go and archsimd_go127_amd64.go hold each release's spelling.
var archsimdPeer Func = func() Func {
	switch {
	case archsimd.X86.AVX512():
		return archsimd16
	case archsimd.X86.AVX2() && archsimd.X86.FMA():
		return archsimd8
	}
	return nil
}()

func archsimd16(dst, x, w []float32, eps float32) {
	d := len(w)
	for r := 0; r+d <= len(x); r += d {
		row, out := x[r:r+d], dst[r:r+d]
		acc0, acc1 := archsimd.BroadcastFloat32x16(0), archsimd.BroadcastFloat32x16(0)
		i := 0
		for ; i+32 <= d; i += 32 {
			a := load16(row[i:])
			b := load16(row[i+16:])
			acc0 = a.MulAdd(a, acc0)
			acc1 = b.MulAdd(b, acc1)
		}
		for ; i < d; i += 16 {
			a := loadPart16(row[i:])
			acc0 = a.MulAdd(a, acc0)
		}
		s8 := acc0.Add(acc1)
		s4 := s8.GetLo().Add(s8.GetHi())
		s := s4.GetLo().Add(s4.GetHi())
		s = addPairs(addPairs(s, s), s)
		inv := 1 / float32(math.Sqrt(float64(s.GetElem(0)/float32(d)+eps)))
		iv := archsimd.BroadcastFloat32x16(inv)
		for i = 0; i+16 <= d; i += 16 {
			store16(load16(row[i:]).Mul(iv).Mul(load16(w[i:])), out[i:])
		}
		if i < d {
			storePart16(loadPart16(row[i:]).Mul(iv).Mul(loadPart16(w[i:])), out[i:])
		}
	}
}

func archsimd8(dst, x, w []float32, eps float32) {
	d := len(w)
	for r := 0; r+d <= len(x); r += d {
		row, out := x[r:r+d], dst[r:r+d]
		acc0, acc1 := archsimd.BroadcastFloat32x8(0), archsimd.BroadcastFloat32x8(0)
		i := 0
		for ; i+16 <= d; i += 16 {
			a := load8(row[i:])
			b := load8(row[i+8:])
			acc0 = a.MulAdd(a, acc0)
			acc1 = b.MulAdd(b, acc1)
		}
		for ; i < d; i += 8 {
			a := loadPart8(row[i:])
			acc0 = a.MulAdd(a, acc0)
		}
		s8 := acc0.Add(acc1)
		s := s8.GetLo().Add(s8.GetHi())
		s = addPairs(addPairs(s, s), s)
		inv := 1 / float32(math.Sqrt(float64(s.GetElem(0)/float32(d)+eps)))
		iv := archsimd.BroadcastFloat32x8(inv)
		for i = 0; i+8 <= d; i += 8 {
			store8(load8(row[i:]).Mul(iv).Mul(load8(w[i:])), out[i:])
		}
		if i < d {
			storePart8(loadPart8(row[i:]).Mul(iv).Mul(loadPart8(w[i:])), out[i:])
		}
	}
}
