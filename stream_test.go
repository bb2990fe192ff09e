package rmsnorm

import (
	"fmt"
	"math"
	"testing"
	"unsafe"
)

// withStreaming runs f with the memory flags of rows from memory (non-temporal stores, prefetches,
// the generic kernel's touchRow) forced on or off, whatever the size. Forced on, it takes the AVX2
// kernel's pipe (flagPipe) on every other call, whatever the CPU, so that the tests that stream run
// the kernels both ways.
func withStreaming(on bool, f func()) {
	saved, savedPipe := streamBytes, pipeRows
	defer func() { streamBytes, pipeRows = saved, savedPipe }()
	streamBytes = math.MaxInt
	if on {
		streamBytes = 0
		streamCalls++
		pipeRows = streamCalls%2 == 0
	}
	f()
}

// streamCalls counts the calls of withStreaming that stream.
var streamCalls int

// aligned32 returns n float32s from a 32-byte boundary, the alignment the pipe needs for dst,
// preceded and followed by guard values (pre elements before, which shift the start).
func aligned32(n, pre int) (s, all []float32) {
	all = make([]float32, n+pre+16)
	off := 0
	for uintptr(unsafe.Pointer(&all[off]))%32 != 0 {
		off++
	}
	for i := range all {
		all[i] = guardValue
	}
	return all[off+pre : off+pre+n : off+pre+n], all
}

// TestPipe runs streamed float32 rows through the pipe (flagPipe) and without it, on every kernel,
// against generic: rows that can take it (d a multiple of 64 above groupMax, dst aligned) and rows
// that cannot, strides, DstStride, each weight form, Inv, and a row in the middle that takes the
// float64 path, which the pipe reaches from the row before it.
func TestPipe(t *testing.T) {
	type shape struct{ d, rows, stride, dstStride, pre int }
	var shapes []shape
	for _, d := range []int{576, 640, 1024, 1088, 4096, 600, 512} {
		for _, rows := range []int{1, 2, 3, 7} {
			shapes = append(shapes,
				shape{d, rows, 0, 0, 0},
				shape{d, rows, d + 3, d + 8, 0}, // x strided, dst rows 32-byte apart
				shape{d, rows, d + 8, d + 5, 0}, // dst rows not all aligned: no pipe
				shape{d, rows, 0, 0, 1},         // dst not aligned: no pipe
			)
		}
	}
	piped := 0
	for _, k := range testKernels() {
		for _, sh := range shapes {
			for _, form := range []string{"weighted", "offset", "noweight"} {
				for _, f64Row := range []int{-1, 1} {
					if f64Row >= sh.rows {
						continue
					}
					name := fmt.Sprintf("%s/d=%d/rows=%d/stride=%d/dstStride=%d/pre=%d/%s/f64row=%d",
						k.name(), sh.d, sh.rows, sh.stride, sh.dstStride, sh.pre, form, f64Row)
					stride, dstStride := sh.stride, sh.dstStride
					if stride == 0 {
						stride = sh.d
					}
					if dstStride == 0 {
						dstStride = stride
					}
					x := normalRows(stride, sh.rows, sh.d+sh.pre)
					eps := float32(1e-6)
					if f64Row >= 0 {
						// A row of zeros with eps = 0: t = 0, below 2^-100, takes the float64 path.
						clear(x[f64Row*stride : f64Row*stride+sh.d])
						eps = 0
					}
					n := Norm{Eps: eps, Dim: sh.d}
					switch form {
					case "weighted":
						n.Weight = normalRows(sh.d, 1, 7)
					case "offset":
						n.Weight, n.UnitOffset = normalRows(sh.d, 1, 8), true
					}
					span := (sh.rows-1)*dstStride + sh.d
					want, wantAll := aligned32(span, sh.pre)
					wantInv := make([]float32, sh.rows)
					applyWith(kernelGeneric, &n, &Rows{Dst: want, X: x[:(sh.rows-1)*stride+sh.d], N: sh.rows, Stride: stride, DstStride: dstStride, Inv: wantInv})
					for _, pipe := range []bool{false, true} {
						got, gotAll := aligned32(span, sh.pre)
						gotInv := make([]float32, sh.rows)
						r := Rows{Dst: got, X: x[:(sh.rows-1)*stride+sh.d], N: sh.rows, Stride: stride, DstStride: dstStride, Inv: gotInv}
						withStreaming(true, func() {
							pipeRows = pipe
							if pipe && k == kernelAVX2 && sh.rows > 1 {
								j := job{dst: unsafe.Pointer(&got[0]), d: sh.d, dstStride: dstStride}
								if j.pipes() {
									piped++
								}
							}
							applyWith(k, &n, &r)
						})
						if i := firstDiff(gotAll, wantAll); i >= 0 {
							t.Fatalf("%s pipe=%v: element %d of dst's buffer (guards included) = %#x, want %#x",
								name, pipe, i, math.Float32bits(gotAll[i]), math.Float32bits(wantAll[i]))
						}
						if i := firstDiff(gotInv, wantInv); i >= 0 {
							t.Fatalf("%s pipe=%v: inv[%d] = %v, want %v", name, pipe, i, gotInv[i], wantInv[i])
						}
					}
				}
			}
		}
	}
	if testing.Verbose() {
		t.Logf("%d calls on avx2 could take the pipe", piped)
	}
	for _, k := range testKernels() {
		if k == kernelAVX2 && piped == 0 {
			t.Fatal("no call on avx2 could take the pipe: the test does not cover it")
		}
	}
}
