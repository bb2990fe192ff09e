package rmsnorm

import (
	"math"
	"unsafe"
)

// The generic kernel of the backward pass: the contract of the package documentation in plain
// Go, the reference of the backward kernels. As in the forward pass, every float32(...) around a
// product forbids a fused multiply-add.

// runGenericBackward runs rows [from, to) of the backward job j and returns the index of the first
// row that needs the float64 path, or to.
func runGenericBackward(j *job, from, to int) int {
	if j.flags&flagCenter != 0 {
		return runGenericBackwardCentered(j, from, to)
	}
	d := j.d
	w := j.weight()
	var q [chunk]float32
	for r := from; r < to; r++ {
		x, dy := j.row(j.x, r), j.row(j.dy, r)
		inv, ok := invRMS(sumSquares(x), d, j.eps)
		if !ok {
			return r
		}
		if j.inv != nil {
			inv = *(*float32)(unsafe.Add(j.inv, uintptr(r)*4))
		}
		c := dotGX(x, dy, w, j.mode)
		s := float32(float32(inv*inv)*c) / float32(d)
		dx := j.dstRow(r)
		for c0 := 0; c0 < d; c0 += chunk {
			n := min(chunk, d-c0)
			xs, dys, dxs := x[c0:c0+n], dy[c0:c0+n], dx[c0:c0+n]
			if j.dw != nil {
				for i := range xs {
					q[i] = float32(dys[i] * float32(xs[i]*inv))
				}
			}
			if j.db != nil { // before dx is written: DX may be DY
				j.accumulateInto(j.db, j.accB, r, c0, dys)
			}
			for i := range xs {
				g := dys[i]
				switch j.mode {
				case weighted:
					g = float32(g * w[c0+i])
				case offset:
					g = float32(g * float32(1+w[c0+i]))
				}
				dxs[i] = float32(inv * float32(g-float32(xs[i]*s)))
			}
			if j.dw != nil {
				j.accumulate(r, c0, q[:n])
			}
		}
	}
	return to
}

// dotGX returns c of the backward contract for one row: the sum of float32(g[i]*x[i]), g[i] the
// output gradient times the weight form (dy*w, dy*(1+w) or dy), in the 64 partials and halving
// tree of the forward's sum of squares.
func dotGX(x, dy, w []float32, mode weightMode) float32 {
	var p [64]float32
	for i := range x {
		g := dy[i]
		switch mode {
		case weighted:
			g = float32(g * w[i])
		case offset:
			g = float32(g * float32(1+w[i]))
		}
		p[i&63] += float32(g * x[i])
	}
	return reduce64(&p)
}

// accumulate adds the weight-gradient products q of row r, elements [c0, c0+len(q)), to the
// partial sum of the row's block, the way every kernel does (see runBackward): the first row of a
// block sets P, the others add to it; with flagFuse the block's last row adds P + q to DW instead
// (and a block of one row adds q to DW).
func (j *job) accumulate(r, c0 int, q []float32) { j.accumulateInto(j.dw, j.acc, r, c0, q) }

// accumulateInto is accumulate for the sum dw (DW, or DB) and its partial sums acc (j.acc, or
// j.accB for DB).
func (j *job) accumulateInto(sum, acc unsafe.Pointer, r, c0 int, q []float32) {
	first := r%gradBlock == 0
	last := r%gradBlock == gradBlock-1 || r == j.rows-1
	dw := unsafe.Slice((*float32)(sum), j.d)[c0:]
	var p []float32
	switch {
	case j.flags&flagFuse == 0:
		p = unsafe.Slice((*float32)(acc), (r/gradBlock+1)*j.d)[r/gradBlock*j.d+c0:]
	case !(first && last):
		p = unsafe.Slice((*float32)(acc), j.d)[c0:]
	}
	if p != nil {
		p = p[:len(q)]
	}
	switch {
	case j.flags&flagFuse != 0 && first && last:
		addInto(dw[:len(q)], q)
	case first:
		copy(p, q)
	case j.flags&flagFuse != 0 && last:
		dw = dw[:len(q)]
		for i, v := range q {
			dw[i] = dw[i] + (p[i] + v)
		}
	default:
		addInto(p, q)
	}
}

// backwardFloat64 does row r of the backward job on the float64 path: the row's forward took it
// (t outside [2^-100, MaxFloat32]), so inv is recomputed in float64 as there, whatever Inv holds,
// and dx is computed in float64 and rounded once. The weight-gradient products, rounded to
// float32, are summed like any row's.
func (j *job) backwardFloat64(r int) {
	if j.flags&flagCenter != 0 {
		j.backwardCenteredFloat64(r)
		return
	}
	x, dy, dx := j.row(j.x, r), j.row(j.dy, r), j.dstRow(r)
	w := j.weight()
	var ss float64
	for _, v := range x {
		f := float64(v)
		ss += float64(f * f)
	}
	inv := 1 / math.Sqrt(ss/float64(j.d)+float64(j.eps))
	wf := func(i int) float64 {
		switch j.mode {
		case weighted:
			return float64(w[i])
		case offset:
			return 1 + float64(w[i])
		}
		return 1
	}
	var c float64
	for i, v := range x {
		c += float64(float64(float64(dy[i])*wf(i)) * float64(v))
	}
	s := float64(inv*inv) * c / float64(j.d)
	var q [chunk]float32
	for c0 := 0; c0 < j.d; c0 += chunk {
		n := min(chunk, j.d-c0)
		if j.db != nil { // before dx is written: DX may be DY
			j.accumulateInto(j.db, j.accB, r, c0, dy[c0:c0+n])
		}
		for i := c0; i < c0+n; i++ {
			xi, dyi := float64(x[i]), float64(dy[i])
			q[i-c0] = float32(dyi * float64(xi*inv))
			dx[i] = float32(inv * (float64(dyi*wf(i)) - float64(xi*s)))
		}
		if j.dw != nil {
			j.accumulate(r, c0, q[:n])
		}
	}
}
