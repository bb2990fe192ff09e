package rmsnorm

import (
	"fmt"
	"math"
	"testing"
)

// FuzzLayerNorm drives LayerNorm (Center, Bias) on the fuzzer's bits through every format and
// compares every kernel's outputs (Dst, Residual, Inv, Mean) with the generic kernel's, bit for
// bit, inside guards; and the generic kernel's float32 rows with the contract's reference. The
// flags byte picks:
//
//	flags%3      the weight form (weighted, UnitOffset, no weight)
//	flags/3%3    Center alone, Center and Bias, Bias alone
//	flags&16     a residual
//	flags&32     RoundNormalized
//	flags&64     Stride = d + 3 and DstStride = d + 1
//	flags&128    Workers = 3, every call split
//
// The format is fmt8%5 (float32, bfloat16, float16, float32 into bfloat16, into float16); with
// fmt8 >= 128 the AVX-512 Layer functions take groups of rows of every length (avx512LayerGroups
// 1), else as the CPU's rule says.
func FuzzLayerNorm(f *testing.F) {
	f.Add(uint16(4), uint8(2), uint8(0), uint8(0x13), math.Float32bits(1e-5), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(uint16(768), uint8(3), uint8(1), uint8(0x54), math.Float32bits(1e-12), []byte{0, 9, 9, 9, 64, 1, 2, 3, 200})
	f.Add(uint16(63), uint8(1), uint8(2), uint8(0xa5), uint32(0), []byte{1, 0, 0, 0x80, 0x7f, 1, 2, 3, 4})
	f.Add(uint16(1), uint8(4), uint8(3), uint8(0x27), math.Float32bits(0.5), []byte{1, 0xff, 0xff, 0x7f, 0x7f, 0, 0, 0x80, 0x3f})
	f.Add(uint16(300), uint8(0), uint8(4), uint8(0xf1), math.Float32bits(1e-6), []byte{0, 1, 0, 0, 0, 0, 0, 0, 0x80})
	f.Add(uint16(767), uint8(3), uint8(128), uint8(0x13), math.Float32bits(1e-12), []byte{0, 9, 9, 9, 64, 1, 2, 3, 200}) // 4x768 in groups
	f.Fuzz(func(t *testing.T, d16 uint16, rows8, fmt8, flags uint8, epsBits uint32, data []byte) {
		x, w, eps := fuzzInput(d16, rows8, epsBits, data)
		rot := data
		if len(data) > 2 {
			rot = append(append([]byte{data[0]}, data[2:]...), data[1])
		}
		res, b, _ := fuzzInput(d16, rows8, epsBits, rot)
		d := len(w)
		rows := len(x) / d
		lf := layerForms[(flags/3)%3]
		c := lcase{f: layerFormats[fmt8%5], mode: weightMode(flags % 3), center: lf.center, bias: lf.bias,
			residual: flags&16 != 0, inv: true, mean: lf.center}
		c.rn = flags&32 != 0 && c.f.out() != formatF32
		if flags&64 != 0 {
			c.gap, c.dgap = 3, 1
		}
		if flags&128 != 0 {
			splitAll(t)
			c.workers = 3
		}
		if fmt8 >= 128 {
			defer func(from int) { avx512LayerGroups = from }(avx512LayerGroups)
			avx512LayerGroups = 1
		}
		want := runLayer(t, kernelGeneric, c, d, rows, x, res, w, b, eps, 0)
		if c.f == formatF32 && c.gap == 0 {
			ref := layerWant(c, d, rows, x, res, w, b, eps)
			sameOut(t, fmt.Sprintf("generic against the contract: %s d=%d eps=%g", c, d, eps), want, ref)
		}
		for _, k := range testKernels() {
			got := runLayer(t, k, c, d, rows, x, res, w, b, eps, int(fmt8)%16)
			sameOut(t, fmt.Sprintf("%s %s d=%d rows=%d eps=%g", k, c, d, rows, eps), got, want)
		}
	})
}
