package rmsnorm

import "math"

// A reference of the LayerNorm contract written from the package documentation, element by element
// and independently of the generic kernel (no chunks, no shared helpers), for the tests to hold the
// generic kernel to; the other kernels are held to the generic one.

// layerRef is one Norm's settings as the contract uses them: w' by mode (nil weight: 1), the bias
// (nil: none), Center, RoundNormalized (16-bit output with a weight) and the output format.
type layerRef struct {
	w, b   []float32
	mode   weightMode
	eps    float32
	center bool
	rn     bool
	out    format // formatF32, formatBF16 or formatF16: what y is rounded to in the end
}

// wf32 is w'[i] in float32; wf64 in float64 (the float64 path's 1 + float64(w)).
func (l *layerRef) wf32(i int) float32 {
	switch l.mode {
	case weighted:
		return l.w[i]
	case offset:
		return 1 + l.w[i]
	}
	return 1
}

func (l *layerRef) wf64(i int) float64 {
	switch l.mode {
	case weighted:
		return float64(l.w[i])
	case offset:
		return 1 + float64(l.w[i])
	}
	return 1
}

// tree sums 64 partials by the contract's halving tree.
func tree(p [64]float32) float32 {
	for h := 32; h >= 1; h /= 2 {
		for j := 0; j < h; j++ {
			p[j] = p[j] + p[j+h]
		}
	}
	return p[0]
}

// row returns y (float32, before the final rounding of 16-bit output), inv and the mean for the
// row h (the values normalized: widened, the residual added), and whether it took the float64
// path.
func (l *layerRef) row(h []float32) (y []float32, inv, mean float32, f64 bool) {
	d := len(h)
	y = make([]float32, d)
	var m float32
	ok := true
	if l.center {
		var p [64]float32
		for i := 0; i < d; i++ {
			p[i%64] = p[i%64] + h[i]
		}
		s := tree(p)
		ok = !math.IsInf(float64(s), 0) && !math.IsNaN(float64(s))
		m = s / float32(d)
	}
	var t float32
	if ok {
		var p [64]float32
		for i := 0; i < d; i++ {
			c := h[i] - m
			p[i%64] = p[i%64] + float32(c*c)
		}
		t = tree(p)/float32(d) + l.eps
		ok = t >= 0x1p-100 && t <= math.MaxFloat32
	}
	if ok {
		inv = 1 / float32(math.Sqrt(float64(t)))
		for i := 0; i < d; i++ {
			n := float32(float32(h[i]-m) * inv)
			if l.rn && l.mode != unweighted {
				n = l.out.round(n)
			}
			v := float32(n * l.wf32(i))
			if l.b != nil {
				v = v + l.b[i]
			}
			y[i] = v
		}
		return y, inv, m, false
	}
	// The float64 path.
	var m64 float64
	if l.center {
		var s float64
		for i := 0; i < d; i++ {
			s = s + float64(h[i])
		}
		m64 = s / float64(d)
	}
	var ss float64
	for i := 0; i < d; i++ {
		c := float64(h[i]) - m64
		ss = ss + float64(c*c)
	}
	inv64 := 1 / math.Sqrt(ss/float64(d)+float64(l.eps))
	for i := 0; i < d; i++ {
		v := (float64(h[i]) - m64) * inv64
		if l.rn && l.mode != unweighted {
			v = float64(l.out.round(float32(v)))
		}
		v = float64(v * l.wf64(i))
		if l.b != nil {
			v = v + float64(l.b[i])
		}
		y[i] = float32(v)
	}
	return y, float32(inv64), float32(m64), true
}

// backward returns dx and the weight-gradient products q = dy*n of the Backward contract with
// Center for row x, given inv and m (Grad.Inv and Grad.Mean, or the forward's), on the float32
// path.
func (l *layerRef) backward(x, dy []float32, inv, m float32) (dx, q []float32) {
	d := len(x)
	n := make([]float32, d)
	g := make([]float32, d)
	var pg, pn [64]float32
	for i := 0; i < d; i++ {
		n[i] = float32(float32(x[i]-m) * inv)
		g[i] = float32(dy[i] * l.wf32(i))
		pg[i%64] = pg[i%64] + g[i]
		pn[i%64] = pn[i%64] + float32(g[i]*n[i])
	}
	a := tree(pg) / float32(d)
	b := tree(pn) / float32(d)
	dx = make([]float32, d)
	q = make([]float32, d)
	for i := 0; i < d; i++ {
		t := float32(g[i] - a)
		u := float32(n[i] * b)
		dx[i] = float32(inv * float32(t-u))
		q[i] = float32(dy[i] * n[i])
	}
	return dx, q
}
