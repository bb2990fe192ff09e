package rmsnorm

import (
	"fmt"
	"math"
	"testing"
)

// TestPipeLayer is TestPipe for LayerNorm's float32 rows: the pipe (flagPipe) scales a row with
// the mean subtracted and the bias added while it sums the next row's elements for its mean.
// Streamed rows with the pipe and without it, on every kernel, against generic: Center on (piped)
// and off (never piped), with and without a bias, each weight form, Inv and Mean or neither, rows
// that can take the pipe and rows that cannot, a row in the middle of -0 (its sum starts at +0, so
// its mean is +0), and a row in the middle that takes the float64 path, by its variance (a
// constant row with eps = 0, or squares that overflow) or by its sum (an infinity), which the pipe
// reaches from the row before it.
func TestPipeLayer(t *testing.T) {
	var shapes []pipeShape
	for _, d := range []int{576, 1024, 4096, 600, 512} {
		for _, rows := range []int{1, 2, 3, 5} {
			shapes = append(shapes,
				pipeShape{d, rows, 0, 0, 0},
				pipeShape{d, rows, d + 3, d + 8, 0}, // x strided, dst rows 32-byte apart
				pipeShape{d, rows, 0, 0, 1},         // dst not aligned: no pipe
			)
		}
	}
	piped := map[kernelID]int{}
	for _, k := range testKernels() {
		for si, sh := range shapes {
			for _, form := range []string{"weighted", "offset", "noweight"} {
				for _, center := range []bool{true, false} {
					for _, bias := range []bool{true, false} {
						if !center && !bias {
							continue // not a LayerNorm
						}
						for _, f64 := range []string{"", "negzero", "constant", "overflow", "infinite"} {
							f64Row := -1
							if f64 != "" && sh.rows > 1 {
								f64Row = 1
							} else if f64 != "" {
								continue
							}
							name := fmt.Sprintf("%s/%v/%s/center=%v/bias=%v/f64=%q", k.name(), sh, form, center, bias, f64)
							stride, dstStride := sh.strides()
							x := normalRows(stride, sh.rows, sh.d+si)
							for i := range x {
								x[i] += 3 // a mean to subtract
							}
							eps := float32(1e-5)
							if f64Row >= 0 {
								row := x[f64Row*stride : f64Row*stride+sh.d]
								switch f64 {
								case "constant": // variance 0, t = eps = 0: below 2^-100
									for i := range row {
										row[i] = 2.5
									}
									eps = 0
								case "negzero": // not the float64 path: mean +0, every output -0 times w, plus b
									for i := range row {
										row[i] = float32(math.Copysign(0, -1))
									}
								case "overflow": // sum 0, squares +Inf: t out of range
									for i := range row {
										row[i] = [2]float32{3e38, -3e38}[i%2]
									}
								case "infinite": // the sum is not finite
									row[sh.d/2] = float32(math.Inf(1))
								}
							}
							n := Norm{Eps: eps, Dim: sh.d, Center: center}
							switch form {
							case "weighted":
								n.Weight = normalRows(sh.d, 1, 7)
							case "offset":
								n.Weight, n.UnitOffset = normalRows(sh.d, 1, 8), true
							}
							if bias {
								n.Bias = normalRows(sh.d, 1, 11)
							}
							span := (sh.rows-1)*dstStride + sh.d
							xs := x[:(sh.rows-1)*stride+sh.d]
							want, wantAll := aligned32[float32](span, sh.pre)
							outs := (si+len(f64))%3 != 0 // Inv and Mean, or neither
							var wantInv, gotInv, wantMean, gotMean []float32
							if outs {
								wantInv = make([]float32, sh.rows)
							}
							if outs && center {
								wantMean = make([]float32, sh.rows)
							}
							applyWith(kernelGeneric, &n, &Rows{Dst: want, X: xs, N: sh.rows, Stride: stride, DstStride: dstStride, Inv: wantInv, Mean: wantMean})
							for _, pipe := range []bool{false, true} {
								got, gotAll := aligned32[float32](span, sh.pre)
								if outs {
									gotInv = make([]float32, sh.rows)
								}
								if outs && center {
									gotMean = make([]float32, sh.rows)
								}
								r := Rows{Dst: got, X: xs, N: sh.rows, Stride: stride, DstStride: dstStride, Inv: gotInv, Mean: gotMean}
								if streamPiped(k, pipe, sh.rows > 1 && center, sh.d, dstStride, got, func() { applyWith(k, &n, &r) }) {
									piped[k]++
								}
								samePiped(t, fmt.Sprintf("%s pipe=%v", name, pipe), gotAll, wantAll,
									pipeOut{"inv", gotInv, wantInv}, pipeOut{"mean", gotMean, wantMean})
							}
						}
					}
				}
			}
		}
	}
	requirePiped(t, formatF32, piped)
}
