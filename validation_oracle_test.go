package rmsnorm

import (
	"math"
	"math/big"
)

// The rules of the validation sweep (validation_matrix_test.go), written from the package
// documentation alone ("Lengths and layouts" and the memory rules after it, the fields of Norm,
// Rows and Grad, the conversions' docs) and never from check.go: for a call, the first rule it
// breaks, or none. One function per group of rules, each with the sentences it encodes.

// rule is a sentence of the package documentation that a call can break.
type rule struct{ doc string }

var (
	// The Norm and the row length.
	ruleEps        = &rule{"Eps must be finite and >= 0 (eps for Forward)"}
	ruleWorkers    = &rule{"Norm.Workers must not be negative"}
	ruleDim        = &rule{"len(Weight) for a Norm with a weight (Dim is then 0 or len(Weight))"}
	ruleDimSign    = &rule{"Dim must not be negative"}
	ruleUnitOffset = &rule{"UnitOffset needs a Weight"}
	ruleBiasLen    = &rule{"Norm.Bias, when set, has exactly d elements"}

	// The layout of the rows.
	ruleNegative     = &rule{"N, Stride and DstStride must not be negative"}
	ruleNoRowLength  = &rule{"a row length of 0 (no Weight and Dim 0, or an empty w) is only allowed for a call without rows"}
	rulePackedStride = &rule{"Back to back (Rows.N = 0): Stride must be 0 or d"}
	rulePackedDst    = &rule{"DstStride ... like Stride it needs N (with N = 0 it must be 0 or d)"}
	ruleMultiple     = &rule{"Back to back: X holds len(X)/d rows, so len(X) must be a multiple of d"}
	rulePackedLen    = &rule{"Back to back: len(Dst) must equal len(X) (and len(Residual), len(DX), len(DY))"}
	ruleStride       = &rule{"Strided: Stride 0 means d, else Stride >= d"}
	ruleDstStride    = &rule{"DstStride 0 means Stride, else DstStride >= d"}
	ruleXSpan        = &rule{"Strided: X must hold at least (N-1)*Stride + d elements"}
	ruleDstSpan      = &rule{"Dst must hold at least (N-1)*DstStride + d elements"}
	ruleRowsSpan     = &rule{"Residual, DX and DY have the layout of X: at least (N-1)*Stride + d strided"}

	// The optional buffers' lengths.
	ruleInvLen     = &rule{"Rows.Inv (Grad.Inv), when set, needs len(Inv) >= the number of rows"}
	ruleMeanLen    = &rule{"Rows.Mean (Grad.Mean) the same [len(Mean) >= the number of rows]"}
	ruleMeanCenter = &rule{"Mean ... needs a Norm with Center"}
	ruleDW         = &rule{"Grad.DW, when set, has exactly d elements and needs a Norm with a weight"}
	ruleDB         = &rule{"Grad.DB exactly d and a Norm with a Bias"}

	// Memory.
	ruleDstX       = &rule{"Dst (dst) is either X (x) itself, the same first element and the same stride, for an in-place call, or shares none with it"}
	ruleDstW       = &rule{"Dst shares none with the weight"}
	ruleResidual   = &rule{"Residual shares none with X, Dst or the weight"}
	ruleInv        = &rule{"Inv [shares] none with X, Dst, the weight or Residual"}
	ruleBias       = &rule{"The bias shares none with an output (Dst, Residual, Inv; in Backward DX, DW, DB)"}
	ruleMean       = &rule{"Mean shares none with any buffer of the call"}
	ruleDXDY       = &rule{"In Backward, DX is DY itself or shares none with it"}
	ruleDXOthers   = &rule{"DX shares none with X, the weight, Inv or DW"}
	ruleDWOthers   = &rule{"DW shares none with X, DY, the weight or Inv"}
	ruleDBOthers   = &rule{"DB [shares] none with X, DY, DX, the weight, Inv or DW"}
	ruleConvertLen = &rule{"conversions: it panics unless len(dst) == len(src)"}
	ruleConvertMem = &rule{"conversions: it panics unless dst and src share no memory"}
)

// allRules lists every rule: the sweep holds that each is broken by some case.
var allRules = []*rule{
	ruleEps, ruleWorkers, ruleDim, ruleDimSign, ruleUnitOffset, ruleBiasLen,
	ruleNegative, ruleNoRowLength, rulePackedStride, rulePackedDst, ruleMultiple, rulePackedLen,
	ruleStride, ruleDstStride, ruleXSpan, ruleDstSpan, ruleRowsSpan,
	ruleInvLen, ruleMeanLen, ruleMeanCenter, ruleDW, ruleDB,
	ruleDstX, ruleDstW, ruleResidual, ruleInv, ruleBias, ruleMean, ruleDXDY, ruleDXOthers, ruleDWOthers, ruleDBOthers,
	ruleConvertLen, ruleConvertMem,
}

// verdict is what the rules say of a call: the rule it breaks (nil: none), and for a valid call
// its row length, rows and strides (DstStride resolved), which say what it may write.
type verdict struct {
	broken                     *rule
	d, rows, stride, dstStride int
}

// rowSpans is the layout of a call's rows: how many, their strides (0 resolved), and the
// elements they span in X (and the buffers in its layout) and in Dst.
type rowSpans struct {
	rows, stride, dstStride int
	span, dstSpan           int
}

// rulesVerdict applies the rules to case c.
func rulesVerdict(c *sweepCase) verdict {
	if c.e.kind == kindConvert {
		return verdict{broken: conversionRules(c), rows: 1, d: c.bufs[argX].len}
	}
	d, broken := normRules(c)
	if broken != nil {
		return verdict{broken: broken}
	}
	l, broken := layoutRules(c, d)
	if broken == nil {
		broken = optionalRules(c, d, l.rows)
	}
	// "A call without rows writes nothing; every rule of the list above is checked all the same,
	// the memory rules (memory it neither reads nor writes) are not."
	if broken == nil && l.rows > 0 {
		broken = memoryRules(c, d, l)
	}
	return verdict{broken: broken, d: d, rows: l.rows, stride: l.stride, dstStride: l.dstStride}
}

// normRules returns the row length d, or the rule the Norm (or Forward's w and eps) breaks.
//
// "A row has d elements: len(w) for Forward, ForwardBF16 and ForwardF16; len(Weight) for a Norm
// with a weight (Dim is then 0 or len(Weight)); Dim for a Norm without one." "Eps must be finite
// and >= 0 (eps for Forward) ... Dim must not be negative, and UnitOffset needs a Weight."
// "Norm.Workers must not be negative." "Norm.Bias, when set, has exactly d elements."
func normRules(c *sweepCase) (int, *rule) {
	if e := float64(c.eps); math.IsNaN(e) || math.IsInf(e, 0) || e < 0 {
		return 0, ruleEps
	}
	w := c.bufs[argW]
	if c.e.kind == kindForward {
		return w.len, nil
	}
	if c.workers < 0 {
		return 0, ruleWorkers
	}
	d := c.dim
	switch {
	case w.set && c.dim != 0 && c.dim != w.len:
		return 0, ruleDim
	case w.set:
		d = w.len
	case c.unitOffset:
		return 0, ruleUnitOffset
	case c.dim < 0:
		return 0, ruleDimSign
	}
	if b := c.bufs[argBias]; b.set && b.len != d {
		return 0, ruleBiasLen
	}
	return d, nil
}

// layoutRules returns the rows of a call with row length d, or the rule its layout breaks.
//
//   - "Back to back (Rows.N = 0, and always for the Forward functions and methods): X holds
//     len(X)/d rows, so len(X) must be a multiple of d; len(Dst) must equal len(X); Stride must
//     be 0 or d."
//   - "Strided (Rows.N > 0): N rows whose starts lie Stride elements apart (Stride 0 means d,
//     else Stride >= d). X must hold at least (N-1)*Stride + d elements."
//   - "DstStride 0 means Stride, else DstStride >= d, and like Stride it needs N (with N = 0 it
//     must be 0 or d). Dst must hold at least (N-1)*DstStride + d elements."
//   - "Rows.Residual, when set, has the layout of X"; "Grad: DX and DY have the layout of X
//     (len(DX) == len(DY) == len(X) back to back, at least (N-1)*Stride + d strided)".
//   - "N, Stride and DstStride must not be negative ... a row length of 0 ... is only allowed
//     for a call without rows".
//   - "An optional buffer ... is set when it is not nil": a nil Residual or DX has no length to
//     check.
func layoutRules(c *sweepCase, d int) (rowSpans, *rule) {
	var l rowSpans
	if c.n < 0 || c.stride < 0 || c.dstStride < 0 {
		return l, ruleNegative
	}
	x := c.bufs[argX].len
	// The buffers in the layout of X besides X: Residual, or DY and DX (DY is not optional: a
	// nil DY has length 0, and the optional ones count when set).
	same := []placed{c.bufs[argRes]}
	if c.e.kind == kindBackward {
		dy := c.bufs[argDY]
		dy.set = true
		same = append(same, dy, c.bufs[argDst])
	}
	if c.n == 0 {
		switch {
		case c.stride != 0 && c.stride != d:
			return l, rulePackedStride
		case c.dstStride != 0 && c.dstStride != d:
			return l, rulePackedDst
		case d == 0 && x != 0:
			return l, ruleNoRowLength
		case d != 0 && x%d != 0:
			return l, ruleMultiple
		}
		if c.e.kind != kindBackward && c.bufs[argDst].len != x {
			return l, rulePackedLen
		}
		for _, b := range same {
			if b.set && b.len != x {
				return l, rulePackedLen
			}
		}
		if d > 0 {
			l.rows = x / d
		}
		return rowSpans{rows: l.rows, stride: d, dstStride: d, span: x, dstSpan: x}, nil
	}
	if d == 0 {
		return l, ruleNoRowLength
	}
	stride, dstStride := c.stride, c.dstStride
	if stride == 0 {
		stride = d
	}
	if dstStride == 0 || c.e.kind == kindBackward { // Grad has no DstStride: DX takes Stride
		dstStride = stride
	}
	switch {
	case stride < d:
		return l, ruleStride
	case dstStride < d:
		return l, ruleDstStride
	case !holds(x, c.n, stride, d):
		return l, ruleXSpan
	case c.e.kind != kindBackward && !holds(c.bufs[argDst].len, c.n, dstStride, d):
		return l, ruleDstSpan
	}
	for _, b := range same {
		if b.set && !holds(b.len, c.n, stride, d) {
			return l, ruleRowsSpan
		}
	}
	// X (and Dst) hold the spans, so they fit in an int.
	return rowSpans{rows: c.n, stride: stride, dstStride: dstStride,
		span: (c.n-1)*stride + d, dstSpan: (c.n-1)*dstStride + d}, nil
}

// holds reports whether a buffer of length elements holds n rows of d, stride apart: length >=
// (n-1)*stride + d, computed without overflow.
func holds(length, n, stride, d int) bool {
	span := new(big.Int).Mul(big.NewInt(int64(n-1)), big.NewInt(int64(stride)))
	span.Add(span, big.NewInt(int64(d)))
	return big.NewInt(int64(length)).Cmp(span) >= 0
}

// optionalRules returns the rule the optional buffers' lengths break, for a call of rows rows of d.
//
// "Rows.Inv, when set, needs len(Inv) >= the number of rows ... Rows.Mean the same, and it needs a
// Norm with Center." "Grad.Inv needs len(Inv) >= the number of rows, Grad.Mean too (and a Norm
// with Center); Grad.DW, when set, has exactly d elements and needs a Norm with a weight; Grad.DB
// exactly d and a Norm with a Bias." "An empty slice that is not nil is checked for its length
// like any other."
func optionalRules(c *sweepCase, d, rows int) *rule {
	inv, mean, dw, db := c.bufs[argInv], c.bufs[argMean], c.bufs[argDW], c.bufs[argDB]
	switch {
	case inv.set && inv.len < rows:
		return ruleInvLen
	case mean.set && !c.center:
		return ruleMeanCenter
	case mean.set && mean.len < rows:
		return ruleMeanLen
	case dw.set && (!c.bufs[argW].set || dw.len != d):
		return ruleDW
	case db.set && (!c.bufs[argBias].set || db.len != d):
		return ruleDB
	}
	return nil
}

// memoryRules returns the rule a call with rows breaks by the memory its buffers share.
//
// "Memory, counted over each buffer's rows from the first row's start to the last row's end (the
// gaps of strided rows included), over Inv[0:rows] and Mean[0:rows] (one element per row), and
// over the d elements of the weight, the bias, DW and DB: Dst (dst) is either X (x) itself, the
// same first element and the same stride (DstStride equal to Stride) for an in-place call, or
// shares none with it, and shares none with the weight (RowsTo16's Dst, 16-bit where X is float32,
// is never X); Residual shares none with X, Dst or the weight; Inv none with X, Dst, the weight or
// Residual. The bias, read only like the weight, shares none with an output (Dst, Residual, Inv;
// in Backward DX, DW, DB, not Grad.Inv, which Backward reads); Mean shares none with any buffer of
// the call. In Backward, DX is DY itself or shares none with it, and shares none with X, the
// weight, Inv or DW; DW shares none with X, DY, the weight or Inv; DB none with X, DY, DX, the
// weight, Inv or DW. Buffers these rules do not keep apart may share memory."
func memoryRules(c *sweepCase, d int, l rowSpans) *rule {
	m := func(a arg, elems int) memory { return c.memoryOf(a, elems) }
	x, w, bias := m(argX, l.span), m(argW, d), m(argBias, d)
	inv, mean := m(argInv, l.rows), m(argMean, l.rows)
	if c.e.kind == kindBackward {
		dx, dy, dw, db := m(argDst, l.span), m(argDY, l.span), m(argDW, d), m(argDB, d)
		switch {
		case dx.shares(dy) && !dx.sameStart(dy):
			return ruleDXDY
		case dx.sharesAny(x, w, inv, dw):
			return ruleDXOthers
		case dw.sharesAny(x, dy, w, inv):
			return ruleDWOthers
		case db.sharesAny(x, dy, dx, w, inv, dw):
			return ruleDBOthers
		case bias.sharesAny(dx, dw, db):
			return ruleBias
		case mean.sharesAny(x, dy, dx, w, inv, dw, bias, db):
			return ruleMean
		}
		return nil
	}
	dst, res := m(argDst, l.dstSpan), m(argRes, l.span)
	inPlace := dst.sameStart(x) && c.e.x16 == c.e.dst16 && l.dstStride == l.stride
	switch {
	case dst.shares(x) && !inPlace:
		return ruleDstX
	case dst.shares(w):
		return ruleDstW
	case res.sharesAny(x, dst, w):
		return ruleResidual
	case inv.sharesAny(x, dst, w, res):
		return ruleInv
	case bias.sharesAny(dst, res, inv):
		return ruleBias
	case mean.sharesAny(x, dst, w, res, inv, bias):
		return ruleMean
	}
	return nil
}

// conversionRules returns the rule a conversion breaks: BF16ToFloat32, F16ToFloat32,
// Float32ToBF16 and Float32ToF16 each "panics, before writing anything, unless len(dst) ==
// len(src) and dst and src share no memory."
func conversionRules(c *sweepCase) *rule {
	dst, src := c.bufs[argDst], c.bufs[argX]
	if dst.len != src.len {
		return ruleConvertLen
	}
	if c.memoryOf(argDst, dst.len).shares(c.memoryOf(argX, src.len)) {
		return ruleConvertMem
	}
	return nil
}

// memory is the bytes [lo, hi) of an arena that a buffer's elements of a call occupy; a nil
// buffer occupies none.
type memory struct {
	set           bool
	arena, lo, hi int
}

// memoryOf returns the memory of the first elems elements of buffer a.
func (c *sweepCase) memoryOf(a arg, elems int) memory {
	p := c.bufs[a]
	return memory{set: p.set, arena: p.arena, lo: p.off, hi: p.off + elems*c.e.size(a)}
}

// shares reports whether m and o have a byte in common (a buffer of no bytes shares none).
func (m memory) shares(o memory) bool {
	return m.set && o.set && m.arena == o.arena && m.lo < m.hi && o.lo < o.hi && m.lo < o.hi && o.lo < m.hi
}

func (m memory) sharesAny(os ...memory) bool {
	for _, o := range os {
		if m.shares(o) {
			return true
		}
	}
	return false
}

// sameStart reports whether m and o begin at the same byte: the same first element.
func (m memory) sameStart(o memory) bool {
	return m.set && o.set && m.arena == o.arena && m.lo == o.lo
}
