package rmsnorm

import (
	"math"
	"unsafe"
)

// The generic kernel for rows stored in 16 bits: the float32 contract on the widened rows, the
// residual rounded to the format, and the output narrowed, as the package documentation
// specifies. Rows are widened a chunk at a time into a buffer on the stack, so that the float32
// arithmetic is exactly runGeneric's.

// chunk is how many elements the generic 16-bit kernel widens at a time: whole blocks of the 64
// partial sums, so that partial i%64 still sees element i.
const chunk = 4 * 64

// row16 returns row r of the 16-bit rows starting at p.
func (j *job) row16(p unsafe.Pointer, r int) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Add(p, uintptr(r*j.stride)*2)), j.d)
}

// runGeneric16 is runGeneric for 16-bit rows.
func runGeneric16(j *job, from, to int) int {
	f, d := j.format, j.d
	for r := from; r < to; r++ {
		src := j.row16(j.x, r)
		if j.res != nil {
			h := j.row16(j.res, r)
			for i, v := range src {
				h[i] = f.narrow(f.widen(v) + f.widen(h[i]))
			}
			src = h
		}
		var p [64]float32
		for i, h := range src {
			v := f.widen(h)
			p[i&63] += float32(v * v)
		}
		inv, ok := invRMS(reduce64(&p), d, j.eps)
		if !ok {
			return r
		}
		j.scaleInto16(j.dstRow16(r), inv, nil, src)
		j.setInv(r, inv)
	}
	return to
}

// runGenericTo16 is runGeneric for float32 rows normalized into 16-bit ones (RowsTo16): the sum,
// the residual and inv exactly as runGeneric's, the output narrowed as runGeneric16's.
func runGenericTo16(j *job, from, to int) int {
	d := j.d
	for r := from; r < to; r++ {
		src := j.row(j.x, r)
		if j.res != nil {
			h := j.row(j.res, r)
			addInto(h, src)
			src = h
		} else if j.flags&flagPF != 0 {
			touchRow(src)
		}
		inv, ok := invRMS(sumSquares(src), d, j.eps)
		if !ok {
			return r
		}
		j.scaleInto16(j.dstRow16(r), inv, src, nil)
		j.setInv(r, inv)
	}
	return to
}

// scaleInto16 writes the 16-bit output row dst of the row x32 (float32) or x16 (16-bit, widened)
// with this inv, a chunk at a time: scale16, then one rounding. (Slices, not a func value that
// loads a chunk: the chunk passed to one would move buf to the heap.)
func (j *job) scaleInto16(dst []uint16, inv float32, x32 []float32, x16 []uint16) {
	f, w := j.format, j.weight()
	var buf [chunk]float32
	for c := 0; c < j.d; c += chunk {
		part := buf[:min(chunk, j.d-c)]
		if x16 != nil {
			widenInto(part, x16[c:], f)
		} else {
			copy(part, x32[c:])
		}
		var ww []float32
		if w != nil {
			ww = w[c : c+len(part)]
		}
		switch {
		case j.rn():
			scale16(part, ww, inv, j.mode, true, f)
		case j.mode == weighted: // the float32 kernel's loops, in place: the same products
			scaleWeighted(part, part, ww, inv)
		case j.mode == offset:
			scaleOffset(part, part, ww, inv)
		default:
			scaleUnweighted(part, part, inv)
		}
		narrowInto(dst[c:c+len(part)], part, f)
	}
}

// narrowInto rounds src to the 16-bit format f (or f's out) into dst, a loop per format.
func narrowInto(dst []uint16, src []float32, f format) {
	dst = dst[:len(src)]
	if f.out() == formatBF16 {
		for i, v := range src {
			dst[i] = float32ToBF16(v)
		}
		return
	}
	for i, v := range src {
		dst[i] = float32ToF16(v)
	}
}

// scale16 sets x[i] to the value the output is narrowed from: (x[i]*inv)*w[i] in the job's weight
// form, with x[i]*inv rounded to the format first when rn (RoundNormalized).
func scale16(x, w []float32, inv float32, mode weightMode, rn bool, f format) {
	for i, v := range x {
		n := v * inv
		if rn {
			n = f.round(n)
		}
		switch mode {
		case weighted:
			n *= w[i]
		case offset:
			n *= 1 + w[i]
		}
		x[i] = n
	}
}

// rowFloat64of16 finishes row r of 16-bit output on the float64 path: the float32 contract's
// float64 path on the row (widened from 16 bits, or float32 for RowsTo16; res already holds h in
// the residual forms), each output narrowed from its float32 result. With rn, x*inv is rounded to
// float32 and then to the format before the weight. It works a chunk at a time in a buffer on the
// stack (chunkOf, as LayerNorm's rows): each y goes into the buffer and the chunk is narrowed at
// once.
func (j *job) rowFloat64of16(r int) {
	f, w := j.format, j.weight()
	x32, x16 := j.normalizedRow(r)
	var buf [chunk]float32
	var ss float64
	for c := 0; c < j.d; c += chunk {
		for _, v := range chunkOf(j, x32, x16, c, &buf) {
			ss += float64(v) * float64(v) // exact: a float32 square fits a float64
		}
	}
	inv := 1 / math.Sqrt(ss/float64(j.d)+float64(j.eps))
	dst, rn := j.dstRow16(r), j.rn()
	for c := 0; c < j.d; c += chunk {
		part := chunkOf(j, x32, x16, c, &buf)
		out := buf[:len(part)] // part itself when widened: each y replaces its x
		for i, v := range part {
			y := float64(v) * inv
			if rn {
				y = float64(f.round(float32(y)))
			}
			switch j.mode {
			case weighted:
				y *= float64(w[c+i])
			case offset:
				y *= 1 + float64(w[c+i])
			}
			out[i] = float32(y)
		}
		narrowInto(dst[c:c+len(out)], out, f)
	}
	j.setInv(r, float32(inv))
}

// widenInto widens the first len(dst) elements of src, of the 16-bit format f (or f's out), into
// dst, a loop per format.
func widenInto(dst []float32, src []uint16, f format) {
	src = src[:len(dst)]
	if f.out() == formatBF16 {
		for i, h := range src {
			dst[i] = bf16ToFloat32(h)
		}
		return
	}
	for i, h := range src {
		dst[i] = f16ToFloat32(h)
	}
}
