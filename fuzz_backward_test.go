package rmsnorm

import (
	"fmt"
	"math"
	"testing"
)

// FuzzBackward drives Norm.Backward on the fuzzer's bits and compares every kernel's DX and DW
// with the generic kernel's, bit for bit (NaN payloads aside), the elements between strided rows
// included. The flags byte picks:
//
//	flags%3     the weight form (weighted, UnitOffset, no weight)
//	flags&4     Inv given: the forward's, or with flags&64 arbitrary bits from the input (the
//	            contract uses Grad.Inv as given on float32-path rows, so every kernel must too)
//	flags&8     DW accumulated (from nonzero values), when the Norm has a weight
//	flags&16    in place: DX is DY
//	flags&32    Workers = 3, every call split (the blocks of 32 rows over goroutines)
//	flags&128   13 times the rows (up to 65: several gradient blocks), each copy scaled (see
//	            tileRows)
//
// Each kernel also runs every input streamed with the backward pipe on, whatever the CPU and the
// row length (pipedBackward), DX 32-byte aligned: RMSNorm's rows (no Center, no bias) of a
// multiple of 64, out of place, a gap of 0 or 8, two or more, take the pipe.
// gap is Stride - d (gap8%9; 0: rows back to back, N = 0 on odd flags). gap8&128 makes the Norm a
// LayerNorm (Center; Grad.Mean given with Inv, the forward's), and gap8&64 gives it a bias and
// sums DB (from nonzero values).
func FuzzBackward(f *testing.F) {
	f.Add(uint16(4), uint8(2), uint8(0), uint8(0x0c), math.Float32bits(1e-6), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(uint16(130), uint8(4), uint8(3), uint8(0x9d), math.Float32bits(1e-5), []byte{0, 9, 9, 9, 64, 1, 2, 3, 200})
	f.Add(uint16(63), uint8(3), uint8(1), uint8(0xb9), uint32(0), []byte{1, 0, 0, 0x80, 0x7f, 1, 2, 3, 4})
	f.Add(uint16(1), uint8(4), uint8(0), uint8(0xe0), math.Float32bits(0.5), []byte{0, 0xff, 0xff, 0x7f, 0x7f, 0, 0, 0x80, 0x3f})
	f.Add(uint16(700), uint8(1), uint8(8), uint8(0x4e), math.Float32bits(1e-6), []byte{1, 1, 0, 0, 0, 0, 0, 0, 0x80})
	f.Add(uint16(130), uint8(4), uint8(0xc3), uint8(0x9d), math.Float32bits(1e-5), []byte{0, 9, 9, 9, 64, 1, 2, 3, 200})
	f.Add(uint16(5), uint8(3), uint8(0x80), uint8(0x2c), math.Float32bits(1e-12), []byte{1, 0, 0, 0x80, 0x7f, 1, 2, 3, 4})
	f.Add(uint16(127), uint8(4), uint8(0), uint8(0x8c), math.Float32bits(1e-6), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(uint16(1023), uint8(2), uint8(8), uint8(0x2d), math.Float32bits(1e-6), []byte{1, 3, 0, 0x80, 0x3f, 7, 0, 0x20, 0x41})
	f.Fuzz(func(t *testing.T, d16 uint16, rows8, gap8, flags uint8, epsBits uint32, data []byte) {
		x, w, eps := fuzzInput(d16, rows8, epsBits, data)
		// DY from the same bytes, read from another place: rotate them by one.
		rot := data
		if len(data) > 2 {
			rot = append(append([]byte{data[0]}, data[2:]...), data[1])
		}
		dy, dw0, _ := fuzzInput(d16, rows8, epsBits, rot)
		for i := range dw0 {
			dw0[i] = float32(i%7) - 2.75 // DW accumulates into finite nonzero values
		}
		d := len(w)
		if flags&128 != 0 {
			x, dy = tileRows(x, d, 13), tileRows(dy, d, 13)
		}
		rows := len(x) / d
		mode := weightMode(flags % 3)
		withInv, invBits, withDW := flags&4 != 0, flags&64 != 0, flags&8 != 0 && mode != unweighted
		inPlace := flags&16 != 0
		gap := int(gap8 % 9)
		stride := d + gap
		span := (rows-1)*stride + d
		n := normFor(mode, w, eps)
		n.Center = gap8&128 != 0
		var db0 []float32
		if gap8&64 != 0 {
			n.Bias, db0 = dy[:d], dw0 // the bias's values do not enter the gradient
		}
		if flags&32 != 0 {
			splitAll(t)
			n.Workers = 3
		}
		nArg, sArg := rows, stride
		if gap == 0 && flags&1 == 1 {
			nArg, sArg = 0, 0
		}
		sx, sdy := sentinels(span), sentinels(span)
		for r := range rows {
			copy(sx[r*stride:], x[r*d:(r+1)*d])
			copy(sdy[r*stride:], dy[r*d:(r+1)*d])
		}
		var inv, mean []float32
		if withInv {
			inv = make([]float32, rows)
			if n.Center {
				mean = make([]float32, rows)
			}
			if invBits {
				for r := range inv {
					inv[r] = dy[(r*d+r)%len(dy)]
				}
				for r := range mean {
					mean[r] = x[(r*d+2*r)%len(x)]
				}
			} else {
				f := normFor(mode, w, eps)
				f.Center = n.Center
				rs := rowsOf[float32, float32]{Dst: make([]float32, span), X: sx, N: nArg, Stride: sArg, Inv: inv, Mean: mean}
				if !applyRows(&f, &rs, formatF32, kernelGeneric) {
					t.Fatal("the forward pass rejected the rows")
				}
			}
		}
		run := func(k kernelID, piped bool) (dx, dw, db []float32) {
			dx = sentinels(span)
			if piped {
				a, _ := aligned32[float32](span, 0)
				copy(a, dx)
				dx = a
			}
			g := Grad{DX: dx, X: sx, DY: append([]float32(nil), sdy...), N: nArg, Stride: sArg, Inv: inv, Mean: mean}
			if db0 != nil {
				g.DB = append([]float32(nil), db0...)
			}
			if inPlace {
				g.DX = g.DY
			}
			if withDW {
				g.DW = append([]float32(nil), dw0...)
			}
			if piped {
				pipedBackward(func() { backwardWith(k, n, g) })
			} else {
				backwardWith(k, n, g)
			}
			return g.DX, g.DW, g.DB
		}
		wantDX, wantDW, wantDB := run(kernelGeneric, false)
		for _, k := range testKernels() {
			for _, piped := range []bool{false, true} {
				gotDX, gotDW, gotDB := run(k, piped)
				ctx := fmt.Sprintf("%s piped=%v d=%d rows=%d stride=%d mode=%d center=%v eps=%g flags=%#x", k, piped, d, rows, stride, mode, n.Center, eps, flags)
				if i := firstDiff(gotDB, wantDB); i >= 0 {
					t.Fatalf("%s: DB[%d] = %v (%#x), generic gives %v (%#x)", ctx, i,
						gotDB[i], math.Float32bits(gotDB[i]), wantDB[i], math.Float32bits(wantDB[i]))
				}
				if i := firstDiff(gotDX, wantDX); i >= 0 {
					t.Fatalf("%s: DX[%d] (row %d) = %v (%#x), generic gives %v (%#x)", ctx, i, i/stride,
						gotDX[i], math.Float32bits(gotDX[i]), wantDX[i], math.Float32bits(wantDX[i]))
				}
				if i := firstDiff(gotDW, wantDW); i >= 0 {
					t.Fatalf("%s: DW[%d] = %v (%#x), generic gives %v (%#x)", ctx, i,
						gotDW[i], math.Float32bits(gotDW[i]), wantDW[i], math.Float32bits(wantDW[i]))
				}
			}
		}
	})
}

// pipedBackward runs f with the memory flags of rows from memory forced on, the backward's
// prefetches ahead and its pipe too, for every row length (backPipeAbove zero).
func pipedBackward(f func()) {
	saved, savedAhead, savedPipe, savedAbove := streamBytes, aheadRows, backPipe, backPipeAbove
	defer func() { streamBytes, aheadRows, backPipe, backPipeAbove = saved, savedAhead, savedPipe, savedAbove }()
	streamBytes, aheadRows, backPipe, backPipeAbove = 0, true, true, [2]int{}
	f()
}

// tileRows returns the rows of x (of d values) repeated times times, copy c scaled by 1 + c/4, so
// that a few rows of fuzzer input fill several blocks of the weight gradient; copy 6 is scaled by
// 1e20 instead, which sends most rows of ordinary values to the float64 path in the middle of a
// block.
func tileRows(x []float32, d, times int) []float32 {
	out := make([]float32, 0, len(x)*times)
	for c := range times {
		s := 1 + float32(c)/4
		if c == 6 {
			s = 1e20
		}
		for _, v := range x {
			out = append(out, v*s)
		}
	}
	return out
}
