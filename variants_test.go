package rmsnorm

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"testing"
)

// The variants of Norm.Apply (weight forms, fused residual, strided rows, 1/rms out) on every
// kernel: each must give the generic kernel's bits in every output buffer, and leave every element
// between rows and around buffers untouched.

// vcase is one combination of variant options.
type vcase struct {
	mode     weightMode
	residual bool
	withInv  bool
	inPlace  bool
	stream   bool
	gap      int  // Stride - d; 0 is contiguous
	rn       bool // RoundNormalized (16-bit storage)
	// setDst sets Rows.DstStride to d + dstGap; without it DstStride is 0 and the rows of dst lie
	// Stride apart, as those of x.
	setDst bool
	dstGap int
}

func (c vcase) String() string {
	dst := "DstStride=0"
	if c.setDst {
		dst = fmt.Sprintf("dstGap=%d", c.dstGap)
	}
	return fmt.Sprintf("mode=%d residual=%v inv=%v inplace=%v stream=%v gap=%d %s rn=%v",
		c.mode, c.residual, c.withInv, c.inPlace, c.stream, c.gap, dst, c.rn)
}

// allVcases lists the 24 combinations of weight form, residual, Inv and gap, once each. In place
// and streaming follow from them (in place when exactly one of residual and Inv is set, streaming
// when Inv and the gap are both set or both not), so that every weight form meets every pair of
// the two. The in-place cases of the offset and unweighted forms give DstStride explicitly, equal
// to Stride (d itself with rows back to back). Then, for every weight form, four cases with dst
// rows at a DstStride of their own: smaller than Stride (dst back to back under strided x, the
// head-major layout, and a gap of its own) and larger (under x back to back and strided x), with
// residual, Inv and streaming cycling. Last, for every weight form, a residual out of place on rows
// back to back, streamed: the calls that streamrule.Hardware's Residual may leave to the hardware
// prefetchers (flagNT without flagPF), which the cases above, in place or strided, never are.
func allVcases() []vcase {
	var cs []vcase
	for _, mode := range []weightMode{weighted, offset, unweighted} {
		for _, residual := range []bool{false, true} {
			for _, withInv := range []bool{false, true} {
				for _, gap := range []int{0, 5} {
					c := vcase{mode: mode, residual: residual, withInv: withInv,
						inPlace: withInv != residual, stream: withInv == (gap > 0), gap: gap}
					if c.inPlace && mode != weighted {
						c.setDst, c.dstGap = true, gap
					}
					cs = append(cs, c)
				}
			}
		}
	}
	for _, mode := range []weightMode{weighted, offset, unweighted} {
		for i, g := range []struct{ gap, dstGap int }{{5, 0}, {5, 2}, {0, 9}, {5, 9}} {
			cs = append(cs, vcase{mode: mode, residual: i%2 == 1, withInv: i/2 == int(mode)%2, stream: i == int(mode),
				gap: g.gap, setDst: true, dstGap: g.dstGap})
		}
	}
	for _, mode := range []weightMode{weighted, offset, unweighted} {
		cs = append(cs, vcase{mode: mode, residual: true, stream: true})
	}
	return cs
}

// allVcases16 is allVcases twice, without and with RoundNormalized, for 16-bit storage.
func allVcases16() []vcase {
	var cs []vcase
	for _, rn := range []bool{false, true} {
		for _, c := range allVcases() {
			c.rn = rn
			cs = append(cs, c)
		}
	}
	return cs
}

// allVcasesTo16 is allVcases16 for float32 rows into 16-bit ones (ApplyToBF16, ApplyToF16), which
// are never in place: the in-place cases write into a dst of their own, with the same layout.
func allVcasesTo16() []vcase {
	cs := allVcases16()
	for i := range cs {
		cs[i].inPlace = false
	}
	return cs
}

// vbufs are the guarded buffers of one run on rows of x (and the residual) stored as T, into dst
// stored as D, in format f.
type vbufs[D, T elem] struct {
	f                 format
	x, res            *guarded[T]
	dst               *guarded[D] // x itself in place
	inv, w            *guarded[float32]
	norm              Norm
	r                 rowsOf[D, T] // the call's rows: N, Stride and DstStride as the call gives them
	stride, dstStride int          // as resolved
}

// setupVariant lays out rows rows of x (and of res) with the case's stride, and dst with its
// DstStride, inside guards, at the offsets off (elements from a 64-byte boundary).
func setupVariant[D, T elem](c vcase, f format, d, rows int, x, res []T, w []float32, eps float32, off int) *vbufs[D, T] {
	stride := d + c.gap
	dstStride := stride
	if c.setDst {
		dstStride = d + c.dstGap
	}
	span := (rows-1)*stride + d
	b := &vbufs[D, T]{f: f, stride: stride, dstStride: dstStride}
	place := func(g *guarded[T], src []T) {
		for r := 0; r < rows; r++ {
			copy(g.s[r*stride:r*stride+d], src[r*d:(r+1)*d])
		}
	}
	b.x = newGuarded[T]("x", span, off)
	place(b.x, x)
	if g, ok := any(b.x).(*guarded[D]); ok && c.inPlace {
		if dstStride != stride {
			panic(fmt.Sprintf("case %v: in place needs DstStride = Stride", c))
		}
		b.dst = g
	} else {
		// (off*7)%16 puts dst on a 64-byte boundary when off is 0, so that the quick matrix also
		// runs the non-temporal stores from an aligned dst, with no head before them.
		b.dst = newGuarded[D]("dst", (rows-1)*dstStride+d, (off*7)%16)
	}
	if c.residual {
		b.res = newGuarded[T]("res", span, (off*3+2)%16)
		place(b.res, res)
	}
	if c.withInv {
		b.inv = newGuarded[float32]("inv", rows, (off*5+3)%16)
	}
	b.norm = Norm{Dim: d, Eps: eps, RoundNormalized: c.rn}
	if c.mode != unweighted {
		b.w = newGuarded[float32]("w", d, (off*11+5)%16)
		copy(b.w.s, w)
		b.norm.Weight = b.w.s
		b.norm.Dim = 0
		b.norm.UnitOffset = c.mode == offset
	}
	b.r = rowsOf[D, T]{Dst: b.dst.s, X: b.x.s}
	// N and Stride on odd row counts and where the layout needs them; rows back to back without
	// them on even counts.
	if c.gap > 0 || rows%2 == 1 || dstStride != d {
		b.r.N, b.r.Stride = rows, stride
	}
	if c.setDst {
		b.r.DstStride = dstStride
	}
	if b.res != nil {
		b.r.Residual = b.res.s
	}
	if b.inv != nil {
		b.r.Inv = b.inv.s
	}
	return b
}

func (b *vbufs[D, T]) run(k kernelID, stream bool) {
	withStreaming(stream, func() { applyKernel(k, &b.norm, b.f, &b.r) })
}

// checkVariant runs case c with kernel k and with generic on identical buffers of rows stored as T
// in format f and compares every element of every buffer, guards and gaps included.
func checkVariant[T elem](t *testing.T, ctx string, k kernelID, c vcase, f format, d, rows int, x, res []T, w []float32, eps float32, off int) {
	t.Helper()
	checkVariantOf[T](t, ctx, k, c, f, d, rows, x, res, w, eps, off)
}

// checkVariantTo16 is checkVariant for float32 rows into 16-bit ones: ApplyToBF16 (f =
// formatToBF16) and ApplyToF16.
func checkVariantTo16(t *testing.T, ctx string, k kernelID, c vcase, f format, d, rows int, x, res, w []float32, eps float32, off int) {
	t.Helper()
	checkVariantOf[uint16](t, ctx, k, c, f, d, rows, x, res, w, eps, off)
}

// checkVariantOf is checkVariant with dst stored as D.
func checkVariantOf[D, T elem](t *testing.T, ctx string, k kernelID, c vcase, f format, d, rows int, x, res []T, w []float32, eps float32, off int) {
	t.Helper()
	want := setupVariant[D](c, f, d, rows, x, res, w, eps, off)
	want.run(kernelGeneric, c.stream)
	got := setupVariant[D](c, f, d, rows, x, res, w, eps, off)
	got.run(k, c.stream)
	ctx = fmt.Sprintf("%s %s %s %s d=%d rows=%d off=%d", ctx, k, fname(f), c, d, rows, off)
	if bochsChains(k, f, c.residual, c.rn && c.mode != unweighted) {
		// The results carry Bochs's float16 rounding (bochsChains); what the call must leave
		// alone does not: x out of place, the weight, every guard and every gap.
		if any(got.dst) != any(got.x) {
			compareGuarded(t, ctx, f, got.x, want.x)
		}
		got.dst.check(t, ctx)
		if got.res != nil {
			got.res.check(t, ctx)
		}
		if got.inv != nil {
			got.inv.check(t, ctx)
		}
		if got.w != nil {
			compareGuarded(t, ctx, formatF32, got.w, want.w)
		}
		checkGaps(t, ctx, got.x, d, rows, got.stride)
		checkGaps(t, ctx, got.res, d, rows, got.stride)
		checkGaps(t, ctx, got.dst, d, rows, got.dstStride)
		return
	}
	compareGuarded(t, ctx, f, got.x, want.x)
	if any(got.dst) != any(got.x) { // not in place
		compareGuarded(t, ctx, f, got.dst, want.dst)
	}
	if got.res != nil {
		compareGuarded(t, ctx, f, got.res, want.res)
	}
	for _, p := range [][2]*guarded[float32]{{got.inv, want.inv}, {got.w, want.w}} {
		if p[0] != nil {
			compareGuarded(t, ctx, formatF32, p[0], p[1])
		}
	}
	// Between rows nothing changes: the generic run (and so, by the comparison, every kernel)
	// leaves the gap elements holding the guard value.
	checkGaps(t, ctx, want.x, d, rows, want.stride)
	checkGaps(t, ctx, want.res, d, rows, want.stride)
	checkGaps(t, ctx, want.dst, d, rows, want.dstStride)
}

// checkGaps fails unless the elements of g between its rows of d, stride apart, hold the guard
// value (g nil: nothing to check).
func checkGaps[T elem](t *testing.T, ctx string, g *guarded[T], d, rows, stride int) {
	if g == nil {
		return
	}
	guard := bitsOf(guardOf[T]())
	for r := 0; r+1 < rows; r++ {
		for i := r*stride + d; i < (r+1)*stride; i++ {
			if bitsOf(g.s[i]) != guard {
				t.Helper()
				t.Fatalf("%s: %s element %d between rows %d and %d was written", ctx, g.name, i, r, r+1)
			}
		}
	}
}

// compareGuarded fails unless got holds want's values (NaN payloads aside) everywhere, guards
// included, and its guards are intact.
//
// It calls t.Helper only on the way to a failure, as check and checkGaps do: the call walks the
// stack, and the matrix tests make millions of these checks.
func compareGuarded[T elem](t *testing.T, ctx string, f format, got, want *guarded[T]) {
	if j := guardedDiff(f, got, want); j != noDiff {
		t.Helper()
		t.Fatalf("%s: %s[%d] = %#x, generic gives %#x", ctx, got.name, j, bitsOf(got.all[got.lo+j]), bitsOf(want.all[want.lo+j]))
	}
	if got.clobbered() >= 0 {
		t.Helper()
		got.check(t, ctx)
	}
}

// noDiff is guardedDiff's answer when the buffers hold the same elements.
const noDiff = math.MinInt

// guardedDiff returns the first position, relative to the slices' starts, from guardLen before
// them to guardLen after, where got and want hold different elements of format f (sameElem), or
// noDiff. By position relative to the slice: the two buffers' allocations need not be aligned
// alike. Equal bytes are the same elements; only where the bytes differ (NaN payloads, or a bug)
// does it compare element by element, which took most of the matrix tests' time before.
func guardedDiff[T elem](f format, got, want *guarded[T]) int {
	if bytes.Equal(asBytes(got.all[got.lo-guardLen:got.lo+len(got.s)+guardLen]),
		asBytes(want.all[want.lo-guardLen:want.lo+len(want.s)+guardLen])) {
		return noDiff
	}
	for j := -guardLen; j < len(want.s)+guardLen; j++ {
		if !sameElem(got.all[got.lo+j], want.all[want.lo+j], f) {
			return j
		}
	}
	return noDiff
}

// Norm.Forward and the Apply methods take short paths for the common calls: rmsnorm.Forward's
// for rows back to back with nothing else and a plain weight (forwardRows), packedRows for rows
// back to back with a residual or UnitOffset; every other call takes the general path
// (applyRows). Through the public methods (with the active kernel), on every kernel under test,
// each gives the general path's bits called with that kernel, in dst and the residual, for every
// Norm form, in place and not, streaming and not, with a row on the float64 path in the batches
// of five.
func TestShortPathsMatchApply(t *testing.T) {
	defer active.Store(active.Load())
	for _, k := range testKernels() {
		active.Store(uint32(k)) // SetKernel("avx512") would pick kernelAVX512BF16 where it stands for avx512
		for _, d := range []int{1, 7, 64, 100, 513} {
			for _, rows := range []int{1, 5} {
				r := seedFor(d, rows, 31)
				x := make([]float32, rows*d)
				fill(x, classNormal, r)
				if rows > 1 {
					x[2*d] *= 1e30 // row 2 overflows: the float64 path
				}
				res := make([]float32, rows*d)
				fill(res, classNormal, r)
				w := make([]float32, d)
				fill(w, classNormal, r)
				norms := []Norm{
					{Weight: w, Eps: 1e-6},
					{Weight: w, Dim: d, Eps: 1e-5},
					{Weight: w, Eps: 1e-6, UnitOffset: true},
					{Weight: w, Eps: 1e-6, RoundNormalized: true},
					{Weight: w, Eps: 1e-6, UnitOffset: true, RoundNormalized: true},
					{Dim: d, Eps: 1e-6},
					{Weight: w, Eps: 1e-6, Workers: 3},
				}
				for _, n := range norms {
					ctx := fmt.Sprintf("%v d=%d rows=%d %+v", k, d, rows, n)
					checkShortPaths(t, ctx, k, &n, formatF32, rows, x, res, func(r rowsOf[float32, float32]) { n.Apply(Rows(r)) })
					checkShortPaths(t, ctx, k, &n, formatF32, rows, x, nil, func(r rowsOf[float32, float32]) { n.Forward(r.Dst, r.X) })
					for _, f := range []format{formatBF16, formatF16} {
						apply := n.ApplyBF16
						if f == formatF16 {
							apply = n.ApplyF16
						}
						checkShortPaths(t, ctx, k, &n, f, rows, narrowAll(x, f), narrowAll(res, f), func(r rowsOf[uint16, uint16]) { apply(Rows16(r)) })
					}
					for _, f := range formatsTo16 {
						apply := n.ApplyToBF16
						if f == formatToF16 {
							apply = n.ApplyToF16
						}
						checkShortPaths(t, ctx, k, &n, f, rows, x, res, func(r rowsOf[uint16, float32]) { apply(RowsTo16(r)) })
					}
				}
			}
		}
	}
}

// checkShortPaths runs call, a public entry point given rows of x back to back (and of res when
// set), and the general path with kernel k on copies of the same buffers, and compares dst and
// the residual. It tries the rows three ways (plain, with the residual when res is set, and with
// N set, which takes the general path), each in place (where dst has the type of x) and not,
// streaming and not.
func checkShortPaths[D, T elem](t *testing.T, ctx string, k kernelID, n *Norm, f format, rows int, x, res []T, call func(r rowsOf[D, T])) {
	t.Helper()
	for _, how := range []string{"plain", "residual", "with N"} {
		if how == "residual" && res == nil {
			continue
		}
		for _, stream := range []bool{false, true} {
			for _, inPlace := range []bool{false, true} {
				if _, same := any(x).([]D); inPlace && !same {
					continue
				}
				mk := func() (rowsOf[D, T], []T) {
					r := rowsOf[D, T]{X: slices.Clone(x), Dst: make([]D, len(x))}
					if inPlace {
						r.Dst = any(r.X).([]D)
					}
					var h []T
					switch how {
					case "residual":
						h = slices.Clone(res)
						r.Residual = h
					case "with N":
						r.N = rows
					}
					return r, h
				}
				got, gotRes := mk()
				want, wantRes := mk()
				withStreaming(stream, func() {
					applyKernel(k, n, f, &want)
					call(got)
				})
				for i := range want.Dst {
					if !sameElem(got.Dst[i], want.Dst[i], f) {
						t.Fatalf("%s format=%d %s stream=%v in place=%v: dst[%d] = %v, general path %v",
							ctx, f, how, stream, inPlace, i, got.Dst[i], want.Dst[i])
					}
					if gotRes != nil && !sameElem(gotRes[i], wantRes[i], f) {
						t.Fatalf("%s format=%d %s stream=%v in place=%v: residual[%d] = %v, general path %v",
							ctx, f, how, stream, inPlace, i, gotRes[i], wantRes[i])
					}
				}
			}
		}
	}
}
