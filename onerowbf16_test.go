package rmsnorm

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"unsafe"
)

// TestCallRowBF16 calls each kernel's bfloat16 row function (callRowBF16, which ForwardBF16,
// Norm.ForwardBF16 and ApplyBF16 take for one row in cache) straight, on rows inside buffers of
// a NaN pattern: with a row function, a row of a multiple of 64 whose t is in range comes out with
// generic's bits, out of place and in place, and nothing else is written; a row it leaves (t out of
// range, a length not a multiple of 64, a kernel without the function) returns rowNone with
// nothing written at all. ForwardBF16 and ApplyBF16 (its short path, packedRows) on the same row
// match generic too. Rows of more than 512, out of place, take the avx512+bf16 function's loop
// that reads MXCSR's flags; TestRowBF16FlaggedLanes gives it the lanes only that check finds.
func TestCallRowBF16(t *testing.T) {
	for _, k := range testKernels() {
		for _, d := range oneRowDims {
			for ci, c := range valueClasses {
				for seed := range 3 {
					r := seedFor(d, ci, seed, 73)
					x, w, eps := row16Input(formatBF16, d, c, r, seed)
					name := fmt.Sprintf("%s/d=%d/%s/seed=%d", k.name(), d, c.name, seed)

					want := make([]uint16, d)
					forwardRows(&forwardBF16Names, formatBF16, want, x, w, eps, kernelGeneric)
					got := make([]uint16, d)
					forwardRows(&forwardBF16Names, formatBF16, got, x, w, eps, k)
					check16Exact(t, name+": ForwardBF16", got, want)
					applied := make([]uint16, d)
					if !packedRows(&rowsOf[uint16, uint16]{Dst: applied, X: x}, formatBF16, w, eps, 0, nil, k) {
						t.Fatalf("%s: ApplyBF16's short path declined a valid row", name)
					}
					check16Exact(t, name+": ApplyBF16", applied, want)

					_, inRange := invRMS(sumSquares(widenAll(x, formatBF16)), d, eps) // false: the float64 path's row
					wantRet := rowNone
					if hasRowBF16(k) && d%64 == 0 && inRange {
						wantRet = rowDone
					}
					checkRowCall(t, name+": callRowBF16", formatBF16, callRowBF16, k, x, w, eps, want, wantRet)
				}
			}
		}
	}
}

// TestCallRowBF16RangeEdge: a row whose t = ss/d + eps is exactly 2^-100, the smallest t in
// range (x = 2^-50 in every lane, eps 0), is the row function's (rowDone, generic's bits), not
// the float64 path's; ForwardBF16 on every kernel gives generic's bits for it.
func TestCallRowBF16RangeEdge(t *testing.T) {
	for _, d := range []int{64, 192, 1024} {
		x := narrowAll(slices.Repeat([]float32{0x1p-50}, d), formatBF16)
		w := normalRows(d, 1, 7)
		if s := sumSquares(widenAll(x, formatBF16)) / float32(d); s != 0x1p-100 {
			t.Fatalf("d=%d: ss/d = %g, want 2^-100", d, s)
		}
		want := make([]uint16, d)
		forwardRows(&forwardBF16Names, formatBF16, want, x, w, 0, kernelGeneric)
		for _, k := range testKernels() {
			got := make([]uint16, d)
			forwardRows(&forwardBF16Names, formatBF16, got, x, w, 0, k)
			check16Exact(t, fmt.Sprintf("%s d=%d t = 2^-100: ForwardBF16", k, d), got, want)
			if hasRowBF16(k) {
				got := make([]uint16, d)
				if ret := callRowBF16(ptr(got), ptr(x), nil, ptr(w), d, 0, k); ret != rowDone {
					t.Fatalf("%s d=%d: callRowBF16 returned %d for t = 2^-100, want rowDone", k, d, ret)
				}
				check16Exact(t, fmt.Sprintf("%s d=%d t = 2^-100: callRowBF16", k, d), got, want)
			}
		}
	}
}

// checkRowCall calls call, a row function of 16-bit format f (its callRow+kind), with kernel k
// on the row x (weight w, eps) inside a buffer of a NaN pattern no kernel writes, out of place and
// in place, and fails unless it returns wantRet and, for rowDone, the row holds want (bit for bit
// for bfloat16, NaN payloads aside for binary16) and nothing outside it is written; for rowNone,
// nothing at all.
func checkRowCall(t *testing.T, name string, f format, call func(dst, x, res, w unsafe.Pointer, d int, eps float32, k kernelID) int,
	k kernelID, x []uint16, w []float32, eps float32, want []uint16, wantRet int) {
	t.Helper()
	const pad = 32
	guard := map[format]uint16{formatBF16: 0x7fa5, formatF16: 0x7e5a}[f] // the contract's NaNs are 0x7fc0, 0x7e00
	d := len(x)
	for _, inPlace := range []bool{false, true} {
		ctx := fmt.Sprintf("%s, in place %v", name, inPlace)
		dst, buf := paddedRow(d, pad, guard)
		src := x
		if inPlace {
			copy(dst, x)
			src = dst
		}
		before := slices.Clone(buf)
		if ret := call(ptr(dst), ptr(src), nil, ptr(w), d, eps, k); ret != wantRet {
			t.Fatalf("%s: returned %d, want %d", ctx, ret, wantRet)
		}
		if wantRet == rowNone {
			if slices.Compare(buf, before) != 0 {
				t.Fatalf("%s: returned rowNone and changed dst's buffer", ctx)
			}
			continue
		}
		if f == formatBF16 {
			check16Exact(t, ctx, dst, want)
		} else {
			check16(t, ctx, f, dst, want)
		}
		for i := range pad {
			if buf[i] != guard || buf[pad+d+i] != guard {
				t.Fatalf("%s: wrote outside the row", ctx)
			}
		}
	}
}

// TestCallRowBF16Declines: callRowBF16 returns rowNone and writes nothing for a row of length 0,
// which its callers never pass but the functions test anyway, and for a kernel id past its table.
func TestCallRowBF16Declines(t *testing.T) {
	x, w := narrowAll(ones(64), formatBF16), ones(64)
	dst := make([]uint16, 64)
	for i := range dst {
		dst[i] = 0x7fa5
	}
	for _, k := range append(testKernels(), kernelID(len(kernelNames)), kernelID(1<<31)) {
		if got := callRowBF16(ptr(dst), ptr(x), nil, ptr(w), 0, 1e-6, k); got != rowNone {
			t.Errorf("kernel %d: callRowBF16 returned %d for a row of length 0", k, got)
		}
	}
	for _, k := range []kernelID{kernelID(len(kernelNames)), kernelID(1 << 31)} {
		if got := callRowBF16(ptr(dst), ptr(x), nil, ptr(w), 64, 1e-6, k); got != rowNone {
			t.Errorf("kernel id %d, past the table: callRowBF16 returned %d", k, got)
		}
	}
	for i, y := range dst {
		if y != 0x7fa5 {
			t.Fatalf("callRowBF16 wrote dst[%d] on a row it declined", i)
		}
	}
}

// rowBF16Lanes are the lanes of TestRowBF16FlaggedLanes, as TestBF16FlaggedLanes makes them: set
// makes lane p of the row (x about 2^50, so inv about 2^-50) one that VCVTNE2PS2BF16 rounds
// otherwise than the contract, and that only the check of the products finds.
var rowBF16Lanes = []struct {
	name string
	set  func(x, w []float32, p int)
}{
	// x*inv about 2^-110 and y about 2^-128, a bfloat16 subnormal, from normal operands.
	{"subnormal y from normal x*inv and weight", func(x, w []float32, p int) { x[p], w[p] = 0x1p-60, 0x1p-18 }},
	// x*inv about 2^-130, a subnormal product; with a weight of 2^8 y is normal.
	{"subnormal x*inv", func(x, w []float32, p int) { x[p], w[p] = 0x1p-80, 0x1p8 }},
	{"quiet NaN weight, payload", func(x, w []float32, p int) { w[p] = math.Float32frombits(0x7fc12345) }},
	{"quiet NaN weight, negative", func(x, w []float32, p int) { w[p] = math.Float32frombits(0xffc00000) }},
}

// TestRowBF16FlaggedLanes gives the bfloat16 row functions the lanes that VCVTNE2PS2BF16 narrows
// otherwise than the contract and that no multiply flags, one per call, in each vector of the
// first, a middle and the last iteration of the scale loop, on single rows around 512 and 256 (the
// longest rows the avx512+bf16 functions classify vector by vector out of place, without and with
// RoundNormalized) and longer, out of place (longer rows: the loop without the classification,
// then MXCSR's flags, then the row again, classified) and in place (classified), with and without
// RoundNormalized: ForwardBF16, ApplyBF16 and the row functions straight (callRowBF16,
// callRowBF16RN) give generic's bits on every kernel.
func TestRowBF16FlaggedLanes(t *testing.T) {
	logBF16Paths(t)
	const big = 0x1p50
	dims := []int{256, 320, 448, 512, 576, 1024, 4096}
	if testing.Short() {
		dims = []int{320, 576}
	}
	calls := 0
	for _, d := range dims {
		var positions []int
		for _, base := range []int{0, (d/128)*64 - 64, d - 64} { // the first, a middle and the last iteration
			for _, off := range []int{0, 17, 33, 63} { // each vector of it
				positions = append(positions, base+off)
			}
		}
		for _, ln := range rowBF16Lanes {
			for _, p := range positions {
				for _, rn := range []bool{false, true} {
					x32, _, w, _ := normalInputs(seedFor(d, p, 79), 1, d)
					for i := range x32 {
						x32[i] *= big
					}
					ln.set(x32, w, p)
					x := narrowAll(x32, formatBF16)
					n := Norm{Weight: w, Eps: 1e-6, RoundNormalized: rn}
					want := make([]uint16, d)
					applyKernel(kernelGeneric, &n, formatBF16, &rowsOf[uint16, uint16]{Dst: want, X: x})
					for _, k := range testKernels() {
						for _, inPlace := range []bool{false, true} {
							ctx := fmt.Sprintf("%s %s: d=%d p=%d rn=%v inplace=%v", k, ln.name, d, p, rn, inPlace)
							out := func() []uint16 {
								if inPlace {
									return slices.Clone(x)
								}
								return make([]uint16, d)
							}
							src := func(dst []uint16) []uint16 {
								if inPlace {
									return dst
								}
								return x
							}
							var got []uint16
							if !rn {
								got = out()
								forwardRows(&forwardBF16Names, formatBF16, got, src(got), w, 1e-6, k)
								check16Exact(t, ctx+" ForwardBF16", got, want)
							}
							got = out()
							applyKernel(k, &n, formatBF16, &rowsOf[uint16, uint16]{Dst: got, X: src(got)})
							check16Exact(t, ctx+" ApplyBF16", got, want)
							if hasRowBF16(k) {
								got = out()
								if ret := rowCallBF16(rn)(ptr(got), ptr(src(got)), nil, ptr(w), d, 1e-6, k); ret != rowDone {
									t.Fatalf("%s: the row function returned %d, want rowDone", ctx, ret)
								}
								check16Exact(t, ctx+" the row function", got, want)
							}
							calls++
						}
					}
				}
			}
		}
	}
	t.Logf("%d calls on kernels %v", calls, testKernels())
}
