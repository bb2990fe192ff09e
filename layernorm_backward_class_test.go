package rmsnorm

import (
	"fmt"
	"math"
	"testing"
)

// TestLayerNormBackwardClassLater covers the rows whose class (the float32 path or the float64 one)
// the avx2 kernel decides after their sums of g and g*n, from their largest |x|, when the job has
// Mean and Inv: rows at the bound (2^48, no class passes needed) and just above it (the class
// passes after the sums, still the float32 path), rows on the float64 path by a huge element
// (first or last, in a whole vector or in the scalar end of a row; 1e25, whose square overflows)
// or by an infinity or a NaN, eps at and below the end of the range that lets the class wait
// (2^-100; 0, with a constant row on the float64 path) and large (2^100, 2^101, MaxFloat32), the forward's Mean and Inv and arbitrary ones. Every kernel
// against generic, DX, DW and DB, rows one after another so that a row that takes its class
// passes late is followed by rows that do not.
func TestLayerNormBackwardClassLater(t *testing.T) {
	bound := float32(1 << 48)
	above := math.Nextafter32(bound, float32(math.Inf(1)))
	type rowKind struct {
		name string
		set  func(row []float32)
	}
	kinds := []rowKind{
		{"normal", func([]float32) {}},
		{"2^48 first", func(row []float32) { row[0] = -bound }},
		{"above 2^48 last", func(row []float32) { row[len(row)-1] = above }},
		{"above 2^48 first", func(row []float32) { row[0] = -above }},
		{"huge last", func(row []float32) { row[len(row)-1] = 3e38 }},
		{"huge first", func(row []float32) { row[0] = -3e38 }},
		{"huge alternating", func(row []float32) {
			for i := range row {
				row[i] = [2]float32{3e38, -3e38}[i%2]
			}
		}},
		{"1e25 in the middle", func(row []float32) { row[len(row)/2] = 1e25 }}, // its square overflows
		{"infinite", func(row []float32) { row[len(row)/2] = float32(math.Inf(1)) }},
		{"NaN", func(row []float32) { row[len(row)-1] = float32(math.NaN()) }},
		{"constant", func(row []float32) {
			for i := range row {
				row[i] = 2.5
			}
		}},
	}
	eps := []float32{1e-5, 1e-12, 0x1p-100, 0x1p100, 0x1p101, math.MaxFloat32, math.Nextafter32(0x1p-100, 0), 0}
	for _, d := range []int{1, 7, 8, 17, 64, 100, 1000} {
		rows := len(kinds)
		x := normalRows(d, rows, d)
		for r, k := range kinds {
			k.set(x[r*d : (r+1)*d])
		}
		dy, w, b := normalRows(d, rows, d+1), normalRows(d, 1, d+2), normalRows(d, 1, d+3)
		for _, e := range eps {
			for _, given := range []string{"forward", "arbitrary"} {
				n := Norm{Weight: w, Bias: b, Center: true, Eps: e}
				inv, mean := make([]float32, rows), make([]float32, rows)
				if given == "forward" {
					n.Apply(Rows{Dst: make([]float32, len(x)), X: x, Inv: inv, Mean: mean})
				} else {
					for r := range rows {
						inv[r], mean[r] = 0.5+float32(r), float32(r)-2
					}
				}
				run := func(k kernelID) (dx, dw, db []float32) {
					g := Grad{DX: make([]float32, len(x)), X: x, DY: dy, Inv: inv, Mean: mean,
						DW: make([]float32, d), DB: make([]float32, d)}
					backwardWith(k, n, g)
					return g.DX, g.DW, g.DB
				}
				wdx, wdw, wdb := run(kernelGeneric)
				for _, k := range testKernels() {
					gdx, gdw, gdb := run(k)
					for _, o := range []struct {
						name      string
						got, want []float32
					}{{"DX", gdx, wdx}, {"DW", gdw, wdw}, {"DB", gdb, wdb}} {
						if i := firstDiff(o.got, o.want); i >= 0 {
							what := o.name
							if o.name == "DX" {
								what = fmt.Sprintf("DX of row %d (%s)", i/d, kinds[i/d].name)
							}
							t.Fatalf("%s d=%d eps=%g %s Mean and Inv: %s: element %d = %v, generic gives %v",
								k, d, e, given, what, i, o.got[i], o.want[i])
						}
					}
				}
			}
		}
	}
}
