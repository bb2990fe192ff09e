package rmsnorm

import "math"

// The generic kernel of LayerNorm (the Layer variants: Center, Bias or both), for every format:
// the contract of the package documentation's LayerNorm in plain Go, the reference of the
// LayerNorm kernels. A kernel without Layer functions of its own runs these for Layer jobs (the
// dispatch table points its Layer variants here); the generic kernel's backward pass with Center
// takes the row's sums from here too (runGenericBackwardCentered). As in runGeneric, every
// float32(...) around a product that meets an addition forbids a fused multiply-add.
//
// The rows are read a chunk at a time: float32 rows in place, 16-bit rows widened into a buffer on
// the stack. A chunk is a whole number of blocks of 64, so element i of a chunk goes to partial
// i%64 as element c+i of the row does.

// runGenericLayer is runGeneric for the Layer variants: rows [from, to) of j, returning the index
// of the first row that needs the float64 path, or to.
func runGenericLayer(j *job, from, to int) int {
	f, d := j.format, j.d
	center := j.flags&flagCenter != 0
	var buf [chunk]float32
	for r := from; r < to; r++ {
		var x32 []float32
		var x16 []uint16
		if f.in() == formatF32 {
			x32 = j.row(j.x, r)
			if j.res != nil {
				h := j.row(j.res, r)
				addInto(h, x32)
				x32 = h
			} else if j.flags&flagPF != 0 {
				touchRow(x32)
			}
		} else {
			x16 = j.row16(j.x, r)
			if j.res != nil {
				h := j.row16(j.res, r)
				for i, v := range x16 {
					h[i] = f.narrow(f.widen(v) + f.widen(h[i]))
				}
				x16 = h
			}
		}
		var m float32 // +0 without Center: x - (+0) is x for every x, -0 included
		if center {
			s := sumRow(j, x32, x16, &buf)
			if !(s-s == 0) { // s is ±Inf or NaN
				return r
			}
			m = s / float32(d)
		}
		inv, ok := invRMS(centeredSquares(j, x32, x16, m, &buf), d, j.eps)
		if !ok {
			return r
		}
		layerScale(j, r, x32, x16, m, inv, &buf)
		j.setInv(r, inv)
		j.setMean(r, m)
	}
	return to
}

// chunkOf returns elements [c, c+chunk) of the row (fewer at its end) as float32: x32's own, or
// x16's widened into buf (x32 nil).
func chunkOf(j *job, x32 []float32, x16 []uint16, c int, buf *[chunk]float32) []float32 {
	n := min(chunk, j.d-c)
	if x32 != nil {
		return x32[c : c+n]
	}
	part := buf[:n]
	widenInto(part, x16[c:], j.format)
	return part
}

// sumRow returns s of the LayerNorm contract: the sum of the row's elements in the 64 partials
// and halving tree of the sum of squares.
func sumRow(j *job, x32 []float32, x16 []uint16, buf *[chunk]float32) float32 {
	var p [64]float32
	if x32 != nil {
		addSums(&p, x32)
	} else {
		for c := 0; c < j.d; c += chunk {
			addSums(&p, chunkOf(j, x32, x16, c, buf))
		}
	}
	return reduce64(&p)
}

// addSums adds x[i] to p[i%64] for x, a run of a row that starts at a multiple of 64 and leaves
// a partial block only at the row's end, in increasing i for each partial. It walks x once per six
// partials, as sumSquares does, for the same reason.
func addSums(p *[64]float32, x []float32) {
	full := len(x) &^ 63
	blocks := x[:full]
	c := 0
	for ; c < 60; c += 6 {
		s0, s1, s2, s3, s4, s5 := p[c], p[c+1], p[c+2], p[c+3], p[c+4], p[c+5]
		for i := c; i < full; i += 64 {
			v := (*[6]float32)(blocks[i : i+6])
			s0 += v[0]
			s1 += v[1]
			s2 += v[2]
			s3 += v[3]
			s4 += v[4]
			s5 += v[5]
		}
		p[c], p[c+1], p[c+2], p[c+3], p[c+4], p[c+5] = s0, s1, s2, s3, s4, s5
	}
	s0, s1, s2, s3 := p[60], p[61], p[62], p[63]
	for i := c; i < full; i += 64 {
		v := (*[4]float32)(blocks[i : i+4])
		s0 += v[0]
		s1 += v[1]
		s2 += v[2]
		s3 += v[3]
	}
	p[60], p[61], p[62], p[63] = s0, s1, s2, s3
	for i := full; i < len(x); i++ {
		p[i&63] += x[i]
	}
}

// addCenteredSquares is addSums for float32((x[i]-m)*(x[i]-m)), the difference rounded first.
func addCenteredSquares(p *[64]float32, x []float32, m float32) {
	full := len(x) &^ 63
	blocks := x[:full]
	c := 0
	for ; c < 60; c += 6 {
		s0, s1, s2, s3, s4, s5 := p[c], p[c+1], p[c+2], p[c+3], p[c+4], p[c+5]
		for i := c; i < full; i += 64 {
			v := (*[6]float32)(blocks[i : i+6])
			c0, c1, c2, c3, c4, c5 := v[0]-m, v[1]-m, v[2]-m, v[3]-m, v[4]-m, v[5]-m
			s0 += float32(c0 * c0)
			s1 += float32(c1 * c1)
			s2 += float32(c2 * c2)
			s3 += float32(c3 * c3)
			s4 += float32(c4 * c4)
			s5 += float32(c5 * c5)
		}
		p[c], p[c+1], p[c+2], p[c+3], p[c+4], p[c+5] = s0, s1, s2, s3, s4, s5
	}
	s0, s1, s2, s3 := p[60], p[61], p[62], p[63]
	for i := c; i < full; i += 64 {
		v := (*[4]float32)(blocks[i : i+4])
		c0, c1, c2, c3 := v[0]-m, v[1]-m, v[2]-m, v[3]-m
		s0 += float32(c0 * c0)
		s1 += float32(c1 * c1)
		s2 += float32(c2 * c2)
		s3 += float32(c3 * c3)
	}
	p[60], p[61], p[62], p[63] = s0, s1, s2, s3
	for i := full; i < len(x); i++ {
		cv := x[i] - m
		p[i&63] += float32(cv * cv)
	}
}

// centeredSquares returns ss of the LayerNorm contract: the sum of (x[i]-m)^2, each difference
// and each square rounded to float32, in the 64 partials and halving tree.
func centeredSquares(j *job, x32 []float32, x16 []uint16, m float32, buf *[chunk]float32) float32 {
	var p [64]float32
	if x32 != nil {
		addCenteredSquares(&p, x32, m)
	} else {
		for c := 0; c < j.d; c += chunk {
			addCenteredSquares(&p, chunkOf(j, x32, x16, c, buf), m)
		}
	}
	return reduce64(&p)
}

// layerScale writes row r of dst: n = (x[i]-m)*inv (rounded to the 16-bit format with
// RoundNormalized), then times the weight form, then plus the bias, each operation rounded to
// float32, and the result stored (16-bit: rounded once more, to the format).
func layerScale(j *job, r int, x32 []float32, x16 []uint16, m, inv float32, buf *[chunk]float32) {
	f, w, b, mode, rn := j.format, j.weight(), j.biasOf(), j.mode, j.rn()
	var d32 []float32
	var d16 []uint16
	if f.out() == formatF32 {
		d32 = j.dstRow(r)
	} else {
		d16 = j.dstRow16(r)
	}
	if !rn {
		for c := 0; c < j.d; c += chunk {
			part := chunkOf(j, x32, x16, c, buf)
			n := len(part)
			var wc, bc []float32
			if w != nil {
				wc = w[c : c+n]
			}
			if b != nil {
				bc = b[c : c+n]
			}
			if d32 != nil {
				layerRow(d32[c:c+n], part, wc, bc, m, inv, mode)
				continue
			}
			out := buf[:n] // part, widened there, or float32 x, which must not be written
			layerRow(out, part, wc, bc, m, inv, mode)
			narrowInto(d16[c:c+n], out, f)
		}
		return
	}
	// RoundNormalized, which comes with a weight and 16-bit rows out (Norm.flags): n rounded to
	// the format before the weight.
	for c := 0; c < j.d; c += chunk {
		for i, v := range chunkOf(j, x32, x16, c, buf) {
			e := c + i
			n := f.round((v - m) * inv)
			switch mode {
			case weighted:
				n = float32(n * w[e])
			case offset:
				n = float32(n * (1 + w[e]))
			}
			if b != nil {
				n += b[e]
			}
			d16[e] = f.narrow(n)
		}
	}
}

// layerRow sets dst[i] = ((src[i]-m)*inv)*w'[i] (+ b[i] with a bias), each operation rounded
// to float32 (the float32 conversion keeps the product from fusing with the add), w' by the weight
// form (w nil: none); a loop per form. dst may be src: each element reads only its own.
func layerRow(dst, src, w, b []float32, m, inv float32, mode weightMode) {
	src = src[:len(dst)]
	if b != nil {
		b = b[:len(dst)]
	}
	switch {
	case mode == weighted && b == nil:
		w = w[:len(dst)]
		for i := range dst {
			dst[i] = ((src[i] - m) * inv) * w[i]
		}
	case mode == weighted:
		w = w[:len(dst)]
		for i := range dst {
			dst[i] = float32(((src[i]-m)*inv)*w[i]) + b[i]
		}
	case mode == offset && b == nil:
		w = w[:len(dst)]
		for i := range dst {
			dst[i] = ((src[i] - m) * inv) * (1 + w[i])
		}
	case mode == offset:
		w = w[:len(dst)]
		for i := range dst {
			dst[i] = float32(((src[i]-m)*inv)*(1+w[i])) + b[i]
		}
	case b == nil:
		for i := range dst {
			dst[i] = (src[i] - m) * inv
		}
	default:
		for i := range dst {
			dst[i] = float32((src[i]-m)*inv) + b[i]
		}
	}
}

// layerFloat64 finishes row r of a Layer job on the float64 path of the contract, for every
// format: the mean (with Center), the centered values, their sum of squares, inv and y in float64
// from the row's exact values (widened from 16 bits; res already holds h in the residual forms),
// y rounded to float32 once (then to the 16-bit format; with RoundNormalized (x-m)*inv is first
// rounded to float32 and to the format). Inv and Mean get inv and the mean rounded to float32.
func (j *job) layerFloat64(r int) {
	f, d := j.format, j.d
	x32, x16 := j.normalizedRow(r)
	xi := func(i int) float64 {
		if x32 != nil {
			return float64(x32[i])
		}
		return float64(f.widen(x16[i]))
	}
	var m float64
	if j.flags&flagCenter != 0 {
		var s float64
		for i := range d {
			s += xi(i)
		}
		m = s / float64(d)
	}
	var ss float64
	for i := range d {
		c := xi(i) - m
		ss += float64(c * c)
	}
	inv := 1 / math.Sqrt(ss/float64(d)+float64(j.eps))
	w, b := j.weight(), j.biasOf()
	for i := range d {
		y := (xi(i) - m) * inv
		if j.rn() {
			y = float64(f.round(float32(y)))
		}
		switch j.mode {
		case weighted:
			y = float64(y * float64(w[i]))
		case offset:
			y = float64(y * (1 + float64(w[i])))
		}
		if b != nil {
			y += float64(b[i])
		}
		if f.out() == formatF32 {
			j.dstRow(r)[i] = float32(y)
		} else {
			j.dstRow16(r)[i] = f.narrow(float32(y))
		}
	}
	j.setInv(r, float32(inv))
	j.setMean(r, float32(m))
}
