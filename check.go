package rmsnorm

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
	"unsafe"

	"github.com/gosimd/rmsnorm/internal/streamrule"
)

// Validation happens before any write, so a panic leaves every slice as it was. Each entry point
// has a fast check, a few comparisons that decide only whether the call is valid, and a slow one
// that runs when it is not: it walks the rules in order and panics with the first that fails,
// naming the function and the values at fault in the caller's own terms (w or Weight, x or X).
// Keeping the messages off the fast path keeps a short row's call at a few nanoseconds.

// elem is what rows are stored as: float32, or the raw bits of a 16-bit format.
type elem interface{ float32 | uint16 }

// names are what a caller calls the arguments.
type names struct{ fn, dst, x, w, eps string }

var (
	forwardNames         = names{"Forward", "dst", "x", "w", "eps"}
	forwardBF16Names     = names{"ForwardBF16", "dst", "x", "w", "eps"}
	forwardF16Names      = names{"ForwardF16", "dst", "x", "w", "eps"}
	normForwardNames     = names{"Norm.Forward", "dst", "x", "Weight", "Eps"}
	normForwardBF16Names = names{"Norm.ForwardBF16", "dst", "x", "Weight", "Eps"}
	normForwardF16Names  = names{"Norm.ForwardF16", "dst", "x", "Weight", "Eps"}
	applyNames           = names{"Norm.Apply", "Dst", "X", "Weight", "Eps"}
	applyBF16Names       = names{"Norm.ApplyBF16", "Dst", "X", "Weight", "Eps"}
	applyF16Names        = names{"Norm.ApplyF16", "Dst", "X", "Weight", "Eps"}
	applyToBF16Names     = names{"Norm.ApplyToBF16", "Dst", "X", "Weight", "Eps"}
	applyToF16Names      = names{"Norm.ApplyToF16", "Dst", "X", "Weight", "Eps"}
)

func (nm *names) fail(format string, args ...any) {
	panic("rmsnorm: " + nm.fn + ": " + fmt.Sprintf(format, args...))
}

// count is a named integer field of a call (N, Stride, DstStride), for failNegative.
type count struct {
	name string
	v    int
}

// failNegative panics naming the fields of fs that are negative, and only those, if any is.
func (nm *names) failNegative(fs ...count) {
	var neg []string
	for _, f := range fs {
		if f.v < 0 {
			neg = append(neg, fmt.Sprintf("%s = %d", f.name, f.v))
		}
	}
	switch len(neg) {
	case 0:
		return
	case 1:
		nm.fail("%s must not be negative", neg[0])
	}
	nm.fail("%s and %s must not be negative", strings.Join(neg[:len(neg)-1], ", "), neg[len(neg)-1])
}

// addr returns the address of s's first element.
func addr[T any](s []T) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(s))) }

// ptr returns s's first element as an unsafe.Pointer.
func ptr[T any](s []T) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(s)) }

// sizeOf returns the bytes the elements of s take.
func sizeOf[T any](s []T) uintptr {
	var z T
	return uintptr(len(s)) * unsafe.Sizeof(z)
}

// disjoint reports whether the n1 bytes at a and the n2 bytes at b share no byte (empty ranges
// share nothing).
func disjoint(a, n1, b, n2 uintptr) bool {
	return n1 == 0 || n2 == 0 || a+n1 <= b || b+n2 <= a
}

// apart is disjoint for ranges known not to be empty: two comparisons.
func apart(a, n1, b, n2 uintptr) bool { return a+n1 <= b || b+n2 <= a }

// epsOK reports whether eps is finite and >= 0.
func epsOK(eps float32) bool { return eps >= 0 && eps <= math.MaxFloat32 }

// useActive, passed as the kernel of forwardRows and applyRows, stands for the active kernel, read
// after validation: Forward, ForwardBF16 and ForwardF16 stay small enough to be inlined at their
// call sites, and the tests pass any other kernel.
const useActive kernelID = 1<<32 - 1

// ruleOf is the rule of rowRules for kernel k: the avx512 kernel's, or the one of the others
// (which only the avx2 kernel reads).
func ruleOf(k kernelID) *streamrule.RowRule { return &rowRules[b2i(wide(k))] }

// wide reports whether k is the avx512 kernel (with or without AVX512_BF16): index 1 of the
// per-kernel rules (rowRules, hardwareRows), which streamrule decides with wide set.
func wide(k kernelID) bool { return k == kernelAVX512 || k == kernelAVX512BF16 }

// oneByOne reports whether forwardRows sends an in-cache call of rows rows of d in format f
// through kernel k's float32 one-row path one row at a time (flagRows), as its rule in rowRules
// (streamrule.Rows) says: float32 rows, more than one (that path takes a single row without the
// flag), d a multiple of 64.
func oneByOne(rows, d int, f format, k kernelID) bool {
	return rows > 1 && f == formatF32 && d%64 == 0 && ruleOf(k).OneByOne(rows, d)
}

// streamsOneByOne reports whether forwardRows sends a streamed call of float32 rows of d, out of
// place (flagNT set), through kernel k's one-row path one row at a time (flagRows with flagNT and
// flagPF), as its rule in rowRules says.
func streamsOneByOne(d int, f format, k kernelID) bool {
	return f == formatF32 && d%64 == 0 && ruleOf(k).Streams(d)
}

// setStreamFlags sets the flags of forwardRows's job for kernel k when its rows could fill the
// cache: the memory flags (setMemoryFlags), and flagRows for the streamed calls out of place that
// prefetch (flagNT and flagPF: not left to the hardware) and go one row at a time through the
// one-row path (streamsOneByOne), whose streamed loop takes exactly those three flags.
func (j *job) setStreamFlags(k kernelID) {
	j.setMemoryFlags()
	if j.flags&(flagNT|flagPF) == flagNT|flagPF && streamsOneByOne(j.d, j.format, k) {
		j.flags |= flagRows
	}
}

// forwardRows validates a Forward call and runs it with kernel k: the rows of x (len(w) long each),
// stored in format f, into dst. As in applyRows, the streaming decision runs only for rows that
// could fill the cache, and the kernel is called directly. Norm.Forward and Norm.Apply call it
// too, for rows back to back with a plain weight and nothing else; nm names the caller's
// arguments in its panics.
func forwardRows[T elem](nm *names, f format, dst, x []T, w []float32, eps float32, k kernelID) {
	d, n := len(w), len(x)
	rows := 1
	if n != d { // one row, the common call, needs no division
		rows = 0
		if d != 0 {
			rows = quo(n, d)
		}
	}
	var z T
	es := unsafe.Sizeof(z)
	xp, dp := addr(x), addr(dst)
	nb := uintptr(n) * es
	ok := rows*d == n && len(dst) == n && epsOK(eps)
	if ok && n == 0 {
		return
	}
	// Past the return n > 0, so a valid call has d > 0 too: no range is empty.
	if !ok || (dp != xp && !apart(dp, nb, xp, nb)) || !apart(dp, nb, addr(w), uintptr(d)*4) {
		panic(explainForward(nm, dst, x, w, eps))
	}
	if k == useActive {
		k = activeKernel()
	}
	// One row in cache whose length is a multiple of 64: the kernel's row function of its format,
	// which takes its arguments instead of a job (see callRow, rowOf16). A row it
	// leaves (the float64 path's, or any row on a kernel without one) goes on, having written
	// nothing.
	// (Two tests, float32 rows' as they had it alone: one with the formats in it measured 1 ns
	// more on Forward 1x128.)
	if rows == 1 && f == formatF32 && d%64 == 0 && 2*nb < uintptr(streamBytes) && callRow(ptr(dst), ptr(x), nil, ptr(w), d, eps, k) == rowDone {
		return
	}
	if rows == 1 && f != formatF32 && d%64 == 0 && 2*nb < uintptr(streamBytes) && rowOf16(f, false, ptr(dst), ptr(x), ptr(w), d, eps, k) == rowDone {
		return
	}
	v := forwardVariant[f][weighted][0] // k and v are read before j is declared: see job.init
	var j job
	j.init(ptr(dst), ptr(x), ptr(w), d, d, d, eps, 0, uint32(k)*numEntries+uint32(v), weighted, f, v, nil, nil, nil, nil, rows)
	if d > groupMax { // only rows this long may get flagGroups here: no call for the others
		j.setGroups(k)
	}
	if 2*nb >= uintptr(streamBytes) { // x and dst could fill the cache
		j.setStreamFlags(k)
	} else if oneByOne(rows, d, f, k) {
		j.flags |= flagRows
	}
	// job.run, written out: run is not inlinable, and its call would cost a short row more
	// than these lines.
	if r := callKernel(&j, 0, rows); r < j.rows {
		j.finish(r, j.rows)
	}
}

// rowOf16 runs one row of 16-bit format f (formatBF16 or formatF16) of d with a plain weight,
// rounded after x*inv too with rn (RoundNormalized), through kernel k's row function of that
// format, and returns what it returned: rowNone, having written nothing, when k has none or the
// row needs the float64 path. bfloat16 rows take callRowBF16 (callRowBF16RN with rn); binary16
// rows callRowF16 (callRowF16RN), or, without rn and for the row lengths of f16Buffer,
// callRowF16Buf, which keeps a float32 copy of the row, where k has it. A row that one leaves goes
// to callRowF16: on a kernel without it (noRow) that does the row; the float64 path's row (t out
// of range: for binary16 only a row of zeros with eps 0) it leaves too, having written nothing.
func rowOf16(f format, rn bool, dst, x, w unsafe.Pointer, d int, eps float32, k kernelID) int {
	switch {
	case rn && f == formatBF16:
		return callRowBF16RN(dst, x, nil, w, d, eps, k)
	case rn:
		return callRowF16RN(dst, x, nil, w, d, eps, k)
	case f == formatBF16:
		return callRowBF16(dst, x, nil, w, d, eps, k)
	case within(f16Buffer, d) && callRowF16Buf(dst, x, nil, w, d, eps, k) == rowDone:
		return rowDone
	}
	return callRowF16(dst, x, nil, w, d, eps, k)
}

// explainForward panics with the first rule a Forward call breaks. It returns, for the caller to
// panic with, only if the fast check rejected a valid call, a bug. The caller's panic ends its
// path, so the compiler keeps no value of the fast path alive across the call.
func explainForward[T elem](nm *names, dst, x []T, w []float32, eps float32) string {
	if len(w) == 0 && len(x) != 0 {
		nm.fail("len(%s) = 0 with len(%s) = %d: the row length is len(%s)", nm.w, nm.x, len(x), nm.w)
	}
	if len(x) != 0 && len(x)%len(w) != 0 {
		nm.fail("len(%s) = %d is not a multiple of the row length len(%s) = %d", nm.x, len(x), nm.w, len(w))
	}
	if len(dst) != len(x) {
		nm.fail("len(%s) = %d, want len(%s) = %d", nm.dst, len(dst), nm.x, len(x))
	}
	checkEps(nm, eps)
	explainOverlaps(nm, region(nm.dst, dst), region(nm.x, x), region(nm.w, w), noRegion, noRegion)
	return "rmsnorm: " + nm.fn + ": internal error: the fast check rejected a valid call"
}

// rowsOf is Rows (D = T = float32), Rows16 (D = T = uint16) and RowsTo16 (D = uint16,
// T = float32): the three have its fields, so an entry point converts a pointer to the rows it
// received, which are already in memory, and passes that instead of the fields one by one. A
// field added to one of them alone stops the conversion from compiling.
type rowsOf[D, T elem] struct {
	Dst       []D
	X         []T
	N         int
	Stride    int
	DstStride int
	Residual  []T
	Inv       []float32
	Mean      []float32
}

// applyRows validates a Norm.Apply call (Norm.Forward is one too) and runs it with kernel k: the
// rows r describes (see Apply), x and the residual stored in f.in(), dst in f.out(). It reports
// false, having written nothing, when the call breaks a rule; the entry point then panics with
// explainApply. It is the general path: the entry points send the common calls down shorter ones
// first (forwardRows, packedRows), and only the others, and any call those reject, come here. It
// is still a short row's whole path when the rows are strided or Inv is set, and the stores it
// makes wait behind those of the previous call's kernel, so it keeps them few: no call before the
// kernel's (the panic is the caller's, so the arguments need not be saved for it), rows back to
// back (N = 0) resolved inline, the streaming decision only for rows that could fill the cache or
// lie a stride apart.
func applyRows[D, T elem](n *Norm, r *rowsOf[D, T], f format, k kernelID) bool {
	d, mode, good := n.shape()
	var rows, stride, span int
	var exact, ok bool
	dstStride, dspan := r.DstStride, 0
	if r.N == 0 { // layout, written out: both halves inline, a call would make the compiler save every argument first
		rows, stride, span, exact, ok = layoutPacked(d, r.Stride, len(r.X))
		ok = ok && (dstStride == 0 || dstStride == d)
		dstStride, dspan = d, span
	} else {
		rows, stride, span, exact, ok = layoutStrided(d, r.N, r.Stride, len(r.X))
		if dstStride == 0 {
			dstStride = stride
		}
		dspan, ok = stridedSpan(d, rows, dstStride, ok)
	}
	res, inv := r.Residual, r.Inv
	bad := !good || !ok || !fits(len(r.Dst), dspan, exact) || (res != nil && !fits(len(res), span, exact))
	bad = bad || !epsOK(n.Eps) || (inv != nil && len(inv) < rows)
	// LayerNorm: Center or a Bias (of the row length), and Mean, which needs Center. The RMSNorm
	// calls test two fields and a nil Mean here, nothing more.
	bias, mean := n.Bias, r.Mean
	layer := n.Center || bias != nil
	if layer || mean != nil {
		bad = bad || (bias != nil && len(bias) != d) || (mean != nil && (!n.Center || len(mean) < rows))
	}
	var zd D
	var zt T
	ds, es := unsafe.Sizeof(zd), unsafe.Sizeof(zt)
	if !bad && rows > 0 {
		xp, dp, wp := addr(r.X), addr(r.Dst), addr(n.Weight)
		sb, db, wb := uintptr(span)*es, uintptr(dspan)*ds, uintptr(len(n.Weight))*4
		// In place: Dst is X, element for element (same type, same first element, same stride).
		inPlace := dp == xp && ds == es && dstStride == stride
		bad = (!inPlace && !disjoint(dp, db, xp, sb)) || !disjoint(dp, db, wp, wb)
		if res != nil {
			rp := addr(res)
			bad = bad || !disjoint(rp, sb, xp, sb) || !disjoint(rp, sb, dp, db) || !disjoint(rp, sb, wp, wb)
		}
		if inv != nil {
			ip, ib := addr(inv), uintptr(rows)*4
			bad = bad || !disjoint(ip, ib, xp, sb) || !disjoint(ip, ib, dp, db) || !disjoint(ip, ib, wp, wb) ||
				(res != nil && !disjoint(ip, ib, addr(res), sb))
		}
		if layer || mean != nil {
			// The bias is read only, like the weight: it may share memory with X or the weight,
			// with no output. Mean shares none with any buffer.
			bp, bb := addr(bias), uintptr(len(bias))*4
			rp, rb := addr(res), uintptr(0)
			if res != nil {
				rb = sb
			}
			ip, ib := addr(inv), uintptr(0)
			if inv != nil {
				ib = uintptr(rows) * 4
			}
			bad = bad || !disjoint(bp, bb, dp, db) || !disjoint(bp, bb, rp, rb) || !disjoint(bp, bb, ip, ib)
			if mean != nil {
				mp, mb := addr(mean), uintptr(rows)*4
				bad = bad || !disjoint(mp, mb, xp, sb) || !disjoint(mp, mb, dp, db) || !disjoint(mp, mb, wp, wb) ||
					!disjoint(mp, mb, rp, rb) || !disjoint(mp, mb, ip, ib) || !disjoint(mp, mb, bp, bb)
			}
		}
	}
	if bad {
		return false
	}
	if rows == 0 {
		return true
	}
	flags := n.flags(f)
	if k == useActive {
		k = activeKernel()
	}
	vs := &forwardVariant
	if layer {
		// The Layer variants: one kernel body per format tells Center by flagCenter and the bias
		// by its pointer.
		vs = &layerVariant
		if n.Center {
			flags |= flagCenter
		}
	}
	v := vs[f][mode][b2i(res != nil)]
	// Everything is read before the job is declared: a load between its zeroing and the stores
	// that cover it would keep the zeroing (the compiler cannot tell r and n from j).
	dp, xp, wp, eps, workers := ptr(r.Dst), ptr(r.X), ptr(n.Weight), n.Eps, n.Workers
	bp, mp := ptr(bias), ptr(mean)
	var j job
	j.init(dp, xp, wp, d, stride, dstStride, eps, flags, uint32(k)*numEntries+uint32(v), mode, f, v, ptr(res), ptr(inv), bp, mp, rows)
	j.setGroups(k)
	if 3*uintptr(span)*es >= uintptr(streamBytes) || stride != d { // x, dst and res could fill the cache
		j.setMemoryFlags()
	}
	if workers > 1 {
		j.runWorkers(k, workers)
		return true
	}
	if row := callKernel(&j, 0, rows); row < j.rows { // run, inline: see forwardRows
		j.finish(row, j.rows)
	}
	return true
}

// setGroups sets flagGroups on the validated forward job j of kernel k when k is the AVX-512
// kernel and its rule says so: LayerNorm's rows (j.layer) from avx512LayerGroups (not 0) to
// longGroupMax, and with avx512LongGroups RMSNorm's rows longer than groupMax, up to longGroupMax
// (shorter ones group without it), 16-bit rows (in, out or both) in cache and float32 ones where
// f32Groups takes the call (by d and the bytes it moves); of rows longer than groupMax, only
// those in cache (the AVX-512 groups of such rows were measured faster there alone). Calls of
// fewer than four rows and calls with a residual, which no function groups, never get it. The
// AVX2 functions take groups of rows of at most groupMax without it.
func (j *job) setGroups(k kernelID) {
	d := j.d
	switch {
	case k != kernelAVX512 && k != kernelAVX512BF16 || d > longGroupMax || j.rows < 4 || j.res != nil:
		// A group takes four rows, and no function groups rows with a residual: the flag would
		// only cost its tests.
		return
	case j.layer():
		if from := avx512LayerGroups; from == 0 || d < from {
			return
		}
	case !avx512LongGroups || d <= groupMax:
		return
	case j.format == formatF32 && !f32Groups.Takes(d, int(j.rowBytes())*j.rows):
		return
	}
	if d > groupMax && j.fromMemory() {
		return
	}
	j.flags |= flagGroups
}

// stridedSpan returns the elements that rows of length d, stride apart, span ((rows-1)*stride + d,
// rows > 0), and ok unless stride < d or the span overflows (or ok was false already).
func stridedSpan(d, rows, stride int, ok bool) (int, bool) {
	hi, lo := bits.Mul64(uint64(rows-1), uint64(stride))
	return int(lo) + d, ok && stride >= d && hi == 0 && lo <= uint64(math.MaxInt-d)
}

// packedRows validates and runs a Norm.Apply call of the common kind: rows back to back (N,
// Stride and DstStride 0), with or without a residual, no Inv, one goroutine, a weight of the
// Norm's own length (the caller checks those: packable, or packedLayer), weight form and rounding
// in flags (flagOffset, flagRN). It reports false, having written nothing, when the call breaks a
// rule or is empty; the caller then takes the general path, which says which rule. With
// flagCenter or a bias (len d) the call is LayerNorm's, on the Layer variants (packedLayer); bias
// is nil otherwise. A function of its own, with fewer values live than applyRows, so fewer stores
// before the kernel's (see applyRows).
func packedRows[D, T elem](r *rowsOf[D, T], f format, w []float32, eps float32, flags uint32, bias []float32, k kernelID) bool {
	d, nx, res := len(w), len(r.X), r.Residual
	if d == 0 || nx == 0 {
		return false
	}
	rows := 1
	if nx != d { // one row, the common call, needs no division
		rows = quo(nx, d)
	}
	var zd D
	var zt T
	ds, es := unsafe.Sizeof(zd), unsafe.Sizeof(zt)
	sb, db, wb := uintptr(nx)*es, uintptr(nx)*ds, uintptr(d)*4
	xp, dp, wp := addr(r.X), addr(r.Dst), addr(w)
	// No range is empty (nx, d > 0): two comparisons per pair. In place needs Dst to be X, of the
	// same element type.
	ok := rows*d == nx && len(r.Dst) == nx && epsOK(eps) && ((dp == xp && ds == es) || apart(dp, db, xp, sb)) && apart(dp, db, wp, wb)
	if res != nil {
		rp := addr(res)
		ok = ok && len(res) == nx && apart(rp, sb, xp, sb) && apart(rp, sb, dp, db) && apart(rp, sb, wp, wb)
	}
	// LayerNorm (flagCenter or a bias; see packedLayer): the bias, read only like the weight, has
	// the row's length and shares no memory with an output.
	layer := flags&flagCenter != 0 || bias != nil
	if bias != nil {
		bp, bb := addr(bias), uintptr(d)*4
		ok = ok && len(bias) == d && apart(bp, bb, dp, db) && (res == nil || apart(bp, bb, addr(res), sb))
	}
	if !ok {
		return false
	}
	mode := weighted
	if flags&flagOffset != 0 {
		mode = offset
	}
	if k == useActive {
		k = activeKernel()
	}
	vs := &forwardVariant
	if layer {
		vs = &layerVariant
	}
	// One bfloat16 or binary16 row in cache without a residual (ApplyBF16's and ApplyF16's call
	// for one token), with a plain weight, rounded after x*inv too or not (RoundNormalized): its
	// row function, as forwardRows does.
	if rows == 1 && res == nil && (f == formatBF16 || f == formatF16) && flags&^flagRN == 0 && !layer && d%64 == 0 && 2*sb < uintptr(streamBytes) &&
		rowOf16(f, flags == flagRN, ptr(r.Dst), ptr(r.X), ptr(w), d, eps, k) == rowDone {
		return true
	}
	// One float32 row in cache with a residual, a plain weight, no Inv (the pre-norm block's call
	// for one token): the kernel's row function, as forwardRows does for a row without one. A row
	// that needs the float64 path comes back with h in res (rowHeld): the job finishes it there.
	held := false
	if rows == 1 && res != nil && f == formatF32 && flags == 0 && !layer && d%64 == 0 && 3*sb < uintptr(streamBytes) {
		switch callRow(ptr(r.Dst), ptr(r.X), ptr(res), ptr(w), d, eps, k) {
		case rowDone:
			return true
		case rowHeld:
			held = true
		}
	}
	v := vs[f][mode][b2i(res != nil)]
	dst, x := ptr(r.Dst), ptr(r.X) // read before the job is declared: see applyRows
	var j job
	j.init(dst, x, ptr(w), d, d, d, eps, flags, uint32(k)*numEntries+uint32(v), mode, f, v, ptr(res), nil, ptr(bias), nil, rows)
	j.setGroups(k)
	if 3*sb >= uintptr(streamBytes) { // x, dst and res could fill the cache
		j.setMemoryFlags()
	}
	if held {
		j.finish(0, 1) // the float64 path of a row whose h is in res
		return true
	}
	if row := callKernel(&j, 0, rows); row < j.rows { // run, inline: see forwardRows
		j.finish(row, j.rows)
	}
	return true
}

// packedLayer runs a LayerNorm call of n (Center or a Bias: n.layer()) on rows back to back through
// packedRows, and reports whether it did: rows back to back and a Norm that packs, as packable
// asks of an RMSNorm call. The entry points' own
// tests (packable, plain) leave LayerNorm out, so that the RMSNorm calls test none of its fields;
// the general-path methods ask here before applyRows. Whatever it leaves, or finds breaking a
// rule, applyRows takes (and panics on) having written nothing.
func packedLayer[D, T elem](n *Norm, r *rowsOf[D, T], f format) bool {
	if !backToBack(r) || !n.packs(sizeOf(r.X)) {
		return false
	}
	flags := n.flags(f)
	if n.Center {
		flags |= flagCenter
	}
	return packedRows(r, f, n.Weight, n.Eps, flags, n.Bias, useActive)
}

// checkNorm returns the row length and the weight form of n, or panics if its fields disagree
// or Workers is negative.
func checkNorm(n *Norm, nm *names) (int, weightMode) {
	d, mode := checkWeight(n, nm)
	if n.Bias != nil && len(n.Bias) != d {
		nm.fail("len(Bias) = %d, want the row length %s = %d", len(n.Bias), rowLengthName(n, nm), d)
	}
	return d, mode
}

// checkWeight is checkNorm without the bias: Workers, the weight and Dim.
func checkWeight(n *Norm, nm *names) (int, weightMode) {
	if n.Workers < 0 {
		nm.fail("Workers = %d is negative (0 or 1: the calling goroutine only)", n.Workers)
	}
	switch {
	case n.Weight != nil:
		if n.Dim != 0 && n.Dim != len(n.Weight) {
			if len(n.Weight) == 0 {
				nm.fail("Dim = %d but Weight is empty and not nil (a norm without a weight leaves Weight nil)", n.Dim)
			}
			nm.fail("Dim = %d but len(Weight) = %d (Dim may be 0 when Weight is set)", n.Dim, len(n.Weight))
		}
		if n.UnitOffset {
			return len(n.Weight), offset
		}
		return len(n.Weight), weighted
	case n.UnitOffset:
		nm.fail("UnitOffset is set but Weight is nil: 1 + Weight[i] needs a weight")
	case n.Dim < 0:
		nm.fail("Dim = %d is negative", n.Dim)
	}
	return n.Dim, unweighted
}

// shape returns the row length and weight form of n and whether its fields agree and Workers is
// not negative (the fast check; checkNorm says what is wrong).
func (n *Norm) shape() (d int, mode weightMode, ok bool) {
	if n.Weight == nil {
		return n.Dim, unweighted, n.Dim|n.Workers >= 0 && !n.UnitOffset // both >= 0: no sign bit in either
	}
	mode = weighted
	if n.UnitOffset {
		mode = offset
	}
	return len(n.Weight), mode, (n.Dim == 0 || n.Dim == len(n.Weight)) && n.Workers >= 0
}

// layoutPacked is layout for rows back to back (N = 0), the common call: one row needs no
// division.
func layoutPacked(d, stride, nx int) (rows, str, span int, exact, ok bool) {
	rows = 1
	if nx != d || d == 0 {
		rows = 0
		if d > 0 {
			rows = quo(nx, d)
		}
	}
	return rows, d, nx, true, rows*d == nx && (stride == 0 || stride == d)
}

// layout resolves the rows of a call for row length d from Rows.N (n), Rows.Stride and len(X)
// (nx): the number of rows, the stride, and the span of X they cover, which every other row
// buffer needs too; exact says it needs exactly span elements (n = 0: rows back to back, as many
// as X holds), else at least span. ok is false for a layout the rules of Rows forbid.
func layout(d, n, stride, nx int) (rows, str, span int, exact, ok bool) {
	if n != 0 {
		return layoutStrided(d, n, stride, nx)
	}
	return layoutPacked(d, stride, nx)
}

// layoutStrided is layout for n > 0 rows (Rows.N set).
func layoutStrided(d, n, stride, nx int) (rows, str, span int, exact, ok bool) {
	if stride == 0 {
		stride = d
	}
	hi, lo := bits.Mul64(uint64(n-1), uint64(stride))
	span = int(lo) + d
	ok = n > 0 && stride >= d && d > 0 && hi == 0 && lo <= uint64(math.MaxInt-d) && nx >= span
	return n, stride, span, false, ok
}

// fits reports whether a buffer of n elements holds a span (exactly, when exact).
func fits(n, span int, exact bool) bool { return n == span || (!exact && n > span) }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// explainApply panics with the first rule a Norm.Apply call breaks, as explainForward does; r is
// the rows as given.
func explainApply[D, T elem](n *Norm, nm *names, r *rowsOf[D, T]) string {
	dst, x, res, inv, mean, rows, stride, dstStride := r.Dst, r.X, r.Residual, r.Inv, r.Mean, r.N, r.Stride, r.DstStride
	givenStride, givenDstStride := stride, dstStride // as the call gave them, for the messages
	d, _ := checkNorm(n, nm)
	nm.failNegative(count{"N", rows}, count{"Stride", stride}, count{"DstStride", dstStride})
	if d == 0 && (len(x) != 0 || rows != 0) {
		withN := ""
		if rows != 0 {
			withN = fmt.Sprintf(" and N = %d", rows)
		}
		if n.Weight != nil { // as explainForward says it, for the calls forwardRows takes
			nm.fail("len(%s) = 0 with len(%s) = %d%s: the row length is len(%s)", nm.w, nm.x, len(x), withN, nm.w)
		}
		nm.fail("the row length is 0 (Weight is nil and Dim is 0) with len(%s) = %d%s", nm.x, len(x), withN)
	}
	var span, dspan int
	if rows == 0 {
		if stride != 0 && stride != d {
			nm.fail("Stride = %d needs N: with N = 0 the rows of length %d fill %s back to back", stride, d, nm.x)
		}
		if dstStride != 0 && dstStride != d {
			nm.fail("DstStride = %d needs N: with N = 0 the rows of length %d fill %s back to back", dstStride, d, nm.dst)
		}
		if len(x) != 0 && len(x)%d != 0 {
			nm.fail("len(%s) = %d is not a multiple of the row length %s = %d", nm.x, len(x), rowLengthName(n, nm), d)
		}
		if len(dst) != len(x) {
			nm.fail("len(%s) = %d, want len(%s) = %d", nm.dst, len(dst), nm.x, len(x))
		}
		if res != nil && len(res) != len(x) {
			nm.fail("len(Residual) = %d, want len(%s) = %d", len(res), nm.x, len(x))
		}
		span, dspan = len(x), len(x)
		stride, dstStride = d, d
		if d > 0 {
			rows = span / d
		}
	} else {
		if stride == 0 {
			stride = d
		}
		if dstStride == 0 {
			dstStride = stride
		}
		if stride < d {
			nm.fail("Stride = %d is shorter than the row length %d", stride, d)
		}
		if dstStride < d {
			nm.fail("DstStride = %d is shorter than the row length %d", dstStride, d)
		}
		if rows-1 > (math.MaxInt-d)/stride || rows-1 > (math.MaxInt-d)/dstStride {
			nm.fail("N = %d, %s and %s: the rows do not fit in memory", rows,
				strideText("Stride", givenStride, stride), strideText("DstStride", givenDstStride, dstStride))
		}
		span, dspan = (rows-1)*stride+d, (rows-1)*dstStride+d
		for _, s := range []struct {
			name                string
			n                   int
			set                 bool
			span, given, stride int
			strideName          string
		}{
			{nm.x, len(x), true, span, givenStride, stride, "Stride"},
			{nm.dst, len(dst), true, dspan, givenDstStride, dstStride, "DstStride"},
			{"Residual", len(res), res != nil, span, givenStride, stride, "Stride"},
		} {
			if s.set && s.n < s.span {
				nm.fail("len(%s) = %d, want at least %d for N = %s of %d with %s", s.name, s.n, s.span,
					rowCount(rows), d, strideText(s.strideName, s.given, s.stride))
			}
		}
	}
	checkEps(nm, n.Eps)
	if inv != nil && len(inv) < rows {
		nm.fail("len(Inv) = %d is shorter than the call's %s", len(inv), rowCount(rows))
	}
	checkMean(n, nm, r.Mean, rows, false)
	if rows > 0 {
		r, i, b, m := noRegion, noRegion, noRegion, noRegion
		if res != nil {
			r = region("Residual", res[:span])
		}
		if inv != nil {
			i = region("Inv", inv[:rows])
		}
		if n.Bias != nil {
			b = region("Bias", n.Bias)
		}
		if mean != nil {
			m = region("Mean", mean[:rows])
		}
		var zd D
		var zt T
		dr, xr := region(nm.dst, dst[:dspan]), region(nm.x, x[:span])
		// A 16-bit output shares no memory with its float32 input, wherever it starts: the
		// in-place hint of explainOverlaps would send the caller to another panic.
		if unsafe.Sizeof(zd) != unsafe.Sizeof(zt) && dr.overlaps(xr) {
			nm.fail("%s overlaps %s (the output is 16-bit, the input float32: they cannot share memory)", nm.dst, nm.x)
		}
		if dr.p == xr.p && dstStride != stride && dr.overlaps(xr) {
			nm.fail("%s is %s with %s and %s (in place needs the same stride)", nm.dst, nm.x,
				strideText("DstStride", givenDstStride, dstStride), strideText("Stride", givenStride, stride))
		}
		explainOverlaps(nm, dr, xr, region(nm.w, n.Weight), r, i)
		explainLayerOverlaps(nm, []area{dr, r, i}, []area{xr, region(nm.w, n.Weight)}, b, m)
	}
	return "rmsnorm: " + nm.fn + ": internal error: the fast check rejected a valid call"
}

// area is the memory of one slice argument, by name.
type area struct {
	name   string
	p, n   uintptr // first byte and length in bytes
	absent bool    // a nil Residual or Inv: no rule applies
}

var noRegion = area{absent: true}

func region[T any](name string, s []T) area {
	var z T
	return area{name: name, p: addr(s), n: uintptr(len(s)) * unsafe.Sizeof(z)}
}

func (a area) overlaps(b area) bool { return !a.absent && !b.absent && !disjoint(a.p, a.n, b.p, b.n) }

// explainOverlaps panics if the aliasing rules are broken: dst is x or shares no memory with it;
// dst shares none with w; res (when set) none with x, dst or w; inv (when set) none with any.
func explainOverlaps(nm *names, dst, x, w, res, inv area) {
	if dst.overlaps(x) && dst.p != x.p {
		nm.fail("%s overlaps %s without starting at the same element (in place needs %s and %s to be the same slice)",
			nm.dst, nm.x, nm.dst, nm.x)
	}
	if dst.overlaps(w) {
		nm.fail("%s overlaps %s", nm.dst, nm.w)
	}
	for _, o := range []area{x, dst, w} {
		if res.overlaps(o) {
			nm.fail("Residual overlaps %s", o.name)
		}
	}
	for _, o := range []area{x, dst, w, res} {
		if inv.overlaps(o) {
			nm.fail("Inv overlaps %s", o.name)
		}
	}
}

// checkMean panics if Mean (of a call of rows rows) is set without Center or is too short. The
// forward forms write it (read false), Backward reads it (read true).
func checkMean(n *Norm, nm *names, mean []float32, rows int, read bool) {
	if mean == nil {
		return
	}
	if !n.Center {
		if read {
			nm.fail("Mean is set but Center is not: Mean holds the row means of a forward call with Center (LayerNorm), which an RMSNorm has none of")
		}
		nm.fail("Mean is set but Center is not: Mean receives the mean that Center subtracts")
	}
	if len(mean) < rows {
		nm.fail("len(Mean) = %d is shorter than the call's %s", len(mean), rowCount(rows))
	}
}

// explainLayerOverlaps panics if the LayerNorm buffers break the aliasing rules: the bias, read
// only, shares no memory with an output of the call (outputs: Dst, Residual and Inv of the forward
// forms; DX, DW and DB of Backward), and Mean (written by the forward forms, read by Backward)
// none with any buffer (outputs and inputs, absent ones included in either).
func explainLayerOverlaps(nm *names, outputs, inputs []area, bias, mean area) {
	for _, o := range outputs {
		if bias.overlaps(o) {
			nm.fail("Bias overlaps %s", o.name)
		}
	}
	for _, o := range append(inputs, outputs...) {
		if mean.overlaps(o) {
			nm.fail("Mean overlaps %s", o.name)
		}
	}
	if mean.overlaps(bias) {
		nm.fail("Mean overlaps Bias")
	}
}

// rowLengthName says where a Norm's row length comes from: len(Weight), or Dim without a weight.
func rowLengthName(n *Norm, nm *names) string {
	if n.Weight == nil {
		return "Dim"
	}
	return "len(" + nm.w + ")"
}

func checkEps(nm *names, eps float32) {
	if !epsOK(eps) {
		nm.fail("%s = %v, want a finite value >= 0", nm.eps, eps)
	}
}

// quo returns a/b for a >= 0, b > 0. Dividing in 32 bits when both fit is several times faster
// than a 64-bit division on many x86 cores.
func quo(a, b int) int {
	if uint64(a)|uint64(b) <= math.MaxUint32 {
		return int(uint32(a) / uint32(b))
	}
	return a / b
}

// rowCount words a number of rows for a message: "1 row", "3 rows".
func rowCount(n int) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}

// strideText words a stride for a message as the call gave it and, when it gave 0, what that
// stands for (the row length for Stride, Stride for DstStride): "Stride = 7", "Stride = 0 (meaning 5)".
func strideText(name string, given, resolved int) string {
	if given == 0 && resolved != 0 {
		return fmt.Sprintf("%s = 0 (meaning %d)", name, resolved)
	}
	return fmt.Sprintf("%s = %d", name, given)
}
