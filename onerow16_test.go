package rmsnorm

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"unsafe"
)

// row16Input returns the input of a single-row test: a row of d of value class c in format f,
// a normal weight, both drawn from r, and the eps of the seed (0, 1e-6 or 1e-5).
func row16Input(f format, d int, c valueClass, r *rand.Rand, seed int) (x []uint16, w []float32, eps float32) {
	x32 := make([]float32, d)
	fill(x32, c, r)
	w = make([]float32, d)
	fill(w, classNormal, r)
	return narrowAll(x32, f), w, []float32{0, 1e-6, 1e-5}[seed]
}

// f16RowClasses are the value classes of TestCallRowF16 beside valueClasses (which, narrowed to
// binary16, lose their tiny values to zero and their huge ones to ±Inf): values among binary16's
// subnormals, and values near its largest finite one.
var f16RowClasses = append(slices.Clone(valueClasses),
	valueClass{"f16subnormal", func(r *rand.Rand, i int) float32 { return normalValue(r) * 2e-6 }},
	valueClass{"f16large", func(r *rand.Rand, i int) float32 { return normalValue(r) * 3e4 }},
)

// TestCallRowF16 calls each kernel's binary16 row functions (callRowF16, and callRowF16Buf, the
// one through a float32 copy on its stack, which ForwardF16, Norm.ForwardF16 and ApplyF16 take
// for one row in cache) straight, on rows inside buffers of a NaN pattern: with a row function
// (the copy's: rows of at most 4096), a row of a multiple of 64 whose t is in range comes out
// with generic's bits, out of place and in place, and nothing else is written; a row it leaves (t
// out of range, a length not a multiple of 64 or too long, a kernel without the function)
// returns rowNone with nothing written at all. ForwardF16 and ApplyF16 (its short path,
// packedRows) on the same row, which go through them, match generic too, with the copy's rule
// (f16Buffer) off, on for every length and as the machine has it.
func TestCallRowF16(t *testing.T) {
	const pad = 32
	const guard = 0x7e5a // a NaN no kernel writes: the generic kernel's NaN is 0x7e00
	padded := func(d int) (row, buf []uint16) { return paddedRow(d, pad, uint16(guard)) }
	for _, k := range testKernels() {
		for _, d := range oneRowDims {
			for ci, c := range f16RowClasses {
				for seed := range 3 {
					r := seedFor(d, ci, seed, 71)
					x, w, eps := row16Input(formatF16, d, c, r, seed)
					name := fmt.Sprintf("%s/d=%d/%s/seed=%d", k.name(), d, c.name, seed)

					want := make([]uint16, d)
					forwardRows(&forwardF16Names, formatF16, want, x, w, eps, kernelGeneric)
					// ForwardF16 and ApplyF16 with the copy's rule off, on for every row it can
					// take, and as the machine has it.
					for _, rule := range [][2]int{span(1, 0), span(64, 1<<20), f16Buffer} {
						saved := f16Buffer
						f16Buffer = rule
						got := make([]uint16, d)
						forwardRows(&forwardF16Names, formatF16, got, x, w, eps, k)
						applied := make([]uint16, d)
						ok := packedRows(&rowsOf[uint16, uint16]{Dst: applied, X: x}, formatF16, w, eps, 0, nil, k)
						f16Buffer = saved
						if !ok {
							t.Fatalf("%s: ApplyF16's short path declined a valid row", name)
						}
						for i := range got {
							if !same16(got[i], want[i], formatF16) {
								t.Fatalf("%s, copy for rows %v: ForwardF16: y[%d] = %#04x, generic %#04x", name, rule, i, got[i], want[i])
							}
							if !same16(applied[i], want[i], formatF16) {
								t.Fatalf("%s, copy for rows %v: ApplyF16: y[%d] = %#04x, generic %#04x", name, rule, i, applied[i], want[i])
							}
						}
					}

					_, inRange := invRMS(sumSquares(widenAll(x, formatF16)), d, eps) // false: the float64 path's row
					otherX, other := make([]uint16, d), make([]uint16, d)
					for i, v := range x {
						otherX[i] = v ^ 0x8000 ^ uint16(i&1)<<8 // -x, and every other element changed more
					}
					for _, fn := range []struct {
						name string
						call func(dst, x, res, w unsafe.Pointer, d int, eps float32, k kernelID) int
						has  bool
					}{{"callRowF16", callRowF16, hasRowFunc(k)}, {"callRowF16Buf", callRowF16Buf, hasRowF16Buf(k) && d <= 4096}} {
						wantRet := rowNone
						if fn.has && d%64 == 0 && inRange {
							wantRet = rowDone
						}
						for _, inPlace := range []bool{false, true} {
							dst, buf := padded(d)
							src := x
							if inPlace {
								copy(dst, x)
								src = dst
							}
							before := slices.Clone(buf)
							// Another row first, through the same function from the same frame: a
							// value the copy on the stack misses would be that row's.
							fn.call(ptr(other), ptr(otherX), nil, ptr(w), d, eps, k)
							if ret := fn.call(ptr(dst), ptr(src), nil, ptr(w), d, eps, k); ret != wantRet {
								t.Fatalf("%s, in place %v: %s returned %d, want %d", name, inPlace, fn.name, ret, wantRet)
							}
							if wantRet == rowNone {
								if i := slices.Compare(buf, before); i != 0 {
									t.Fatalf("%s, in place %v: %s returned rowNone and changed dst's buffer", name, inPlace, fn.name)
								}
								continue
							}
							for i := range dst {
								if !same16(dst[i], want[i], formatF16) {
									t.Fatalf("%s, in place %v: %s: y[%d] = %#04x, generic %#04x", name, inPlace, fn.name, i, dst[i], want[i])
								}
							}
							for i := range pad {
								if buf[i] != guard || buf[pad+d+i] != guard {
									t.Fatalf("%s, in place %v: %s wrote outside the row", name, inPlace, fn.name)
								}
							}
						}
					}
				}
			}
		}
	}
}

// paddedRow returns a row of d inside a buffer of pad elements more at each end, every element
// set to fill (a NaN that shows a write), and the buffer (TestCallRow, TestCallRowF16).
func paddedRow[T elem](d, pad int, fill T) (row, buf []T) {
	buf = make([]T, d+2*pad)
	for i := range buf {
		buf[i] = fill
	}
	return buf[pad : pad+d], buf
}

// TestCallRowF16Declines: callRowF16 and callRowF16Buf return rowNone and write nothing for a
// row of length 0, which their callers never pass but the functions test anyway, and for a kernel
// id past their tables.
func TestCallRowF16Declines(t *testing.T) {
	x, w := narrowAll(ones(64), formatF16), ones(64)
	dst := make([]uint16, 64)
	for i := range dst {
		dst[i] = 0x7e5a
	}
	for _, fn := range []struct {
		name string
		call func(dst, x, res, w unsafe.Pointer, d int, eps float32, k kernelID) int
	}{{"callRowF16", callRowF16}, {"callRowF16Buf", callRowF16Buf}} {
		for _, k := range append(testKernels(), kernelID(len(kernelNames)), kernelID(1<<31)) {
			if got := fn.call(ptr(dst), ptr(x), nil, ptr(w), 0, 1e-6, k); got != rowNone {
				t.Errorf("kernel %d: %s returned %d for a row of length 0", k, fn.name, got)
			}
		}
		for _, k := range []kernelID{kernelID(len(kernelNames)), kernelID(1 << 31)} {
			if got := fn.call(ptr(dst), ptr(x), nil, ptr(w), 64, 1e-6, k); got != rowNone {
				t.Errorf("kernel id %d, past the table: %s returned %d", k, fn.name, got)
			}
		}
		for i, y := range dst {
			if y != 0x7e5a {
				t.Fatalf("%s wrote dst[%d] on a row it declined", fn.name, i)
			}
		}
	}
}

// TestRow16LayerNormBias: a LayerNorm of a bias alone (no Center) on one binary16 or bfloat16 row
// of a multiple of 64, which packedRows takes, keeps its bias: the row functions, which have
// none, are not for it. Against generic, by Norm.ForwardF16 and ApplyF16, Norm.ForwardBF16 and
// ApplyBF16.
func TestRow16LayerNormBias(t *testing.T) {
	defer active.Store(active.Load())
	for _, f := range []format{formatF16, formatBF16} {
		for _, d := range []int{64, 1024} {
			x := narrowAll(normalRows(d, 1, 3), f)
			n := Norm{Weight: normalRows(d, 1, 4), Bias: normalRows(d, 1, 5), Eps: 1e-6}
			want := make([]uint16, d)
			applyKernel(kernelGeneric, &n, f, &rowsOf[uint16, uint16]{Dst: want, X: x})
			forward := map[format]func(y []uint16){formatF16: func(y []uint16) { n.ForwardF16(y, x) }, formatBF16: func(y []uint16) { n.ForwardBF16(y, x) }}[f]
			apply := map[format]func(Rows16){formatF16: n.ApplyF16, formatBF16: n.ApplyBF16}[f]
			suffix := map[format]string{formatF16: "F16", formatBF16: "BF16"}[f]
			for _, k := range testKernels() {
				active.Store(uint32(k))
				for _, c := range []struct {
					name string
					f    func(y []uint16)
				}{{"Norm.Forward" + suffix, forward}, {"Apply" + suffix, func(y []uint16) { apply(Rows16{Dst: y, X: x}) }}} {
					y := make([]uint16, d)
					c.f(y)
					for i := range y {
						if !same16(y[i], want[i], f) {
							t.Fatalf("%s d=%d %s: y[%d] = %#04x, generic %#04x", k, d, c.name, i, y[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestRowF16BufStack runs ForwardF16 on rows the row function with the float32 copy takes (a
// frame of 16 KiB) from new goroutines, whose stacks start smaller than that unless the runtime
// has learned to start them larger, so that the function's entry grows them (morestack) before
// it runs: the rows come out with generic's bits.
func TestRowF16BufStack(t *testing.T) {
	saved := f16Buffer
	f16Buffer = span(64, 4096)
	defer func() { f16Buffer = saved }()
	for _, d := range []int{64, 1024, 4096} {
		x := narrowAll(normalRows(d, 1, d), formatF16)
		w := normalRows(d, 1, d+1)
		want := make([]uint16, d)
		forwardRows(&forwardF16Names, formatF16, want, x, w, 1e-6, kernelGeneric)
		for _, k := range testKernels() {
			got := make([]uint16, d)
			var wg sync.WaitGroup
			wg.Go(func() { forwardRows(&forwardF16Names, formatF16, got, x, w, 1e-6, k) })
			wg.Wait()
			for i := range got {
				if !same16(got[i], want[i], formatF16) {
					t.Fatalf("%s, d=%d, from a new goroutine: y[%d] = %#04x, generic %#04x", k.name(), d, i, got[i], want[i])
				}
			}
		}
	}
}
