package rmsnorm

import (
	"fmt"
	"math"
	"testing"
)

// TestBackwardClassLater covers the rows whose class (the float32 path or the float64 one) the
// avx2 kernel decides after their other sums (LayerNorm's of g and g*n, RMSNorm's of g*x), from
// their largest |x|, when the job has Inv (and, centered, Mean): rows at the bound (2^48, no class passes needed) and just above it (the class
// passes after the sums, still the float32 path), rows on the float64 path by a huge element
// (first or last, in a whole vector or in the scalar end of a row; 1e25, whose square overflows)
// or by an infinity or a NaN, eps at and below the end of the range that lets the class wait
// (2^-100; 0, with a constant row on the float64 path) and large (2^100, 2^101, MaxFloat32), the forward's Mean and Inv and arbitrary ones. Every kernel
// against generic, DX, DW and DB, rows one after another so that a row that takes its class
// passes late is followed by rows that do not; RMSNorm's streamed too, where the pipe sums the rows
// after the first.
func TestBackwardClassLater(t *testing.T) {
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
		{"constant", func(row []float32) { // LayerNorm: variance 0, t = eps
			for i := range row {
				row[i] = 2.5
			}
		}},
		{"zero", func(row []float32) { // RMSNorm: t = eps
			for i := range row {
				row[i] = 0
			}
		}},
		{"tiny", func(row []float32) { // squares that underflow
			for i := range row {
				row[i] = 1e-30 * float32(1+i%3)
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
			for _, c := range []struct {
				center bool
				given  string
			}{{true, "forward"}, {true, "arbitrary"}, {false, "forward"}, {false, "arbitrary"}} {
				given := c.given
				n := Norm{Weight: w, Eps: e}
				if c.center {
					n.Center, n.Bias = true, b
				}
				inv, mean := make([]float32, rows), make([]float32, rows)
				if given == "forward" {
					r := Rows{Dst: make([]float32, len(x)), X: x, Inv: inv}
					if c.center {
						r.Mean = mean
					}
					n.Apply(r)
				} else {
					for r := range rows {
						inv[r], mean[r] = 0.5+float32(r), float32(r)-2
					}
				}
				run := func(k kernelID, stream bool) (dx, dw, db []float32) {
					g := Grad{DX: make([]float32, len(x)), X: x, DY: dy, Inv: inv, DW: make([]float32, d)}
					if c.center {
						g.Mean, g.DB = mean, make([]float32, d)
					}
					withStreaming(stream, func() { backwardWith(k, n, g) })
					return g.DX, g.DW, g.DB
				}
				wdx, wdw, wdb := run(kernelGeneric, false)
				for _, kc := range testKernels() {
					k := kc
					for _, stream := range []bool{false, true} {
						gdx, gdw, gdb := run(k, stream)
						for _, o := range []struct {
							name      string
							got, want []float32
						}{{"DX", gdx, wdx}, {"DW", gdw, wdw}, {"DB", gdb, wdb}} {
							if i := firstDiff(o.got, o.want); i >= 0 {
								what := o.name
								if o.name == "DX" {
									what = fmt.Sprintf("DX of row %d (%s)", i/d, kinds[i/d].name)
								}
								t.Fatalf("%s d=%d eps=%g center=%v stream=%v %s Mean and Inv: %s: element %d = %v, generic gives %v",
									k, d, e, c.center, stream, given, what, i, o.got[i], o.want[i])
							}
						}
					}
				}
			}
		}
	}
}

// TestBackwardClassLaterEveryPosition puts an element whose square overflows (so its row is on the
// float64 path) at every position of a row in turn, so that each vector of the unrolled loops and
// each element of a row's end finds it, in the loops every weight form and memory mode runs:
// RMSNorm's and LayerNorm's rows, with a weight, UnitOffset or none, each in cache, streamed
// (flagPF, flagNT) and streamed with the backward's prefetches ahead (flagAhead), without the pipe
// (whose rows skip these loops; TestBackwardClassLater streams with it); back to back and strided,
// DX apart, in place or none, DB with and without DW, Workers 1 and 3, spread over the
// combinations; Inv (and Mean) from the forward. Every kernel against generic.
func TestBackwardClassLaterEveryPosition(t *testing.T) {
	type config struct {
		center  bool
		mode    weightMode
		memory  string // "cache", "stream", "ahead"
		stride  bool   // rows d+3 apart
		dx      string // "apart", "inplace", "none"
		db      bool   // LayerNorm: DB, and DW unless dx is "none"
		workers int
	}
	var configs []config
	i := 0
	for _, center := range []bool{false, true} {
		for _, mode := range []weightMode{weighted, offset, unweighted} {
			for _, memory := range []string{"cache", "stream", "ahead"} {
				configs = append(configs, config{center, mode, memory, i%2 == 1,
					[]string{"apart", "inplace", "none", "apart"}[i%4], center && i%3 != 2, 1 + 2*(i%5/4)})
				i++
			}
		}
	}
	const rows = 3
	for _, d := range []int{1, 3, 8, 9, 16, 63, 64, 65, 71, 100, 128, 131, 200} {
		w, b := normalRows(d, 1, 7*d), normalRows(d, 1, 7*d+1)
		for p := range d {
			for ci, c := range configs {
				stride := d
				if c.stride {
					stride = d + 3
				}
				span := (rows-1)*stride + d
				x, dy := normalRows(span, 1, d+p), normalRows(span, 1, d+p+1)
				x[stride+p] = [2]float32{1e20, -1e20}[p%2] // row 1: its square overflows
				n := Norm{Dim: d, Eps: 1e-6, Center: c.center, Workers: c.workers}
				if c.mode != unweighted {
					n.Weight, n.Dim, n.UnitOffset = w, 0, c.mode == offset
				}
				if c.center && c.db {
					n.Bias = b
				}
				inv, mean := make([]float32, rows), make([]float32, rows)
				fr := Rows{Dst: make([]float32, span), X: x, N: rows, Stride: stride, Inv: inv}
				if c.center {
					fr.Mean = mean
				}
				n.Apply(fr)
				run := func(k kernelID) (dx, dw, db []float32) {
					g := Grad{X: x, DY: append([]float32(nil), dy...), N: rows, Stride: stride, Inv: inv}
					if c.center {
						g.Mean = mean
					}
					switch c.dx {
					case "apart":
						g.DX = make([]float32, span)
					case "inplace":
						g.DX = g.DY
					}
					if c.mode != unweighted && (c.dx != "none" || !c.db) {
						g.DW = make([]float32, d)
					}
					if c.center && c.db {
						g.DB = make([]float32, d)
					}
					withStreaming(c.memory != "cache", func() {
						aheadRows, backPipe = c.memory == "ahead", false
						backwardWith(k, n, g)
					})
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
							t.Fatalf("%s d=%d huge at %d, config %d %+v: %s[%d] = %v, generic gives %v",
								k, d, p, ci, c, o.name, i, o.got[i], o.want[i])
						}
					}
				}
			}
		}
	}
}
