package rmsnorm

import (
	"fmt"
	"testing"
	"unsafe"
)

// TestPipeTo16 is TestPipe for float32 rows into float16 ones (ApplyToF16), whose avx2 function
// pipes too: the loop that writes a row's halves with non-temporal stores sums the next row's
// squares. Every call, pipe on and off, gives generic's bits in dst's buffer (guards included) and
// in Inv, on rows back to back, strided, with dst rows 32 bytes apart or not (rows that are not
// all aligned are not piped), with a row on the float64 path, with each weight form, with
// RoundNormalized (which is not piped), and as LayerNorm: Center with and without a bias (piped:
// the loop subtracts the mean, adds the bias and sums the next row's elements) and a bias alone
// (not piped). ApplyToBF16, which has no pipe, runs on the same calls: the flag must change
// nothing there either.
func TestPipeTo16(t *testing.T) {
	piped := map[kernelID]int{}
	for _, f := range []format{formatToF16, formatToBF16} {
		checkPipe16[float32](t, f, piped)
	}
	requirePiped(t, formatToF16, piped)
}

// TestPipe16 is TestPipeTo16 for float16 rows in and out (ApplyF16), whose avx2 function pipes
// as well: the loop widens the next row's halves as it sums them. ApplyBF16, which has no pipe,
// runs on the same calls.
func TestPipe16(t *testing.T) {
	piped := map[kernelID]int{}
	for _, f := range []format{formatF16, formatBF16} {
		checkPipe16[uint16](t, f, piped)
	}
	requirePiped(t, formatF16, piped)
}

// checkPipe16 runs the calls of TestPipeTo16 in format f, rows of T (float32, or 16-bit rows of
// the format, rounded from the same values) into 16-bit rows, on every kernel against generic,
// pipe on and off, and counts in piped the calls that could take the pipe.
func checkPipe16[T elem](t *testing.T, f format, piped map[kernelID]int) {
	t.Helper()
	var shapes []pipeShape
	for _, d := range []int{576, 1024, 2112, 4096, 600, 512} {
		for _, rows := range []int{1, 2, 3, 7} {
			shapes = append(shapes,
				pipeShape{d, rows, 0, 0, 0},
				pipeShape{d, rows, d + 3, d + 16, 0}, // x strided, dst rows 32 bytes apart
				pipeShape{d, rows, d + 8, d + 8, 0},  // dst rows 16 bytes apart: not piped
				pipeShape{d, rows, 0, 0, 1},          // dst not aligned: no pipe
			)
		}
	}
	for _, k := range testKernels() {
		for _, sh := range shapes {
			for _, form := range []string{"weighted", "offset", "noweight", "rn", "layer", "layerNoBias", "biasOnly"} {
				for _, f64Row := range []int{-1, 1} {
					if f64Row >= sh.rows {
						continue
					}
					name := fmt.Sprintf("%s/%s/%v/%s/f64row=%d", k.name(), fnameAll(f), sh, form, f64Row)
					stride, dstStride := sh.strides()
					x32, eps := sh.input(f64Row)
					x32 = x32[:(sh.rows-1)*stride+sh.d]
					n := Norm{Eps: eps, Dim: sh.d}
					switch form {
					case "weighted":
						n.Weight = normalRows(sh.d, 1, 7)
					case "offset":
						n.Weight, n.UnitOffset = normalRows(sh.d, 1, 8), true
					case "rn":
						n.Weight, n.RoundNormalized = normalRows(sh.d, 1, 9), true
					case "layer": // LayerNorm: piped too, its loop subtracting the mean and adding the bias
						n.Weight, n.Bias, n.Center = normalRows(sh.d, 1, 10), normalRows(sh.d, 1, 11), true
					case "layerNoBias":
						n.Weight, n.Center = normalRows(sh.d, 1, 12), true
					case "biasOnly": // a bias without Center: the Layer function, never piped
						n.Weight, n.Bias = normalRows(sh.d, 1, 13), normalRows(sh.d, 1, 14)
					}
					if n.Center {
						for i := range x32 {
							x32[i] += 3 // a mean to subtract
						}
					}
					x := rowsIn[T](f, x32)
					span := (sh.rows-1)*dstStride + sh.d
					want, wantAll := aligned32[uint16](span, sh.pre)
					wantInv := make([]float32, sh.rows)
					applyKernel(kernelGeneric, &n, f, &rowsOf[uint16, T]{Dst: want, X: x, N: sh.rows, Stride: stride, DstStride: dstStride, Inv: wantInv})
					for _, pipe := range []bool{false, true} {
						got, gotAll := aligned32[uint16](span, sh.pre)
						gotInv := make([]float32, sh.rows)
						withStreaming(true, func() {
							pipeRows = pipe
							if pipe && sh.rows > 1 && pipeKernel(k, f) && !n.RoundNormalized && (n.Bias == nil || n.Center) {
								j := job{dst: unsafe.Pointer(&got[0]), d: sh.d, dstStride: dstStride, format: f}
								if j.pipes() {
									piped[k]++
								}
							}
							applyKernel(k, &n, f, &rowsOf[uint16, T]{Dst: got, X: x, N: sh.rows, Stride: stride, DstStride: dstStride, Inv: gotInv})
						})
						for i := range wantAll {
							if gotAll[i] != wantAll[i] {
								t.Fatalf("%s pipe=%v: element %d of dst's buffer (guards included) = %#04x, want %#04x",
									name, pipe, i, gotAll[i], wantAll[i])
							}
						}
						if i := firstDiff(gotInv, wantInv); i >= 0 {
							t.Fatalf("%s pipe=%v: Inv[%d] = %v, want %v", name, pipe, i, gotInv[i], wantInv[i])
						}
					}
				}
			}
		}
	}
}

// rowsIn returns the rows x32 as rows of T: themselves for float32, else rounded to the 16-bit
// format f holds its rows in.
func rowsIn[T elem](f format, x32 []float32) []T {
	if xs, ok := any(x32).([]T); ok {
		return xs
	}
	x := make([]uint16, len(x32))
	if f == formatBF16 {
		Float32ToBF16(x, x32)
	} else {
		Float32ToF16(x, x32)
	}
	return any(x).([]T)
}
