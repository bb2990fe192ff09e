package rmsnorm

import "math"

// The generic kernel: the numeric contract in plain Go. It is compiled on every platform, serves
// where no SIMD kernel exists, and is the reference every other kernel is compared with bit for
// bit. Every float32(...) around a product below is there to forbid a fused multiply-add, which Go
// may otherwise use on arm64, ppc64le, s390x and riscv64.

// runGeneric runs rows [from, j.rows) and returns the index of the first row that needs the
// float64 path, or j.rows.
func (j *job) runGeneric(from int) int {
	d := j.d
	for r := from; r < j.rows; r++ {
		o := r * j.stride
		src := j.x[o : o+d : o+d]
		var ss float32
		if j.res != nil {
			h := j.res[o : o+d : o+d]
			ss = addSumSquares(h, src)
			src = h
		} else {
			ss = sumSquares(src)
		}
		inv, ok := invRMS(ss, d, j.eps)
		if !ok {
			return r
		}
		dst := j.dst[o : o+d : o+d]
		switch j.mode {
		case weighted:
			scaleWeighted(dst, src, j.w, inv)
		case offset:
			scaleOffset(dst, src, j.w, inv)
		default:
			scaleUnweighted(dst, src, inv)
		}
		if j.inv != nil {
			j.inv[r] = inv
		}
	}
	return j.rows
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
// by the halving tree. Eight partials at a time stay in registers while the loop walks the row in
// 64-element blocks, so each partial still sees its elements in increasing order.
func sumSquares(x []float32) float32 {
	var p [64]float32
	full := len(x) &^ 63
	for c := 0; c < 64; c += 8 {
		var s0, s1, s2, s3, s4, s5, s6, s7 float32
		for i := c; i < full; i += 64 {
			v := (*[8]float32)(x[i : i+8])
			s0 += float32(v[0] * v[0])
			s1 += float32(v[1] * v[1])
			s2 += float32(v[2] * v[2])
			s3 += float32(v[3] * v[3])
			s4 += float32(v[4] * v[4])
			s5 += float32(v[5] * v[5])
			s6 += float32(v[6] * v[6])
			s7 += float32(v[7] * v[7])
		}
		p[c], p[c+1], p[c+2], p[c+3] = s0, s1, s2, s3
		p[c+4], p[c+5], p[c+6], p[c+7] = s4, s5, s6, s7
	}
	for i := full; i < len(x); i++ {
		p[i&63] += float32(x[i] * x[i])
	}
	return reduce64(&p)
}

// addSumSquares sets h[i] = x[i] + h[i] and returns ss of the contract for the new h.
func addSumSquares(h, x []float32) float32 {
	x = x[:len(h)]
	var p [64]float32
	full := len(h) &^ 63
	for c := 0; c < 64; c += 8 {
		var s0, s1, s2, s3, s4, s5, s6, s7 float32
		for i := c; i < full; i += 64 {
			hv := (*[8]float32)(h[i : i+8])
			xv := (*[8]float32)(x[i : i+8])
			a0, a1, a2, a3 := xv[0]+hv[0], xv[1]+hv[1], xv[2]+hv[2], xv[3]+hv[3]
			a4, a5, a6, a7 := xv[4]+hv[4], xv[5]+hv[5], xv[6]+hv[6], xv[7]+hv[7]
			hv[0], hv[1], hv[2], hv[3] = a0, a1, a2, a3
			hv[4], hv[5], hv[6], hv[7] = a4, a5, a6, a7
			s0 += float32(a0 * a0)
			s1 += float32(a1 * a1)
			s2 += float32(a2 * a2)
			s3 += float32(a3 * a3)
			s4 += float32(a4 * a4)
			s5 += float32(a5 * a5)
			s6 += float32(a6 * a6)
			s7 += float32(a7 * a7)
		}
		p[c], p[c+1], p[c+2], p[c+3] = s0, s1, s2, s3
		p[c+4], p[c+5], p[c+6], p[c+7] = s4, s5, s6, s7
	}
	for i := full; i < len(h); i++ {
		a := x[i] + h[i]
		h[i] = a
		p[i&63] += float32(a * a)
	}
	return reduce64(&p)
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
	d := j.d
	o := r * j.stride
	src := j.x[o : o+d : o+d]
	if j.res != nil {
		src = j.res[o : o+d : o+d]
	}
	var ss float64
	for _, v := range src {
		f := float64(v)
		ss += float64(f * f) // exact: a float32 square fits a float64
	}
	inv := 1 / math.Sqrt(ss/float64(d)+float64(j.eps))
	dst := j.dst[o : o+d : o+d]
	for i, v := range src {
		y := float64(v) * inv
		switch j.mode {
		case weighted:
			y *= float64(j.w[i])
		case offset:
			y *= 1 + float64(j.w[i])
		}
		dst[i] = float32(y)
	}
	if j.inv != nil {
		j.inv[r] = float32(inv)
	}
}
