//go:build goexperiment.simd && amd64 && go1.27

package peers

import "simd/archsimd"

// The simd/archsimd calls of the archsimd peer, as Go 1.27 spells them (archsimd_go126_amd64.go
// has Go 1.26's). Go 1.27 changed the experimental API:
//   - the slice loads and stores took the short names: LoadFloat32x16Slice is now LoadFloat32x16
//     and StoreSlice is Store (the array-pointer forms that had those names are now
//     LoadFloat32x16Array and StoreArray), so one spelling cannot build on both releases;
//   - LoadFloat32x16SlicePart and StoreSlicePart are LoadFloat32x16Part and StorePart, and both
//     also return how many elements they moved, which the peer does not need;
//   - AddPairs is ConcatAddPairs, with the same result.

func load16(s []float32) archsimd.Float32x16 { return archsimd.LoadFloat32x16(s) }
func loadPart16(s []float32) archsimd.Float32x16 {
	v, _ := archsimd.LoadFloat32x16Part(s)
	return v
}
func store16(v archsimd.Float32x16, s []float32)     { v.Store(s) }
func storePart16(v archsimd.Float32x16, s []float32) { v.StorePart(s) }

func load8(s []float32) archsimd.Float32x8 { return archsimd.LoadFloat32x8(s) }
func loadPart8(s []float32) archsimd.Float32x8 {
	v, _ := archsimd.LoadFloat32x8Part(s)
	return v
}
func store8(v archsimd.Float32x8, s []float32)     { v.Store(s) }
func storePart8(v archsimd.Float32x8, s []float32) { v.StorePart(s) }

// addPairs is [x0+x1, x2+x3, y0+y1, y2+y3] (VHADDPS).
func addPairs(x, y archsimd.Float32x4) archsimd.Float32x4 { return x.ConcatAddPairs(y) }
