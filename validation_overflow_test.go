package rmsnorm

import (
	"math"
	"slices"
	"testing"
)

// Rows whose span (N-1)*Stride + d, or (N-1)*DstStride + d, does not fit in an int would wrap
// around in the address arithmetic of the kernels and reach memory outside the slices. Every
// entry point that takes N and a stride refuses them with a panic before anything is written,
// whatever the slices hold: the check of the span comes before the check of the slices' lengths.

// hugeLayouts are N, Stride and DstStride triples whose span overflows an int, each in a
// different term: the row count, the stride of X, the stride of Dst.
var hugeLayouts = []struct {
	name                 string
	rows, stride, dststr int
}{
	{"N", math.MaxInt / 2, 4, 0},
	{"N = MaxInt", math.MaxInt, 4, 0},
	{"Stride", 3, math.MaxInt / 2, 0},
	{"DstStride", 3, 4, math.MaxInt / 2},
}

const wantNoFit = "do not fit in memory"

// overflowNorms are the Norms of the overflow tests, on rows of 4: RMSNorm and LayerNorm, whose
// checks share the span's but add Bias and Mean.
func overflowNorms() map[string]Norm {
	w := []float32{1, 2, 3, 4}
	return map[string]Norm{
		"RMSNorm":   {Weight: w, Eps: 1e-6},
		"LayerNorm": {Weight: w, Bias: []float32{1, 1, 1, 1}, Center: true, Eps: 1e-6},
	}
}

func TestForwardSpanOverflow(t *testing.T) {
	for nname, n := range overflowNorms() {
		for _, l := range hugeLayouts {
			x, dst, res := slices.Repeat([]float32{1}, 12), slices.Repeat([]float32{-1}, 12), slices.Repeat([]float32{2}, 12)
			inv, mean := slices.Repeat([]float32{-3}, 3), slices.Repeat([]float32{-4}, 3)
			if !n.Center {
				mean = nil
			}
			x16, dst16 := slices.Repeat([]uint16{0x3f80}, 12), slices.Repeat([]uint16{0xbf80}, 12)
			name := nname + "/" + l.name
			mustPanicUnwritten(t, name+"/Apply", []string{"rmsnorm: Norm.Apply: ", wantNoFit}, func() {
				n.Apply(Rows{Dst: dst, X: x, Residual: res, Inv: inv, Mean: mean, N: l.rows, Stride: l.stride, DstStride: l.dststr})
			}, dst, res, inv, mean)
			mustPanicUnwritten(t, name+"/ApplyBF16", []string{"rmsnorm: Norm.ApplyBF16: ", wantNoFit}, func() {
				n.ApplyBF16(Rows16{Dst: dst16, X: x16, Inv: inv, Mean: mean, N: l.rows, Stride: l.stride, DstStride: l.dststr})
			}, dst16)
			mustPanicUnwritten(t, name+"/ApplyF16", []string{"rmsnorm: Norm.ApplyF16: ", wantNoFit}, func() {
				n.ApplyF16(Rows16{Dst: dst16, X: x16, N: l.rows, Stride: l.stride, DstStride: l.dststr})
			}, dst16)
			mustPanicUnwritten(t, name+"/ApplyToBF16", []string{"rmsnorm: Norm.ApplyToBF16: ", wantNoFit}, func() {
				n.ApplyToBF16(RowsTo16{Dst: dst16, X: x, Residual: res, Inv: inv, Mean: mean, N: l.rows, Stride: l.stride, DstStride: l.dststr})
			}, dst16)
			mustPanicUnwritten(t, name+"/ApplyToF16", []string{"rmsnorm: Norm.ApplyToF16: ", wantNoFit}, func() {
				n.ApplyToF16(RowsTo16{Dst: dst16, X: x, N: l.rows, Stride: l.stride, DstStride: l.dststr})
			}, dst16)
			// inv, mean and res must survive the 16-bit calls too.
			for _, b := range [][]float32{res, inv, mean} {
				for i, v := range b {
					if v != b[0] {
						t.Fatalf("%s: element %d of a float32 buffer changed to %v", name, i, v)
					}
				}
			}
		}
	}
}

func TestBackwardSpanOverflow(t *testing.T) {
	for nname, n := range overflowNorms() {
		for _, l := range hugeLayouts {
			if l.dststr != 0 {
				continue // Grad has no DstStride: DX and DY take Stride
			}
			dx, dw := sentinels(12), sentinels(4)
			var db []float32
			if n.Bias != nil {
				db = sentinels(4)
			}
			mustPanicUnwritten(t, nname+"/"+l.name, []string{"rmsnorm: Norm.Backward: ", wantNoFit}, func() {
				n.Backward(Grad{DX: dx, DY: slices.Repeat([]float32{1}, 12), X: slices.Repeat([]float32{2}, 12), DW: dw, DB: db, N: l.rows, Stride: l.stride})
			}, dx, dw, db)
		}
	}
}

// TestQuo covers both halves of quo, the row count's division: in 32 bits when both operands fit,
// and in 64 bits for row lengths or slices past 2^32 elements, which the tests cannot allocate.
// The cases past 32 bits run where int has 64.
func TestQuo(t *testing.T) {
	for _, c := range [][2]int64{
		{0, 1}, {12, 4}, {13, 4}, {math.MaxInt32, 1}, {math.MaxInt32, 7},
		{math.MaxUint32, 1}, {math.MaxUint32, math.MaxUint32}, {math.MaxUint32 + 1, 1},
		{1 << 40, 3}, {math.MaxInt64, 7}, {math.MaxInt64, math.MaxUint32 + 2}, {5, math.MaxUint32 + 1},
	} {
		a, b := int(c[0]), int(c[1])
		if int64(a) != c[0] || int64(b) != c[1] {
			continue // past int on a 32-bit platform
		}
		if got, want := quo(a, b), a/b; got != want {
			t.Errorf("quo(%d, %d) = %d, want %d", a, b, got, want)
		}
	}
}
