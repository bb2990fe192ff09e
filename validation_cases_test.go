package rmsnorm

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
)

// The cases of the validation sweep (validation_matrix_test.go): valid calls, one per entry point,
// layout of rows and set of features, and the cases that vary each of them, most of which break a
// rule.

// sweepLayout is the layout of the rows of a valid call: row length d, and N, Stride and
// DstStride as the call gives them; back to back (n = 0), X holds rows rows.
type sweepLayout struct {
	name                    string
	d, n, stride, dstStride int
	rows                    int
}

// lengths returns the elements X and Dst hold: exactly the rows' span.
func (l sweepLayout) lengths() (x, dst int) {
	if l.n == 0 {
		return l.rows * l.d, l.rows * l.d
	}
	stride := cmp.Or(l.stride, l.d)
	dstStride := cmp.Or(l.dstStride, stride)
	return (l.n-1)*stride + l.d, (l.n-1)*dstStride + l.d
}

func (l sweepLayout) rowCount() int { return max(l.n, l.rows) }

var (
	sweepPacked      = sweepLayout{name: "rows of 4 back to back", d: 4, rows: 3}
	sweepStrided     = sweepLayout{name: "3 rows of 4, Stride 6, DstStride 5", d: 4, n: 3, stride: 6, dstStride: 5}
	sweepNoRows      = sweepLayout{name: "no rows", d: 4}
	sweepStridedMore = []sweepLayout{
		{name: "3 rows of 4, Stride 6", d: 4, n: 3, stride: 6},
		{name: "3 rows of 4, Stride 0, DstStride 7", d: 4, n: 3, dstStride: 7},
		{name: "2 rows of 4, Stride 0, DstStride d", d: 4, n: 2, dstStride: 4},
		{name: "1 row of 4, Stride 7, DstStride 9", d: 4, n: 1, stride: 7, dstStride: 9},
		{name: "4 rows of 1, Stride 3", d: 1, n: 4, stride: 3},
		{name: "2 rows of 67, Stride 70, DstStride 68", d: 67, n: 2, stride: 70, dstStride: 68},
	}
	sweepPackedMore = []sweepLayout{
		{name: "rows of 4 back to back, Stride d, DstStride d", d: 4, rows: 3, stride: 4, dstStride: 4},
		{name: "rows of 1 back to back", d: 1, rows: 5},
		{name: "rows of 67 back to back", d: 67, rows: 2},
	}
)

// sweepFeature is what a valid call has besides its rows: the buffers it sets and the Norm's
// fields. The Forward functions and methods take the features they can (no Residual, Inv or Mean).
type sweepFeature struct {
	name                                string
	weight, residual, inv, mean, bias   bool
	center, unitOffset, roundNormalized bool
	workers                             int
	dx, dw, db                          bool // Backward
	backward                            bool // a feature of Backward calls
}

var (
	featurePlain   = sweepFeature{name: "a weight", weight: true}
	featureLayer   = sweepFeature{name: "LayerNorm, every buffer", weight: true, center: true, bias: true, mean: true, inv: true, residual: true}
	featureNoW     = sweepFeature{name: "no weight, Inv", inv: true}
	featureResInv  = sweepFeature{name: "Residual and Inv", weight: true, residual: true, inv: true}
	featureWorkers = sweepFeature{name: "Workers 3", weight: true, workers: 3}
	featureUnitRes = sweepFeature{name: "UnitOffset, RoundNormalized, Residual", weight: true, unitOffset: true, residual: true, roundNormalized: true}
	featuresMore   = []sweepFeature{
		{name: "Bias without Center, Inv", weight: true, bias: true, inv: true},
		{name: "no weight, Center, Mean, Bias", center: true, mean: true, bias: true},
		{name: "Center alone", weight: true, center: true},
		{name: "Center, Bias, Residual", weight: true, center: true, bias: true, residual: true},
		{name: "Bias and Residual without Center", weight: true, bias: true, residual: true},
		{name: "UnitOffset, Center, Bias, RoundNormalized", weight: true, unitOffset: true, center: true, bias: true, roundNormalized: true},
		{name: "no weight, Residual", residual: true},
		{name: "Workers 2, LayerNorm, Residual, Inv, Mean", weight: true, center: true, bias: true, residual: true, inv: true, mean: true, workers: 2},
	}
	backwardLayer   = sweepFeature{name: "LayerNorm, every buffer", backward: true, weight: true, dx: true, center: true, bias: true, mean: true, inv: true, dw: true, db: true}
	backwardPlain   = sweepFeature{name: "DX and DW", backward: true, weight: true, dx: true, dw: true}
	backwardNoW     = sweepFeature{name: "no weight, DX, Inv", backward: true, dx: true, inv: true}
	backwardDWAlone = sweepFeature{name: "DW alone (no DX)", backward: true, weight: true, dw: true}
	backwardMore    = []sweepFeature{
		{name: "DX, Inv, DW, UnitOffset", backward: true, weight: true, dx: true, inv: true, dw: true, unitOffset: true},
		{name: "Bias without Center, DB", backward: true, weight: true, bias: true, db: true, dx: true},
		{name: "Workers 3", backward: true, weight: true, dx: true, dw: true, workers: 3},
		{name: "no weight, Center, Mean, Bias, DB", backward: true, center: true, mean: true, bias: true, db: true, dx: true},
	}
)

// baseCase returns the valid call of entry e with layout l and feature f, or false if e cannot
// take them.
func baseCase(e *entry, l sweepLayout, f sweepFeature) (sweepCase, bool) {
	if (e.kind == kindBackward) != f.backward || e.kind == kindConvert {
		return sweepCase{}, false
	}
	switch e.kind {
	case kindForward:
		if f != featurePlain || l.n != 0 || l.stride != 0 || l.dstStride != 0 {
			return sweepCase{}, false
		}
	case kindNormForward:
		if l.n != 0 || l.stride != 0 || l.dstStride != 0 {
			return sweepCase{}, false
		}
		f.residual, f.inv, f.mean = false, false, false
	case kindBackward:
		l.dstStride = 0
	}
	c := sweepCase{e: e, eps: 1e-6, unitOffset: f.unitOffset, center: f.center, roundNormalized: f.roundNormalized,
		workers: f.workers, n: l.n, stride: l.stride, dstStride: l.dstStride, layout: l.name, features: f.name, change: "valid"}
	x, dst := l.lengths()
	// Every buffer in an arena of its own, a third of the way in: room enough around it for any
	// other buffer, longer by the extras' slack, to be placed before or after it.
	room := (max(x, dst)+4)*4 + 16
	c.arenaBytes = 3 * room
	set := func(a arg, n int) { c.bufs[a] = placed{set: true, len: n, arena: int(a), off: room} }
	set(argX, x)
	set(argDst, dst)
	if e.kind == kindBackward {
		if !f.dx {
			c.bufs[argDst] = placed{}
		}
		set(argDY, x)
	}
	sets := map[arg]bool{argRes: f.residual, argInv: f.inv, argMean: f.mean, argW: f.weight, argBias: f.bias, argDW: f.dw, argDB: f.db}
	for a, on := range sets {
		if on {
			set(a, c.naturalLen(a, l))
		}
	}
	if !f.weight {
		c.dim = l.d
	}
	return c, true
}

// naturalLen returns the length buffer a has in a valid call of layout l.
func (c *sweepCase) naturalLen(a arg, l sweepLayout) int {
	switch a {
	case argInv, argMean:
		return l.rowCount()
	case argW, argBias, argDW, argDB:
		return l.d
	}
	x, _ := l.lengths()
	return x
}

// bases returns the valid calls the plan varies, each once.
func (p sweepPlan) bases() []sweepCase {
	var bs []sweepCase
	seen := map[string]bool{}
	for _, e := range sweepEntries {
		if e.kind == kindConvert {
			for _, n := range p.convertLengths {
				c := sweepCase{e: e, layout: fmt.Sprintf("%d elements", n), features: "-", change: "valid", arenaBytes: 3 * (4*n + 16)}
				c.bufs[argX] = placed{set: true, len: n, arena: int(argX), off: 4*n + 16}
				c.bufs[argDst] = placed{set: true, len: n, arena: int(argDst), off: 4*n + 16}
				bs = append(bs, c)
			}
			continue
		}
		for _, l := range p.layouts {
			for _, f := range p.features {
				c, ok := baseCase(e, l, f)
				// Cases that differ only in what was dropped (the Forward methods' Residual, Inv
				// and Mean, Backward's DstStride) are the same call.
				key := fmt.Sprintf("%s %d %g %v %v %v %d %d %d %d %v", e.name, c.dim, c.eps, c.unitOffset, c.center,
					c.roundNormalized, c.workers, c.n, c.stride, c.dstStride, c.bufs)
				if ok && !seen[key] {
					seen[key] = true
					bs = append(bs, c)
				}
			}
		}
	}
	return bs
}

// Values of N whose span (N-1)*Stride + d overflows an int, on 64 and 32 bits, to a small value
// where the product is computed in int: (N-1)*Stride is 2^intBits, which wraps around to 0.
const (
	intBits = strconv.IntSize
	wrapN   = 1<<(intBits-2) + 1 // with Stride 4 (d of the layouts)
	halfN   = 1<<(intBits/2) + 1 // with Stride 1<<(intBits/2)
)

// grid returns the N, Stride and DstStride values of the variants of base, with row length d.
func (p sweepPlan) grid(base *sweepCase, d int) (ns, strides, dstStrides []int) {
	if p.fullGrid {
		ns = []int{-1, 0, 1, 2, base.n - 1, base.n + 1, math.MaxInt, math.MaxInt/2 + 1, wrapN, halfN, math.MinInt}
		strides = []int{-1, 0, d - 1, d, d + 1, 2 * d, math.MaxInt, 1 << (intBits / 2), math.MaxInt - d + 1, math.MaxInt/2 + 1}
		dstStrides = []int{-1, 0, d - 1, d, d + 1, math.MaxInt}
	} else {
		ns = []int{-1, 0, 1, base.n + 1, math.MaxInt, wrapN}
		strides = []int{-1, 0, d - 1, d, d + 1, math.MaxInt/2 + 1}
		dstStrides = []int{-1, 0, d - 1, d, d + 1}
	}
	if base.e.kind == kindBackward {
		dstStrides = []int{0} // Grad has no DstStride
	}
	return ns, strides, dstStrides
}

// variants calls yield with base and each case that varies it.
func (p sweepPlan) variants(base sweepCase, yield func(*sweepCase)) {
	e := base.e
	with := func(change string, mod func(c *sweepCase)) {
		c := base
		c.change = change
		mod(&c)
		yield(&c)
	}
	with("valid", func(*sweepCase) {})
	d := cmp.Or(base.dim, base.bufs[argW].len)
	l := sweepLayout{d: d, n: base.n, stride: base.stride, dstStride: base.dstStride}
	if base.n == 0 && d > 0 {
		l.rows = base.bufs[argX].len / d
	}
	// The lengths of every buffer: off by one, 0 but not nil, nil; and each optional buffer the
	// base has not, added.
	for a := range numArgs {
		b := arg(a)
		if !e.takes(b) {
			continue
		}
		name := e.argName(b)
		n := base.bufs[b].len
		if !base.bufs[b].set {
			with(name+" added", func(c *sweepCase) {
				c.bufs[b] = placed{set: true, len: c.naturalLen(b, l), arena: a, off: base.bufs[argX].off}
			})
			continue
		}
		if n > 0 {
			with("len("+name+") - 1", func(c *sweepCase) { c.bufs[b].len-- })
			with("len("+name+") = 0, not nil", func(c *sweepCase) { c.bufs[b].len = 0 })
		}
		with("len("+name+") + 1", func(c *sweepCase) { c.bufs[b].len++ })
		with(name+" nil", func(c *sweepCase) { c.bufs[b] = placed{} })
	}
	if e.kind == kindConvert {
		p.overlaps(base, "", yield)
		return
	}
	rowBufs := []arg{argX, argDst, argRes, argDY, argInv, argMean}
	with("every row buffer empty, not nil", func(c *sweepCase) {
		for _, b := range rowBufs {
			c.bufs[b].len = 0
		}
	})
	with("every row buffer nil", func(c *sweepCase) {
		for _, b := range rowBufs {
			c.bufs[b] = placed{}
		}
	})
	if e.kind == kindApply || e.kind == kindBackward {
		ns, strides, dstStrides := p.grid(&base, d)
		for _, n := range ns {
			for _, s := range strides {
				for _, ds := range dstStrides {
					with("N, Stride, DstStride", func(c *sweepCase) { c.n, c.stride, c.dstStride = n, s, ds })
				}
			}
		}
	}
	for _, eps := range []float32{-1, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1)),
		0, math.MaxFloat32, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32} {
		with("Eps", func(c *sweepCase) { c.eps = eps })
	}
	if e.kind != kindForward {
		for _, w := range []int{-1, math.MinInt, 0, 1, 2, 7, math.MaxInt} {
			with("Workers", func(c *sweepCase) { c.workers = w })
		}
		for _, dim := range []int{-1, 0, d - 1, d, d + 1, math.MinInt, math.MaxInt, math.MaxInt/2 + 1} {
			with("Dim", func(c *sweepCase) { c.dim = dim })
			if base.bufs[argW].set || e.kind == kindNormForward {
				continue
			}
			for _, n := range []int{1, 2, 3} {
				with("Dim and N", func(c *sweepCase) { c.dim, c.n, c.stride, c.dstStride = dim, n, 0, 0 })
			}
		}
		with("Center toggled", func(c *sweepCase) { c.center = !c.center })
		with("UnitOffset toggled", func(c *sweepCase) { c.unitOffset = !c.unitOffset })
		with("RoundNormalized toggled", func(c *sweepCase) { c.roundNormalized = !c.roundNormalized })
	}
	// In place: Dst is X (DX is DY), then every other buffer over the pair.
	inPlace := base
	if e.kind == kindBackward {
		inPlace.bufs[argDst].arena = inPlace.bufs[argDY].arena
	} else {
		inPlace.bufs[argDst].arena = inPlace.bufs[argX].arena
	}
	if base.bufs[argDst].set {
		inPlace.change = "in place"
		yield(&inPlace)
	}
	p.overlaps(base, "", yield)
	// Buffers longer than the rows need (strided row buffers, Inv, Mean): what lies past the
	// rows is not the call's, and other buffers may overlap it.
	slack := base
	for _, b := range []arg{argX, argDst, argRes, argDY, argInv, argMean} {
		if slack.bufs[b].set && (base.n > 0 || b == argInv || b == argMean) {
			slack.bufs[b].len += 3
		}
	}
	if slack.bufs != base.bufs {
		slack.change = "longer buffers"
		yield(&slack)
		p.overlaps(slack, "longer buffers, ", yield)
	}
	if p.extras && base.bufs[argDst].set {
		p.overlaps(inPlace, "in place, ", yield)
		if slack.bufs != base.bufs {
			slackInPlace := slack
			slackInPlace.bufs[argDst].arena = inPlace.bufs[argDst].arena
			slackInPlace.change = "longer buffers, in place"
			yield(&slackInPlace)
			p.overlaps(slackInPlace, "longer buffers, in place, ", yield)
		}
	}
}

// overlaps calls yield with base changed, for each ordered pair of its buffers a, b, by moving b
// around a, into a's arena: at every offset, in steps of b's element, from b's end just before
// a's start to b's start just after a's end; or (!p.everyOffset) at those two, one element inside
// either edge, at a's start, and, a being strided rows, at the end of a's first row (in the gap).
func (p sweepPlan) overlaps(base sweepCase, prefix string, yield func(*sweepCase)) {
	e := base.e
	for a := range numArgs {
		for b := range numArgs {
			pa, pb := base.bufs[a], base.bufs[b]
			if a == b || !pa.set || !pb.set || pa.arena == pb.arena {
				continue
			}
			sb := e.size(arg(b))
			aBytes, bBytes := pa.len*e.size(arg(a)), pb.len*sb
			var offs []int
			if p.everyOffset {
				for off := pa.off - bBytes - sb; off <= pa.off+aBytes+sb; off += sb {
					offs = append(offs, off)
				}
			} else {
				before, after := pa.off-bBytes, pa.off+aBytes // b just before a, just after
				offs = []int{before, before + sb, pa.off, after - sb, after}
				rowBuf := arg(a) == argX || arg(a) == argDst || arg(a) == argRes || arg(a) == argDY
				if d := cmp.Or(base.dim, base.bufs[argW].len); rowBuf && base.n > 1 {
					offs = append(offs, pa.off+d*e.size(arg(a)))
				}
			}
			change := prefix + e.argName(arg(b)) + " around " + e.argName(arg(a))
			for _, off := range offs {
				c := base
				c.change = change
				c.bufs[b].arena, c.bufs[b].off = pa.arena, off
				if off < 0 || off%sb != 0 || off >= c.arenaBytes {
					continue
				}
				yield(&c)
			}
		}
	}
}
