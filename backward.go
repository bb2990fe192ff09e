package rmsnorm

import (
	"math"
	"math/bits"
	"sync"
)

// Grad describes one backward call for rows laid out as in Rows.
type Grad struct {
	// DX receives dL/dx for the rows of X, at their positions, given DY = dL/dy. DX may be DY
	// itself (in place: the same first element) or share no memory with DY; it shares none with X,
	// Inv, Mean, DW, DB, the weight or the bias (the package doc has every overlap rule). A nil DX
	// asks for the weight gradient alone (DW): no dx is written (Backward reads DY, X and Inv as
	// usual).
	DX []float32
	// X holds the rows the forward pass normalized (with Rows.Residual: h, the sum it stored).
	X []float32
	// DY holds dL/dy, the gradient of the forward's output, in the layout of X.
	DY []float32
	// N is the number of rows, as in Rows: zero means len(X)/d rows back to back, and then
	// len(DX) and len(DY) must equal len(X).
	N int
	// Stride is the distance in elements between the starts of consecutive rows in DX, X and DY,
	// as in Rows: zero means d; it must be >= d, and a stride other than d needs N.
	Stride int
	// Inv, optional, holds 1/rms of each row from the forward pass (Rows.Inv), at least one per
	// row. When nil, inv is recomputed by the forward contract.
	Inv []float32
	// Mean, optional, for a Norm with Center: the mean of each row from the forward pass
	// (Rows.Mean), at least one per row, read like Inv. When nil, the mean is recomputed by the
	// forward contract.
	Mean []float32
	// DW, optional, of len d: the weight gradient is added to it, so that it accumulates over
	// calls. It must be nil for a Norm without a weight.
	DW []float32
	// DB, optional, of len d: the bias gradient (the sum of DY over the rows) is added to it, in
	// DW's blocks of rows. It needs a Norm with a Bias.
	DB []float32
}

// Backward computes the gradient of Apply without a residual, for
// y = (x*inv)*w' with w' = Weight, 1+Weight (UnitOffset) or 1 (no weight), and for LayerNorm
// y = ((x-mean)*inv)*w' + Bias (Center; the bias with or without it):
//
//	DX = dL/dx given DY = dL/dy, for every row;
//	DW += dL/dw' summed over the rows (dL/dw' = dL/dw, also for UnitOffset);
//	DB += dL/dBias = DY summed over the rows.
//
// The package documentation gives the exact arithmetic. With Rows.Residual in the forward pass,
// the row that was normalized is h = x + residual, and the gradient DX of h flows both to the
// residual stream and to the block's input: the caller adds it to both (Norm.Backward's example).
// Backward panics, before writing anything, if the lengths, the stride, Eps or the overlaps break
// the rules of Norm and Grad.
//
//go:noinline
func (n Norm) Backward(g Grad) {
	backwardRows(&n, &g, useActive)
}

var backwardNames = names{"Norm.Backward", "DX", "X", "Weight", "Eps"}

// backwardRows validates a Backward call and runs it with kernel k. The checks here only decide
// whether the call is valid; explainBackward finds the rule it breaks.
func backwardRows(n *Norm, g *Grad, k kernelID) {
	d, mode, good := n.shape()
	rows, stride, span, exact, ok := layout(d, g.N, g.Stride, len(g.X))
	bad := !good || !ok || (g.DX != nil && !fits(len(g.DX), span, exact)) || !fits(len(g.DY), span, exact)
	bad = bad || !epsOK(n.Eps) || (g.Inv != nil && len(g.Inv) < rows) ||
		(g.DW != nil && (mode == unweighted || len(g.DW) != d)) ||
		(n.Bias != nil && len(n.Bias) != d) || (g.Mean != nil && (!n.Center || len(g.Mean) < rows)) ||
		(g.DB != nil && (n.Bias == nil || len(g.DB) != d))
	if !bad && rows > 0 {
		sb := uintptr(span) * 4
		dxp, xp, dyp := addr(g.DX), addr(g.X), addr(g.DY)
		dxb := sb // DX's bytes: none without DX
		if g.DX == nil {
			dxb = 0
		}
		wp, wb := addr(n.Weight), uintptr(len(n.Weight))*4
		ip, ib := addr(g.Inv), uintptr(len(g.Inv[:min(rows, len(g.Inv))]))*4
		dwp, dwb := addr(g.DW), uintptr(len(g.DW))*4
		bad = (dxp != dyp && !disjoint(dxp, dxb, dyp, sb)) || !disjoint(dxp, dxb, xp, sb) ||
			!disjoint(dxp, dxb, wp, wb) || !disjoint(dxp, dxb, ip, ib) || !disjoint(dxp, dxb, dwp, dwb) ||
			!disjoint(dwp, dwb, xp, sb) || !disjoint(dwp, dwb, dyp, sb) || !disjoint(dwp, dwb, wp, wb) ||
			!disjoint(dwp, dwb, ip, ib)
		if n.Bias != nil || g.Mean != nil {
			// LayerNorm: the bias (not read here) shares no memory with an output, as in the
			// forward forms; Mean and DB share none with any buffer.
			bp, bb := addr(n.Bias), uintptr(len(n.Bias))*4
			mp, mb := addr(g.Mean), uintptr(len(g.Mean[:min(rows, len(g.Mean))]))*4
			dbp, dbb := addr(g.DB), uintptr(len(g.DB))*4
			bad = bad || !disjoint(bp, bb, dxp, dxb) || !disjoint(bp, bb, dwp, dwb) || !disjoint(bp, bb, dbp, dbb) ||
				!disjoint(mp, mb, xp, sb) || !disjoint(mp, mb, dyp, sb) || !disjoint(mp, mb, dxp, dxb) ||
				!disjoint(mp, mb, wp, wb) || !disjoint(mp, mb, ip, ib) || !disjoint(mp, mb, dwp, dwb) ||
				!disjoint(mp, mb, bp, bb) || !disjoint(mp, mb, dbp, dbb) ||
				!disjoint(dbp, dbb, xp, sb) || !disjoint(dbp, dbb, dyp, sb) || !disjoint(dbp, dbb, dxp, dxb) ||
				!disjoint(dbp, dbb, wp, wb) || !disjoint(dbp, dbb, ip, ib) || !disjoint(dbp, dbb, dwp, dwb)
		}
	}
	if bad {
		panic(explainBackward(n, g))
	}
	if rows == 0 || (g.DX == nil && g.DW == nil && g.DB == nil) { // nothing to write
		return
	}
	var j job
	j.dst, j.x, j.dy = ptr(g.DX), ptr(g.X), ptr(g.DY)
	if mode != unweighted {
		j.w = ptr(n.Weight)
	}
	if g.Inv != nil {
		j.inv = ptr(g.Inv)
	}
	if g.DW != nil {
		j.dw = ptr(g.DW)
	}
	j.d, j.stride, j.dstStride, j.rows, j.eps, j.mode, j.format = d, stride, stride, rows, n.Eps, mode, formatF32
	// Without DX (j.dst nil), runBackward gives each worker one scratch row for dx (dstStride 0).
	j.flags = n.flags(formatF32) // flagOffset: Weighted and Offset share a kernel function (spec.BackwardVariant.Body)
	// The Layer variants: Center, or a bias gradient to sum. A bias without DB changes nothing
	// in the backward pass, which then stays on the RMSNorm variants.
	layer := n.Center || g.DB != nil
	if n.Center {
		j.flags |= flagCenter
		j.mean = ptr(g.Mean)
	}
	j.db = ptr(g.DB)
	j.v = backwardVariant[b2i(layer)][mode]
	if k == useActive {
		k = activeKernel()
	}
	j.runBackward(k, n.Workers)
}

// emptyWeight words a weight of length 0 for a message: nil, or empty (a slice of length 0).
func emptyWeight(w []float32) string {
	if w == nil {
		return "nil"
	}
	return "empty"
}

// emptyDX adds to a message about the length of the buffer named name what a caller who passed an
// empty but non-nil DX may have meant: a nil DX is the way to ask for the weight gradient alone.
func emptyDX(name string, dx []float32) string {
	if name == "DX" && dx != nil && len(dx) == 0 {
		return " (an empty DX is still a DX: leave it nil to ask for DW alone)"
	}
	return ""
}

// explainBackward panics with the first rule a Backward call breaks, as explainForward does.
func explainBackward(n *Norm, g *Grad) string {
	nm := &backwardNames
	d, mode := checkNorm(n, nm)
	rows, stride := g.N, g.Stride
	nm.failNegative(count{"N", rows}, count{"Stride", stride})
	if d == 0 && (len(g.X) != 0 || rows != 0) {
		nm.fail("the row length is 0 (Weight is %s and Dim is 0) with len(X) = %d and N = %d", emptyWeight(n.Weight), len(g.X), rows)
	}
	var span int
	if rows == 0 {
		if stride != 0 && stride != d {
			nm.fail("Stride = %d needs N: with N = 0 the rows of length %d fill X back to back", stride, d)
		}
		if len(g.X)%max(d, 1) != 0 {
			nm.fail("len(X) = %d is not a multiple of the row length %s = %d", len(g.X), rowLengthName(n, nm), d)
		}
		for _, s := range []struct {
			name string
			n    int
		}{{"DX", len(g.DX)}, {"DY", len(g.DY)}} {
			if s.n != len(g.X) && (s.name != "DX" || g.DX != nil) {
				nm.fail("len(%s) = %d, want len(X) = %d%s", s.name, s.n, len(g.X), emptyDX(s.name, g.DX))
			}
		}
		span = len(g.X)
		if d > 0 {
			rows = span / d
		}
		stride = d
	} else {
		if stride == 0 {
			stride = d
		}
		if stride < d {
			nm.fail("Stride = %d is shorter than the row length %d", stride, d)
		}
		hi, lo := bits.Mul64(uint64(rows-1), uint64(stride))
		if hi != 0 || lo > uint64(math.MaxInt-d) {
			nm.fail("N = %d, %s: the rows do not fit in memory", rows, strideText("Stride", g.Stride, stride))
		}
		span = int(lo) + d
		for _, s := range []struct {
			name string
			n    int
		}{{"X", len(g.X)}, {"DX", len(g.DX)}, {"DY", len(g.DY)}} {
			if s.n < span && (s.name != "DX" || g.DX != nil) {
				nm.fail("len(%s) = %d, want at least %d for N = %s of %d with %s%s", s.name, s.n, span,
					rowCount(rows), d, strideText("Stride", g.Stride, stride), emptyDX(s.name, g.DX))
			}
		}
	}
	checkEps(nm, n.Eps)
	if g.Inv != nil && len(g.Inv) < rows {
		nm.fail("len(Inv) = %d is shorter than the call's %s", len(g.Inv), rowCount(rows))
	}
	checkMean(n, nm, g.Mean, rows, true)
	if g.DB != nil {
		if n.Bias == nil {
			nm.fail("DB is set but the Norm has no Bias (len(DB) = %d)", len(g.DB))
		}
		if len(g.DB) != d {
			nm.fail("len(DB) = %d, want the row length %s = %d", len(g.DB), rowLengthName(n, nm), d)
		}
	}
	if g.DW != nil {
		if mode == unweighted {
			nm.fail("DW is set but the Norm has no weight (len(DW) = %d)", len(g.DW))
		}
		if len(g.DW) != d {
			nm.fail("len(DW) = %d, want the row length len(Weight) = %d", len(g.DW), d)
		}
	}
	if rows == 0 {
		return "rmsnorm: " + nm.fn + ": internal error: the fast check rejected a valid call"
	}
	x, dy := region("X", g.X[:span]), region("DY", g.DY[:span])
	dx := noRegion
	if g.DX != nil {
		dx = region("DX", g.DX[:span])
	}
	w, dw, inv := region("Weight", n.Weight), noRegion, noRegion
	if g.DW != nil {
		dw = region("DW", g.DW)
	}
	if g.Inv != nil {
		inv = region("Inv", g.Inv[:rows])
	}
	if dx.overlaps(dy) && dx.p != dy.p {
		nm.fail("DX overlaps DY without starting at the same element (in place needs DX and DY to be the same slice)")
	}
	for _, o := range []area{x, w, inv, dw} {
		if dx.overlaps(o) {
			nm.fail("DX overlaps %s", o.name)
		}
	}
	for _, o := range []area{x, dy, w, inv} {
		if dw.overlaps(o) {
			nm.fail("DW overlaps %s", o.name)
		}
	}
	b, m, db := noRegion, noRegion, noRegion
	if n.Bias != nil {
		b = region("Bias", n.Bias)
	}
	if g.Mean != nil {
		m = region("Mean", g.Mean[:rows])
	}
	if g.DB != nil {
		db = region("DB", g.DB)
	}
	for _, o := range []area{x, dy, w, inv, dx, dw} {
		if db.overlaps(o) {
			nm.fail("DB overlaps %s", o.name)
		}
	}
	explainLayerOverlaps(nm, []area{dx, dw, db}, []area{x, dy, w, inv}, b, m)

	return "rmsnorm: " + nm.fn + ": internal error: the fast check rejected a valid call"
}

// accPool holds the buffers for the weight gradient's partial sums.
var accPool sync.Pool

// getAcc returns a buffer of at least n floats from accPool.
func getAcc(n int) *[]float32 {
	if b, ok := accPool.Get().(*[]float32); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]float32, n)
	return &b
}

// runBackward runs the validated backward job on up to workers goroutines (see Norm.Workers).
//
// The weight gradient (and the bias gradient, the same way in buffers of its own) is summed by
// blocks of gradBlock rows, fixed by the row index: within a
// block the products go into a partial sum P in row order (P = q of the first row, then P += q),
// and the blocks' sums go into DW in block order (DW += P). One worker keeps one P and adds it to
// DW at each block's last row (flagFuse); several workers each fill the P of their own blocks, one
// slot per block, and the slots are added to DW afterwards, in block order, column by column, in
// parallel. Both orders are the same additions, so the bits do not depend on the workers.
//
// Without DX (j.dst nil) the kernels write each row's dx into one scratch row of d floats, a row
// per worker (dstStride 0): the same arithmetic, so DW keeps its bits, and no pass over memory
// for dx.
func (j *job) runBackward(k kernelID, workers int) {
	j.setBackwardMemoryFlags()
	blocks := (j.rows + gradBlock - 1) / gradBlock
	buffers := uintptr(3) // x, dy, dx
	if j.dst == nil {
		buffers = 2
	}
	w := workersFor(workers, buffers*uintptr(j.rows)*uintptr(j.d)*4, blocks, workerBytes.backward)
	if w <= 1 {
		var acc, accB, scratch *[]float32
		if j.dw != nil && j.rows > 1 {
			acc = getAcc(j.d)
			j.acc = ptr(*acc)
		}
		if j.db != nil && j.rows > 1 {
			accB = getAcc(j.d)
			j.accB = ptr(*accB)
		}
		if j.dst == nil {
			scratch = getAcc(j.d)
			j.dst, j.dstStride = ptr(*scratch), 0
		}
		j.flags |= flagFuse
		j.runRange(k, 0, j.rows)
		if acc != nil {
			j.acc = nil
			accPool.Put(acc)
		}
		if accB != nil {
			j.accB = nil
			accPool.Put(accB)
		}
		if scratch != nil {
			j.dst = nil
			accPool.Put(scratch)
		}
		return
	}
	j.splitBackward(k, w, blocks)
}

// splitBackward runs the backward job on w goroutines, each on whole blocks of rows, then adds the
// blocks' partial sums to DW, column ranges in parallel (see splitCall).
func (j *job) splitBackward(k kernelID, w, blocks int) {
	c := newSplit(j, k, w)
	c.blocks = blocks
	var acc, accB, scratch *[]float32
	if j.dw != nil {
		acc = getAcc(blocks * j.d)
		c.j.acc = ptr(*acc)
	}
	if j.db != nil {
		accB = getAcc(blocks * j.d)
		c.j.accB = ptr(*accB)
	}
	if j.dst == nil { // no DX: a scratch row per part (runPart)
		scratch = getAcc(w * j.d)
		c.j.dst, c.j.dstStride = ptr(*scratch), 0
		c.scratchDX = true
	}
	c.run(stageBlocks)
	if acc != nil || accB != nil {
		c.run(stageColumns)
	}
	if acc != nil {
		accPool.Put(acc)
	}
	if accB != nil {
		accPool.Put(accB)
	}
	if scratch != nil {
		accPool.Put(scratch)
	}
	c.free()
}

// call runs rows [from, to) with kernel k: the generic kernel's Go functions directly, the others
// through callKernel's table.
func (j *job) call(k kernelID, from, to int) int {
	if k == kernelGeneric {
		if j.v >= numVariants {
			return runGenericBackward(j, from, to)
		}
		return runGeneric(j, from, to)
	}
	return callKernel(j, from, to)
}

// runRange runs rows [from, to) of the job with kernel k, the rows that need the float64 path
// in Go.
func (j *job) runRange(k kernelID, from, to int) {
	j.fn = uint32(k)*numEntries + uint32(j.v)
	if r := j.call(k, from, to); r < to {
		j.finish(r, to)
	}
}

// finish runs the rows from r to to, r the first one the kernel j.fn selects handed back: a row
// that needs the float64 path of the contract is done here in Go, and the kernel resumes after
// it. In the residual forms the row handed over already holds h in res, and nothing else of it
// has been written.
func (j *job) finish(r, to int) {
	k := j.kernel()
	for ; r < to; r = j.call(k, r+1, to) {
		switch {
		case j.v >= numVariants:
			j.backwardFloat64(r)
		case j.layer():
			j.layerFloat64(r)
		case j.format == formatF32:
			j.rowFloat64(r)
		default: // 16-bit output (RowsTo16's too)
			j.rowFloat64of16(r)
		}
	}
}
