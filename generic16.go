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
	w := j.weight()
	var buf [chunk]float32
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
		for c := 0; c < d; c += chunk {
			part := buf[:min(chunk, d-c)]
			for i := range part {
				v := f.widen(src[c+i])
				p[i&63] += float32(v * v)
			}
		}
		inv, ok := invRMS(reduce64(&p), d, j.eps)
		if !ok {
			return r
		}
		dst := j.row16(j.dst, r)
		for c := 0; c < d; c += chunk {
			part := buf[:min(chunk, d-c)]
			for i := range part {
				part[i] = f.widen(src[c+i])
			}
			var ww []float32
			if w != nil {
				ww = w[c : c+len(part)]
			}
			scale16(part, ww, inv, j.mode, j.rn(), f)
			for i, v := range part {
				dst[c+i] = f.narrow(v)
			}
		}
		j.setInv(r, inv)
	}
	return to
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

// rowFloat64of16 finishes 16-bit row r on the float64 path: the float32 contract's float64 path on
// the widened row (res already holds h in the residual forms), each output narrowed from its
// float32 result. With rn, x*inv is rounded to float32 and then to the format before the weight.
func (j *job) rowFloat64of16(r int) {
	f := j.format
	src := j.row16(j.x, r)
	if j.res != nil {
		src = j.row16(j.res, r)
	}
	var ss float64
	for _, h := range src {
		v := float64(f.widen(h))
		ss += v * v // exact: a float32 square fits a float64
	}
	inv := 1 / math.Sqrt(ss/float64(j.d)+float64(j.eps))
	dst := j.row16(j.dst, r)
	w := j.weight()
	for i, h := range src {
		y := float64(f.widen(h)) * inv
		if j.rn() {
			y = float64(f.round(float32(y)))
		}
		switch j.mode {
		case weighted:
			y *= float64(w[i])
		case offset:
			y *= 1 + float64(w[i])
		}
		dst[i] = f.narrow(float32(y))
	}
	j.setInv(r, float32(inv))
}
