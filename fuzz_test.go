package rmsnorm

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/gosimd/rmsnorm/internal/streamrule"
)

// fuzzInput turns fuzzer bytes into a Forward call. The first byte picks how the values are
// made: raw float32 bits (every special value and extreme exponent), or bits whose exponent is
// folded into [2^-27, 2^27] so that most rows stay on the ordinary float32 path.
func fuzzInput(d16 uint16, rows8 uint8, epsBits uint32, data []byte) (x, w []float32, eps float32) {
	d := int(d16)%1100 + 1
	rows := int(rows8)%5 + 1
	eps = math.Float32frombits(epsBits &^ (1 << 31)) // non-negative
	if eps != eps || math.IsInf(float64(eps), 0) {
		eps = 0
	}
	raw := len(data) > 0 && data[0]&1 == 1
	if len(data) > 0 {
		data = data[1:]
	}
	value := func(i int) float32 {
		if len(data) < 4 {
			return float32(i%13) - 6
		}
		o := (4 * i) % (len(data) &^ 3)
		b := binary.LittleEndian.Uint32(data[o:])
		b ^= uint32(i/(len(data)/4)) * 0x9e3779b9 // vary when the bytes repeat
		if !raw {
			e := (b >> 23 & 0xff) % 55
			b = b&^(0xff<<23) | (100+e)<<23
		}
		return math.Float32frombits(b)
	}
	x = make([]float32, rows*d)
	for i := range x {
		x[i] = value(i)
	}
	w = make([]float32, d)
	for i := range w {
		w[i] = value(len(x) + i)
	}
	return x, w, eps
}

// addForwardSeeds adds the seeds of FuzzForward and FuzzForwardBF16, whose inputs have the same
// shape: one row, a group and a tail, 4096 with Inf-like bits, a row of 65, and five rows of 64
// with raw bits (the one-row path, in cache and streamed).
func addForwardSeeds(f *testing.F) {
	f.Add(uint16(1), uint8(0), math.Float32bits(1e-6), []byte{0, 0, 0, 64, 64, 0, 0, 128, 64})
	f.Add(uint16(127), uint8(2), math.Float32bits(1e-5), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(uint16(4096), uint8(1), uint32(0), []byte{1, 0xff, 0xff, 0x7f, 0x7f, 0, 0, 0x80, 0x7f})
	f.Add(uint16(65), uint8(3), uint32(0), []byte{1, 1, 0, 0, 0, 0, 0, 0, 0x80})
	f.Add(uint16(63), uint8(4), uint32(0), []byte{1, 0, 0, 0x80, 0x3f, 0, 0, 0x80, 0x1f, 1, 0, 0, 0})
	// Rows of 768 and 1024 that the AVX-512 function can take four at a time: four and five rows.
	f.Add(uint16(767), uint8(3), math.Float32bits(1e-6), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(uint16(1023), uint8(4), math.Float32bits(1e-5), []byte{0, 9, 9, 9, 64, 1, 2, 3, 200})
}

// FuzzForward runs Forward on the fuzzer's rows, every kernel against generic: out of place, in
// place, streamed (streamRows: rows of 64 and 128 through the one-row path's streamed loop), and
// with the AVX-512 groups of rows longer than groupMax on (withLongGroups).
func FuzzForward(f *testing.F) {
	addForwardSeeds(f)
	f.Fuzz(func(t *testing.T, d16 uint16, rows8 uint8, epsBits uint32, data []byte) {
		x, w, eps := fuzzInput(d16, rows8, epsBits, data)
		want := make([]float32, len(x))
		forwardWith(kernelGeneric, want, x, w, eps)
		for _, k := range testKernels() {
			got := make([]float32, len(x))
			forwardWith(k, got, x, w, eps)
			if i := firstDiff(got, want); i >= 0 {
				t.Fatalf("%s d=%d eps=%g: y[%d] = %v, generic gives %v", k, len(w), eps, i, got[i], want[i])
			}
			inPlace := append([]float32(nil), x...)
			forwardWith(k, inPlace, inPlace, w, eps)
			if i := firstDiff(inPlace, want); i >= 0 {
				t.Fatalf("%s d=%d eps=%g in place: y[%d] = %v, generic gives %v", k, len(w), eps, i, inPlace[i], want[i])
			}
			streamed := make([]float32, len(x))
			streamRows(func() { forwardWith(k, streamed, x, w, eps) })
			if i := firstDiff(streamed, want); i >= 0 {
				t.Fatalf("%s d=%d eps=%g streamed: y[%d] = %v, generic gives %v", k, len(w), eps, i, streamed[i], want[i])
			}
			grouped := make([]float32, len(x))
			withLongGroups(func() { forwardWith(k, grouped, x, w, eps) })
			if i := firstDiff(grouped, want); i >= 0 {
				t.Fatalf("%s d=%d eps=%g long groups: y[%d] = %v, generic gives %v", k, len(w), eps, i, grouped[i], want[i])
			}
		}
	})
}

// streamRows runs f with the memory flags of rows from memory forced on (withStreaming) and the
// rule that sends streamed rows of 64 and 128 one at a time through the one-row path
// (RowRule.Stream), whatever the CPU.
func streamRows(f func()) {
	defer func(r [2]streamrule.RowRule) { rowRules = r }(rowRules)
	rowRules = bothKernels(streamrule.RowRule{Stream: true})
	withStreaming(true, f)
}

// FuzzApply drives every variant of Norm.Apply: the flags byte picks the weight form, the
// residual, 1/rms out, in place and streaming stores; gap is Stride - d. With the top bit of
// rows8 the AVX-512 function groups rows longer than groupMax (withLongGroups), else as the
// CPU's rule says (the bit moves the row count too: rows8%5 + 1).
func FuzzApply(f *testing.F) {
	f.Add(uint16(4), uint8(2), uint8(0), uint8(0), math.Float32bits(1e-6), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(uint16(130), uint8(4), uint8(3), uint8(0x1d), math.Float32bits(1e-5), []byte{0, 9, 9, 9, 64, 1, 2, 3, 200})
	f.Add(uint16(513), uint8(9), uint8(1), uint8(0x2e), uint32(0), []byte{1, 0, 0, 0x80, 0x7f, 1, 2, 3, 4})
	f.Add(uint16(767), uint8(128), uint8(0), uint8(0x08), math.Float32bits(1e-6), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8}) // 4x768 in groups, with Inv
	f.Fuzz(func(t *testing.T, d16 uint16, rows8, gap8, flags uint8, epsBits uint32, data []byte) {
		x, w, eps := fuzzInput(d16, rows8, epsBits, data)
		d, rows := len(w), len(x)/len(w)
		if rows8&128 != 0 {
			defer func(on bool, g streamrule.F32Groups) { avx512LongGroups, f32Groups = on, g }(avx512LongGroups, f32Groups)
			avx512LongGroups, f32Groups = true, streamrule.F32Groups{Bytes: math.MaxInt}
		}
		res := make([]float32, len(x))
		for i := range res {
			res[i] = x[len(x)-1-i] * 0.5
		}
		c := vcase{
			mode:     weightMode(flags % 3),
			residual: flags&4 != 0,
			withInv:  flags&8 != 0,
			inPlace:  flags&16 != 0,
			stream:   flags&32 != 0,
			gap:      int(gap8 % 9),
		}
		for _, k := range testKernels() {
			checkVariant(t, "fuzz", k, c, formatF32, d, rows, x, res, w, eps, int(flags>>6)*5)
		}
	})
}

// fuzzInput16 turns fuzzer bytes into rows of raw 16-bit values (every pattern: NaN, Inf,
// subnormals and all) of d = d16%1100+1 elements, 1..5 rows, and a float32 weight.
func fuzzInput16(d16 uint16, rows8 uint8, epsBits uint32, data []byte) (x []uint16, w []float32, eps float32) {
	x32, w, eps := fuzzInput(d16, rows8, epsBits, data)
	x = make([]uint16, len(x32))
	for i, v := range x32 {
		x[i] = uint16(math.Float32bits(v) >> 16) // the bytes' own bits, not a rounding of them
	}
	if len(data) > 1 && data[1]&1 == 1 { // half the time values a 16-bit format holds finitely
		for i := range x {
			x[i] = x[i]&0x83ff | 0x3c00 // exponent near 1 in either format
		}
	}
	return x, w, eps
}

// FuzzForwardBF16 runs ForwardBF16 and ForwardF16 on the fuzzer's bits on every kernel, in place
// and not, against generic.
func FuzzForwardBF16(f *testing.F) {
	addForwardSeeds(f)
	f.Fuzz(func(t *testing.T, d16 uint16, rows8 uint8, epsBits uint32, data []byte) {
		x, w, eps := fuzzInput16(d16, rows8, epsBits, data)
		for _, fm := range formats16 {
			want := make([]uint16, len(x))
			forward16With(kernelGeneric, fm, want, x, w, eps)
			for _, k := range testKernels() {
				got := make([]uint16, len(x))
				forward16With(k, fm, got, x, w, eps)
				check16(t, fmt.Sprintf("%s %s d=%d eps=%g", k, fname(fm), len(w), eps), fm, got, want)
				inPlace := append([]uint16(nil), x...)
				forward16With(k, fm, inPlace, inPlace, w, eps)
				check16(t, fmt.Sprintf("%s %s d=%d eps=%g in place", k, fname(fm), len(w), eps), fm, inPlace, want)
			}
		}
	})
}

// FuzzApply16 drives every variant of ApplyBF16 and ApplyF16: the flags byte picks the weight
// form, the residual, 1/rms out, in place, streaming stores and RoundNormalized, its top bit the
// format; gap is Stride - d. With the top bit of rows8 the AVX-512 functions group rows longer
// than groupMax (avx512LongGroups on), else as the CPU's rule says.
func FuzzApply16(f *testing.F) {
	f.Add(uint16(4), uint8(2), uint8(0), uint8(0), math.Float32bits(1e-6), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(uint16(130), uint8(4), uint8(3), uint8(0x5d), math.Float32bits(1e-5), []byte{0, 9, 9, 9, 64, 1, 2, 3, 200})
	f.Add(uint16(513), uint8(9), uint8(1), uint8(0xee), uint32(0), []byte{1, 0, 0, 0x80, 0x7f, 1, 2, 3, 4})
	// Rows of 768 and 1024 in groups (the top bit of rows8): four and five rows.
	f.Add(uint16(767), uint8(128), uint8(0), uint8(0x00), math.Float32bits(1e-6), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(uint16(1023), uint8(129), uint8(2), uint8(0xc1), math.Float32bits(1e-5), []byte{0, 9, 9, 9, 64, 1, 2, 3, 200})
	f.Fuzz(func(t *testing.T, d16 uint16, rows8, gap8, flags uint8, epsBits uint32, data []byte) {
		x, w, eps := fuzzInput16(d16, rows8, epsBits, data)
		d, rows := len(w), len(x)/len(w)
		if rows8&128 != 0 {
			defer func(on bool) { avx512LongGroups = on }(avx512LongGroups)
			avx512LongGroups = true
		}
		res := make([]uint16, len(x))
		for i := range res {
			res[i] = x[len(x)-1-i] ^ 0x8000
		}
		fm := formatBF16
		if flags&128 != 0 {
			fm = formatF16
		}
		c := vcase{
			mode:     weightMode(flags % 3),
			residual: flags&4 != 0,
			withInv:  flags&8 != 0,
			inPlace:  flags&16 != 0,
			stream:   flags&32 != 0,
			rn:       flags&64 != 0,
			gap:      int(gap8 % 9),
		}
		for _, k := range testKernels() {
			checkVariant(t, "fuzz", k, c, fm, d, rows, x, res, w, eps, int(gap8>>4)%16)
		}
	})
}

// FuzzApplyTo16 drives every variant of ApplyToBF16 and ApplyToF16 on every kernel against
// generic, and on the active kernel against the two-pass reference (Apply, then the conversion;
// see checkTwoPass). The flags byte picks the weight form, the residual, 1/rms out, the format,
// streaming stores and RoundNormalized, its top bit DstStride; gap is Stride - d, dst%9 is
// DstStride - d and dst>>4 the start offset. The top bit of rows8 turns avx512LongGroups on, as
// in FuzzApply16.
func FuzzApplyTo16(f *testing.F) {
	f.Add(uint16(4), uint8(2), uint8(0), uint8(0), uint8(0), math.Float32bits(1e-6), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(uint16(128), uint8(4), uint8(5), uint8(0x30), uint8(0xcd), math.Float32bits(1e-5), []byte{0, 9, 9, 9, 64, 1, 2, 3, 200})
	f.Add(uint16(513), uint8(9), uint8(0), uint8(0x52), uint8(0xbe), uint32(0), []byte{1, 0, 0, 0x80, 0x7f, 1, 2, 3, 4})
	f.Add(uint16(767), uint8(128), uint8(0), uint8(0), uint8(0x10), math.Float32bits(1e-6), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8}) // 4x768 in groups
	f.Fuzz(func(t *testing.T, d16 uint16, rows8, gap8, dst8, flags uint8, epsBits uint32, data []byte) {
		x, w, eps := fuzzInput(d16, rows8, epsBits, data)
		d, rows := len(w), len(x)/len(w)
		if rows8&128 != 0 {
			defer func(on bool) { avx512LongGroups = on }(avx512LongGroups)
			avx512LongGroups = true
		}
		res := make([]float32, len(x))
		for i := range res {
			res[i] = x[len(x)-1-i] * 0.5
		}
		fm := formatToBF16
		if flags&16 != 0 {
			fm = formatToF16
		}
		c := vcase{
			mode:     weightMode(flags % 3),
			residual: flags&4 != 0,
			withInv:  flags&8 != 0,
			stream:   flags&32 != 0,
			rn:       flags&64 != 0,
			gap:      int(gap8 % 9),
			setDst:   flags&128 != 0,
			dstGap:   int(dst8 % 9),
		}
		for _, k := range testKernels() {
			checkVariantTo16(t, "fuzz", k, c, fm, d, rows, x, res, w, eps, int(dst8>>4))
		}

		// The same rows through the public method against Apply and the conversion.
		lay := to16Layout{n: rows, stride: d + c.gap}
		if c.setDst {
			lay.dstStride = d + c.dstGap
		}
		xs := make([]float32, (rows-1)*lay.stride+d)
		rs := make([]float32, len(xs))
		for r := range rows {
			copy(xs[r*lay.stride:], x[r*d:(r+1)*d])
			copy(rs[r*lay.stride:], res[r*d:(r+1)*d])
		}
		if !c.residual {
			rs = nil
		}
		n := normFor(c.mode, w, eps)
		n.RoundNormalized = c.rn
		checkTwoPass(t, fmt.Sprintf("%s %s %s d=%d rows=%d", activeKernel(), fname(fm), c, d, rows), n, fm, d, rows, lay, xs, rs, c.withInv)
	})
}
