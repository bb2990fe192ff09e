package rmsnorm

import (
	"math"
	"runtime"
)

// The generic kernel: the numeric contract in plain Go. It is compiled on every platform, serves
// where no SIMD kernel exists, and is the reference every other kernel is compared with bit for
// bit. Every float32(...) around a product below is there to forbid a fused multiply-add, which Go
// may otherwise use on arm64, ppc64le, s390x and riscv64, and on amd64 built with GOAMD64=v3 or
// above.

// runGeneric runs rows [from, to) of j and returns the index of the first row that needs the
// float64 path, or to.
func runGeneric(j *job, from, to int) int {
	if j.layer() {
		return runGenericLayer(j, from, to)
	}
	switch j.format {
	case formatF32:
	case formatToBF16, formatToF16:
		return runGenericTo16(j, from, to)
	default:
		return runGeneric16(j, from, to)
	}
	w := j.weight()
	for r := from; r < to; r++ {
		src := j.row(j.x, r)
		var ss float32
		if j.res != nil {
			h := j.row(j.res, r)
			addInto(h, src) // reads both rows in order
			src = h
		} else if j.flags&flagPF != 0 {
			touchRow(src)
		}
		ss = sumSquares(src)
		inv, ok := invRMS(ss, j.d, j.eps)
		if !ok {
			return r
		}
		dst := j.dstRow(r)
		switch j.mode {
		case weighted:
			scaleWeighted(dst, src, w, inv)
		case offset:
			scaleOffset(dst, src, w, inv)
		default:
			scaleUnweighted(dst, src, inv)
		}
		j.setInv(r, inv)
	}
	return to
}

// touchRow reads x once in order, an element per 64 bytes and the last one (x need not start a
// cache line). sumSquares walks a row eleven times with a stride of 256 bytes, an order in which
// a row coming from memory arrives more slowly than read straight through; runGeneric calls
// touchRow first for the rows that setMemoryFlags marks as coming from memory or lying a stride
// apart (flagPF). Forward 2048x4096 and 16384x4096 measured 10-17% faster with it on a Zen 5;
// rows back to back in cache never get flagPF.
func touchRow(x []float32) {
	if len(x) == 0 {
		return
	}
	t := math.Float32bits(x[len(x)-1])
	for i := 0; i < len(x); i += 16 {
		t |= math.Float32bits(x[i])
	}
	runtime.KeepAlive(t) // the loads are the point; their value is not
}

// tLow is the smallest t = ss/d + eps the float32 path accepts; below it the squares may have lost
// precision to underflow, and the row takes the float64 path.
const tLow = 0x1p-100

// invRMS returns 1/sqrt(ss/d + eps) in float32 and true, or false when the row must take the
// float64 path: t = ss/d + eps outside [2^-100, MaxFloat32], NaN included.
func invRMS(ss float32, d int, eps float32) (float32, bool) {
	t := ss/float32(d) + eps
	if !(t >= tLow && t <= math.MaxFloat32) {
		return 0, false
	}
	return 1 / float32(math.Sqrt(float64(t))), true
}

// sumSquares returns ss of the contract for x: 64 partials, element i into partial i%64, reduced
// by the halving tree. The loop walks the row once per group of six partials (ten groups, then the
// last four), so that the six sums and the squares on their way in fit in registers; each partial
// still sees its elements in increasing order. (Eight at a time spill one sum to the stack, which
// halves the speed.)
func sumSquares(x []float32) float32 {
	var p [64]float32
	full := len(x) &^ 63
	blocks := x[:full]
	c := 0
	for ; c < 60; c += 6 {
		var s0, s1, s2, s3, s4, s5 float32
		for i := c; i < full; i += 64 {
			v := (*[6]float32)(blocks[i : i+6])
			s0 += float32(v[0] * v[0])
			s1 += float32(v[1] * v[1])
			s2 += float32(v[2] * v[2])
			s3 += float32(v[3] * v[3])
			s4 += float32(v[4] * v[4])
			s5 += float32(v[5] * v[5])
		}
		p[c], p[c+1], p[c+2], p[c+3], p[c+4], p[c+5] = s0, s1, s2, s3, s4, s5
	}
	var s0, s1, s2, s3 float32
	for i := c; i < full; i += 64 {
		v := (*[4]float32)(blocks[i : i+4])
		s0 += float32(v[0] * v[0])
		s1 += float32(v[1] * v[1])
		s2 += float32(v[2] * v[2])
		s3 += float32(v[3] * v[3])
	}
	p[60], p[61], p[62], p[63] = s0, s1, s2, s3
	for i := full; i < len(x); i++ {
		p[i&63] += float32(x[i] * x[i])
	}
	return reduce64(&p)
}

// addInto sets h[i] = x[i] + h[i], rounded to float32.
func addInto(h, x []float32) {
	x = x[:len(h)]
	for i := range h {
		h[i] = x[i] + h[i]
	}
}

// reduce64 combines the partials by the contract's halving tree.
func reduce64(p *[64]float32) float32 {
	for h := 32; h > 0; h >>= 1 {
		for j := 0; j < h; j++ {
			p[j] += p[j+h]
		}
	}
	return p[0]
}

// scaleWeighted sets dst[i] = (x[i]*inv)*w[i].
func scaleWeighted(dst, x, w []float32, inv float32) {
	n := len(dst)
	x, w = x[:n], w[:n]
	i := 0
	for ; i+4 <= n; i += 4 {
		d4 := (*[4]float32)(dst[i : i+4])
		x4 := (*[4]float32)(x[i : i+4])
		w4 := (*[4]float32)(w[i : i+4])
		d4[0] = (x4[0] * inv) * w4[0]
		d4[1] = (x4[1] * inv) * w4[1]
		d4[2] = (x4[2] * inv) * w4[2]
		d4[3] = (x4[3] * inv) * w4[3]
	}
	for ; i < n; i++ {
		dst[i] = (x[i] * inv) * w[i]
	}
}

// scaleOffset sets dst[i] = (x[i]*inv)*(1+w[i]), with 1+w[i] rounded to float32.
func scaleOffset(dst, x, w []float32, inv float32) {
	n := len(dst)
	x, w = x[:n], w[:n]
	i := 0
	for ; i+4 <= n; i += 4 {
		d4 := (*[4]float32)(dst[i : i+4])
		x4 := (*[4]float32)(x[i : i+4])
		w4 := (*[4]float32)(w[i : i+4])
		d4[0] = (x4[0] * inv) * (1 + w4[0])
		d4[1] = (x4[1] * inv) * (1 + w4[1])
		d4[2] = (x4[2] * inv) * (1 + w4[2])
		d4[3] = (x4[3] * inv) * (1 + w4[3])
	}
	for ; i < n; i++ {
		dst[i] = (x[i] * inv) * (1 + w[i])
	}
}

// scaleUnweighted sets dst[i] = x[i]*inv.
func scaleUnweighted(dst, x []float32, inv float32) {
	n := len(dst)
	x = x[:n]
	i := 0
	for ; i+4 <= n; i += 4 {
		d4 := (*[4]float32)(dst[i : i+4])
		x4 := (*[4]float32)(x[i : i+4])
		d4[0] = x4[0] * inv
		d4[1] = x4[1] * inv
		d4[2] = x4[2] * inv
		d4[3] = x4[3] * inv
	}
	for ; i < n; i++ {
		dst[i] = x[i] * inv
	}
}

// rowFloat64 finishes row r on the float64 path of the contract. In the residual forms res
// already holds h for the row.
func (j *job) rowFloat64(r int) {
	src, _ := j.normalizedRow(r)
	var ss float64
	for _, v := range src {
		f := float64(v)
		ss += float64(f * f) // exact: a float32 square fits a float64
	}
	inv := 1 / math.Sqrt(ss/float64(j.d)+float64(j.eps))
	dst := j.dstRow(r)
	w := j.weight()
	for i, v := range src {
		y := float64(v) * inv
		switch j.mode {
		case weighted:
			y *= float64(w[i])
		case offset:
			y *= 1 + float64(w[i])
		}
		dst[i] = float32(y)
	}
	j.setInv(r, float32(inv))
}
