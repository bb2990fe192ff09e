package rmsnorm

import "math"

// The generic kernel of the LayerNorm backward pass with Center: the package documentation's
// contract in plain Go, the reference of the kernels' own functions. (Without Center, a bias only
// adds DB to RMSNorm's backward pass: runGenericBackward and backwardFloat64 do that.) As
// elsewhere, every float32(...) around a product forbids a fused multiply-add.

// runGenericBackwardCentered runs rows [from, to) of a backward job with flagCenter and returns
// the index of the first row that needs the float64 path, or to.
func runGenericBackwardCentered(j *job, from, to int) int {
	d, fd := j.d, float32(j.d)
	w, mode := j.weight(), j.mode
	var q [chunk]float32
	var buf [chunk]float32 // unused: the rows are float32
	for r := from; r < to; r++ {
		x, dy := j.row(j.x, r), j.row(j.dy, r)
		// The row's class, m and inv, by the forward's own arithmetic.
		s := sumRow(j, x, nil, &buf)
		if !(s-s == 0) {
			return r
		}
		m := s / fd
		inv, ok := invRMS(centeredSquares(j, x, nil, m, &buf), d, j.eps)
		if !ok {
			return r
		}
		if j.inv != nil {
			inv = elemAt(j.inv, r)
		}
		if j.mean != nil {
			m = elemAt(j.mean, r)
		}
		// Steps 2-4: the sums of g and of g*n.
		var pg, pn [64]float32
		for i, v := range x {
			n := (v - m) * inv
			g := gradIn(dy[i], w, i, mode)
			pg[i&63] += g
			pn[i&63] += float32(g * n)
		}
		a, b := reduce64(&pg)/fd, reduce64(&pn)/fd
		dx := j.dstRow(r)
		for c0 := 0; c0 < d; c0 += chunk {
			k := min(chunk, d-c0)
			xs, dys, dxs := x[c0:c0+k], dy[c0:c0+k], dx[c0:c0+k]
			if j.dw != nil {
				for i, v := range xs {
					q[i] = float32(dys[i] * ((v - m) * inv))
				}
			}
			if j.db != nil { // before dx is written: DX may be DY
				j.accumulateInto(j.db, j.accB, r, c0, dys)
			}
			for i, v := range xs {
				n := (v - m) * inv
				g := gradIn(dys[i], w, c0+i, mode)
				dxs[i] = float32(inv * float32((g-a)-float32(n*b)))
			}
			if j.dw != nil {
				j.accumulate(r, c0, q[:k])
			}
		}
	}
	return to
}

// gradIn returns g = dy*w' for element i: dy times the weight form (w, 1+w rounded to float32, or
// 1), rounded to float32.
func gradIn(dy float32, w []float32, i int, mode weightMode) float32 {
	switch mode {
	case weighted:
		return float32(dy * w[i])
	case offset:
		return float32(dy * float32(1+w[i]))
	}
	return dy
}

// backwardCenteredFloat64 does row r of a backward job with flagCenter on the float64 path: the
// row's forward took it, so the mean and inv are recomputed in float64 as there, whatever Inv and
// Mean hold; n, g, both means and dx are computed in float64 and dx rounded once. The weight
// gradient's products, rounded to float32, and dy are summed into the blocks like any row's.
func (j *job) backwardCenteredFloat64(r int) {
	x, dy, dx := j.row(j.x, r), j.row(j.dy, r), j.dstRow(r)
	d, fd := j.d, float64(j.d)
	w := j.weight()
	var s float64
	for _, v := range x {
		s += float64(v)
	}
	m := s / fd
	var ss float64
	for _, v := range x {
		c := float64(v) - m
		ss += float64(c * c)
	}
	inv := 1 / math.Sqrt(ss/fd+float64(j.eps))
	g := func(i int) float64 {
		switch j.mode {
		case weighted:
			return float64(float64(dy[i]) * float64(w[i]))
		case offset:
			return float64(float64(dy[i]) * (1 + float64(w[i])))
		}
		return float64(dy[i])
	}
	var sg, sgn float64
	for i, v := range x {
		n := (float64(v) - m) * inv
		sg += g(i)
		sgn += float64(g(i) * n)
	}
	a, b := sg/fd, sgn/fd
	var q [chunk]float32
	for c0 := 0; c0 < d; c0 += chunk {
		k := min(chunk, d-c0)
		if j.db != nil { // before dx is written: DX may be DY
			j.accumulateInto(j.db, j.accB, r, c0, dy[c0:c0+k])
		}
		for i := c0; i < c0+k; i++ {
			n := (float64(x[i]) - m) * inv
			q[i-c0] = float32(float64(dy[i]) * n)
			dx[i] = float32(inv * ((g(i) - a) - float64(n*b)))
		}
		if j.dw != nil {
			j.accumulate(r, c0, q[:k])
		}
	}
}
