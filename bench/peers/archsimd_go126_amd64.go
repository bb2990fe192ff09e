//go:build goexperiment.simd && amd64 && !go1.27

package peers

import "simd/archsimd"

// The simd/archsimd calls of the archsimd peer, as Go 1.26 spells them (archsimd_go127_amd64.go
// has Go 1.27's). A Part load fills the lanes past the end of s with zeros; a Part store writes
// only the lanes that fit in s.

func load16(s []float32) archsimd.Float32x16         { return archsimd.LoadFloat32x16Slice(s) }
func loadPart16(s []float32) archsimd.Float32x16     { return archsimd.LoadFloat32x16SlicePart(s) }
func store16(v archsimd.Float32x16, s []float32)     { v.StoreSlice(s) }
func storePart16(v archsimd.Float32x16, s []float32) { v.StoreSlicePart(s) }

func load8(s []float32) archsimd.Float32x8         { return archsimd.LoadFloat32x8Slice(s) }
func loadPart8(s []float32) archsimd.Float32x8     { return archsimd.LoadFloat32x8SlicePart(s) }
func store8(v archsimd.Float32x8, s []float32)     { v.StoreSlice(s) }
func storePart8(v archsimd.Float32x8, s []float32) { v.StoreSlicePart(s) }

// addPairs is [x0+x1, x2+x3, y0+y1, y2+y3] (VHADDPS).
func addPairs(x, y archsimd.Float32x4) archsimd.Float32x4 { return x.AddPairs(y) }
