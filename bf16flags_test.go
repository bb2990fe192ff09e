package rmsnorm

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// On a CPU with AVX512_BF16, rows longer than groupMax, rows in groups of four, and rows of 257-512
// alone with RoundNormalized, normalized into bfloat16 where their output does not overwrite what
// the scale pass reads (out of place, or in place with a residual), take scale loops that do not
// classify each pair of vectors before VCVTNE2PS2BF16: they have VMAXPS raise MXCSR's invalid and
// denormal flags, read once per row (once per group for a group's rows of up to 512), and a flagged
// row is redone with the classification (asm/amd64/bf16flags.go). Most lanes the narrowing gets
// wrong raise a flag in the multiplies already (a subnormal x, a signalling NaN, Inf*0), so the
// other tests pass whether or not the check reads the products at all. TestBF16FlaggedLanes makes
// the lanes that only the check finds: a product that underflows to a subnormal from normal
// operands, x*inv so (which RoundNormalized rounds and, flushed to zero, would pass through the
// weight unnoticed), and quiet NaN weights with a sign or a payload that VCVTNE2PS2BF16 keeps. One
// such lane per call, in each vector of the unrolled loop's first, middle and last iterations and
// in the tail, in one row of three (the others are ordinary), for rows of bfloat16 and of float32,
// RMSNorm and LayerNorm (Center, Bias: a subnormal centered product, a quiet NaN bias), every
// weight form, RoundNormalized, the residual, out of place and in place; every kernel under test
// gives generic's bits.
func TestBF16FlaggedLanes(t *testing.T) {
	logBF16Paths(t)
	const rows = 3
	const big = 0x1p50 // the rows' scale: inv about 2^-50 (ss/d about 2^100, in range for d up to 2^27)
	type norm struct{ center, bias bool }
	type lane struct {
		name string
		// set makes lane p of the middle row special (x, res), or of the weight (1+w with
		// offset) or the bias.
		set func(x, res, w, b []float32, p int, mode weightMode)
		// ok reports whether the lane is one for the form.
		ok func(n norm, mode weightMode) bool
	}
	uncentered := func(n norm, mode weightMode) bool { return !n.center }
	weight := func(n norm, mode weightMode) bool { return mode != unweighted }
	lanes := []lane{
		{name: "subnormal y from normal x*inv and weight", ok: uncentered, set: func(x, res, w, b []float32, p int, mode weightMode) {
			// x*inv about 2^-110, and x's square a normal float32: a subnormal square would raise
			// the denormal flag in the sum pass's add.
			x[p], res[p], b[p] = 0x1p-60, 0, 0
			switch mode {
			case weighted:
				w[p] = 0x1p-18 // y about 2^-128, a bfloat16 subnormal
			case offset:
				w[p] = -1 + 0x1p-18 // 1+w is 2^-18 exactly
			}
		}},
		{name: "subnormal x*inv", ok: uncentered, set: func(x, res, w, b []float32, p int, mode weightMode) {
			x[p], res[p] = 0x1p-80, 0 // x*inv about 2^-130 (x's square rounds to 0); with a weight of 2^8 y is normal
			if mode != unweighted {
				w[p] = 0x1p8
				if mode == offset {
					w[p] = 0x1p8 - 1
				}
			}
			b[p] = 0
		}},
		{name: "subnormal y, centered", ok: func(n norm, mode weightMode) bool { return n.center && mode == weighted },
			set: func(x, res, w, b []float32, p int, mode weightMode) {
				// (x-mean)*inv is -mean*inv, about d^-1/2; times 2^-126 a subnormal.
				x[p], res[p], b[p], w[p] = 0, 0, 0, 0x1p-126
			}},
		{name: "quiet NaN weight, payload", ok: weight, set: func(x, res, w, b []float32, p int, mode weightMode) {
			w[p] = math.Float32frombits(0x7fc12345)
		}},
		{name: "quiet NaN weight, negative", ok: weight, set: func(x, res, w, b []float32, p int, mode weightMode) {
			w[p] = math.Float32frombits(0xffc00000)
		}},
		{name: "quiet NaN bias", ok: func(n norm, mode weightMode) bool { return n.bias }, set: func(x, res, w, b []float32, p int, mode weightMode) {
			b[p] = math.Float32frombits(0xffc0abcd)
		}},
	}
	calls := 0
	for _, nm := range []norm{{}, {bias: true}, {center: true}, {center: true, bias: true}} {
		dims := []int{300, 512, 513, 1000, 1024, 4096} // 300 and 512, rows alone: RoundNormalized's loops only
		if testing.Short() {                           // the emulated CPUs of CI, where no kernel has these loops
			dims = []int{1000}
		}
		for _, d := range dims {
			var positions []int
			for _, base := range []int{0, (d/128)*64 - 64, (d/64)*64 - 64} { // the first, a middle and the last iteration
				for _, off := range []int{0, 17, 33, 63} { // each vector of it
					positions = append(positions, base+off)
				}
			}
			if d%64 != 0 {
				positions = append(positions, d-1) // the tail, classified
			}
			if testing.Short() {
				positions = []int{0, 33, (d/64)*64 - 1, d - 1}
			}
			for _, ln := range lanes {
				for _, p := range positions {
					for _, f := range []format{formatBF16, formatToBF16} {
						for _, mode := range []weightMode{weighted, offset, unweighted} {
							if !ln.ok(nm, mode) {
								continue
							}
							for _, rn := range []bool{false, true} {
								if rn && mode == unweighted {
									continue // RoundNormalized comes with a weight
								}
								for _, residual := range []bool{false, true} {
									for _, inPlace := range []bool{false, true} {
										if inPlace && f == formatToBF16 {
											continue // the types differ
										}
										x, res, w, b := normalInputs(seedFor(d, p, int(f)), rows, d)
										for i := range x {
											x[i] *= big
											res[i] *= big
										}
										ln.set(x[d:2*d], res[d:2*d], w, b, p, mode)
										n := Norm{Weight: w, Eps: 1e-6, UnitOffset: mode == offset, RoundNormalized: rn}
										if mode == unweighted {
											n = Norm{Dim: d, Eps: 1e-6}
										}
										n.Center = nm.center
										if nm.bias {
											n.Bias = b
										}
										ctx := fmt.Sprintf("%s: d=%d p=%d %s center=%v bias=%v mode=%d rn=%v residual=%v inplace=%v",
											ln.name, d, p, applyNamesOf[f].fn, nm.center, nm.bias, mode, rn, residual, inPlace)
										want, wantH := flaggedCall(kernelGeneric, &n, f, x, res, residual, inPlace)
										for _, k := range testKernels() {
											got, gotH := flaggedCall(k, &n, f, x, res, residual, inPlace)
											check16Exact(t, fmt.Sprintf("%s %s dst", k, ctx), got, want)
											check16Exact(t, fmt.Sprintf("%s %s residual", k, ctx), gotH, wantH)
											calls++
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d calls on kernels %v", calls, testKernels())
}

// flaggedCall normalizes the rows of x (narrowed to bfloat16 first for formatBF16) with kernel k
// into bfloat16 and returns the output and, with residual, the residual stream after the call as
// bfloat16 bits (float32 bits cut in two halves, high first, for formatToBF16's float32 stream).
func flaggedCall(k kernelID, n *Norm, f format, x, res []float32, residual, inPlace bool) (dst, h []uint16) {
	if f == formatToBF16 {
		dst = make([]uint16, len(x))
		var r32 []float32
		if residual {
			r32 = slices.Clone(res)
		}
		applyKernel(k, n, f, &rowsOf[uint16, float32]{Dst: dst, X: slices.Clone(x), Residual: r32})
		for _, v := range r32 {
			b := math.Float32bits(v)
			h = append(h, uint16(b>>16), uint16(b))
		}
		return dst, h
	}
	x16 := narrowAll(x, formatBF16)
	if residual {
		h = narrowAll(res, formatBF16)
	}
	dst = make([]uint16, len(x16))
	if inPlace {
		dst = x16
	}
	applyRowsWith(k, n, f, dst, x16, h, nil, 0, 0)
	return dst, h
}

// bf16Out normalizes rows into the bfloat16 rows of dst out of place with kernel k: the float32
// rows x32 for formatToBF16, the bfloat16 rows x16 for formatBF16; rows, stride and dstStride as
// in rowsOf (zero: back to back).
func bf16Out(k kernelID, n *Norm, f format, dst []uint16, x32 []float32, x16 []uint16, rows, stride, dstStride int) {
	if f == formatToBF16 {
		applyKernel(k, n, f, &rowsOf[uint16, float32]{Dst: dst, X: x32, N: rows, Stride: stride, DstStride: dstStride})
		return
	}
	applyKernel(k, n, f, &rowsOf[uint16, uint16]{Dst: dst, X: x16, N: rows, Stride: stride, DstStride: dstStride})
}

// TestBF16FlaggedLayouts is TestBF16FlaggedLanes' check in the layouts a call can have around the
// flagged row: nine rows, rows 0-3 and 4-7 in groups of four and row 8 alone wherever rows go four
// at a time (rows of up to 512 always; rows of 513-1024 with withLongGroups; LayerNorm's of any
// length with avx512LayerGroups, forced on and off here), the subnormal lane in row 0, 3, 4, 5, 7
// or 8 (the first, second and last of a group, the group after a redone one, and the row alone; a
// NaN weight or bias, or a weight that makes a centered lane subnormal, is every row's), back to
// back, strided (Stride, which gives float32 rows the loops that prefetch), with a DstStride of
// their own, split between two goroutines (Workers; ten rows split five and five, the second
// share's first group starting at row 5), and in place, in every weight form and LayerNorm's (a
// bias, and Center with it). Rows of up to 512 take the loops that read MXCSR's flags in groups
// out of place (one check per group, a flagged group redone a row at a time) and, alone, only
// with RoundNormalized above 256. Under -short (CI's emulated CPUs, whose kernels have none of
// these loops) rows of 384, the lane in row 5.
func TestBF16FlaggedLayouts(t *testing.T) {
	logBF16Paths(t)
	splitAll(t)
	defer func(from int) { avx512LayerGroups = from }(avx512LayerGroups)
	const q = 33
	type layout struct {
		name                    string
		gap, dstGap, work, rows int
		inPlace                 bool
	}
	layouts := []layout{{"packed", 0, 0, 1, 9, false}, {"strided", 32, 32, 1, 9, false}, {"DstStride", 0, 64, 1, 9, false},
		{"Workers", 0, 0, 2, 9, false}, {"Workers, split in a group", 0, 0, 2, 10, false}, {"in place", 32, 32, 1, 9, true}}
	type form struct {
		name         string
		mode         weightMode
		bias, center bool
	}
	forms := []form{{"weight", weighted, false, false}, {"1+weight", offset, false, false}, {"no weight", unweighted, false, false},
		{"LayerNorm bias", weighted, true, false}, {"LayerNorm centered", weighted, true, true}}
	dims, flaggedRows := []int{64, 100, 128, 192, 300, 384, 512, 640, 1024}, []int{0, 3, 4, 5, 7, 8}
	if testing.Short() { // the emulated CPUs of CI, where no kernel has these loops
		dims, flaggedRows = []int{384}, []int{5}
	}
	calls := 0
	for _, d := range dims {
		for _, lo := range layouts {
			for _, fm := range forms {
				layerGroups := []int{0}
				if fm.bias {
					layerGroups = []int{1, 0}
				}
				for _, flagged := range flaggedRows {
					for _, nan := range []bool{false, true} {
						if nan && fm.mode == unweighted {
							continue // a NaN row goes to the float64 path
						}
						if fm.center && (nan || flagged != flaggedRows[0]) {
							continue // every row's lane: one call per layout does
						}
						for _, f := range []format{formatBF16, formatToBF16} {
							if lo.inPlace && f == formatToBF16 {
								continue // the types differ
							}
							for _, rn := range []bool{false, true} {
								if rn && fm.mode == unweighted {
									continue
								}
								rows := lo.rows
								stride, dstStride := d+lo.gap, d+lo.dstGap
								x, _, w, b := normalInputs(seedFor(d, lo.gap, lo.dstGap, flagged), rows, stride)
								w, b = w[:d], b[:d]
								for i := range x {
									x[i] *= 0x1p50 // inv about 2^-50, as in TestBF16FlaggedLanes
								}
								x = x[:(rows-1)*stride+d]
								p := flagged*stride + q
								switch {
								case nan && fm.bias:
									b[q] = math.Float32frombits(0xffc12345)
								case nan:
									w[q] = math.Float32frombits(0x7fc12345)
								case fm.center:
									w[q], b[q] = 0x1p-126, 0 // (x-mean)*inv about 1: y subnormal in every row
								case fm.mode == unweighted:
									x[p] = 0x1p-80 // x*inv about 2^-130
								default:
									x[p], w[q], b[q] = 0x1p-60, 0x1p-18, 0 // y about 2^-128
									if fm.mode == offset {
										w[q] = -1 + 0x1p-18
									}
								}
								n := Norm{Weight: w, Eps: 1e-6, UnitOffset: fm.mode == offset, RoundNormalized: rn, Workers: lo.work}
								if fm.mode == unweighted {
									n = Norm{Dim: d, Eps: 1e-6, Workers: lo.work}
								}
								if fm.bias {
									n.Bias = b
								}
								n.Center = fm.center
								x16 := narrowAll(x, formatBF16)
								run := func(k kernelID) []uint16 {
									if lo.inPlace {
										dst := slices.Clone(x16)
										applyKernel(k, &n, f, &rowsOf[uint16, uint16]{Dst: dst, X: dst, N: rows, Stride: stride, DstStride: dstStride})
										return dst
									}
									dst := make([]uint16, (rows-1)*dstStride+d)
									bf16Out(k, &n, f, dst, x, x16, rows, stride, dstStride)
									return dst
								}
								want := run(kernelGeneric)
								for _, lg := range layerGroups {
									avx512LayerGroups = lg
									for _, k := range testKernels() {
										bothLongGroups(func() {
											ctx := fmt.Sprintf("%s d=%d %s %s row=%d nan=%v %s rn=%v groups=%v layerGroups=%d",
												k, d, lo.name, fm.name, flagged, nan, applyNamesOf[f].fn, rn, avx512LongGroups, lg)
											check16Exact(t, ctx, run(k), want)
											calls++
										})
									}
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d calls on kernels %v", calls, testKernels())
}

// TestBF16FlaggedGroupAdjacent puts dst right after the end of a strided x in one buffer, with
// the strides chosen so that, once the last group of four rows is done, x and dst point at the
// same address: the group's check (asm/amd64/bf16flags.go, groupFlags) must not take that for a
// call in place, which it once did and left the group unchecked. N rows of d, Stride (N+1)*d,
// DstStride d: x spans N*N*d elements and dst starts there. The subnormal lane is in the first or
// last row of the last group; RMSNorm with a weight, with RoundNormalized, and LayerNorm (Center,
// Bias; its groups forced on), rows of bfloat16.
func TestBF16FlaggedGroupAdjacent(t *testing.T) {
	logBF16Paths(t)
	defer func(from int) { avx512LayerGroups = from }(avx512LayerGroups)
	avx512LayerGroups = 1
	const q = 33
	calls := 0
	for _, d := range []int{128, 384} {
		for _, n := range []int{4, 8} {
			stride := (n + 1) * d
			span := (n-1)*stride + d // = n*n*d: dst starts where x ends
			for _, row := range []int{n - 4, n - 1} {
				for _, fm := range []string{"weight", "RoundNormalized", "LayerNorm"} {
					x, _, w, b := normalInputs(seedFor(d, n, row), n, stride)
					w, b = w[:d], b[:d]
					x = x[:span]
					for i := range x {
						x[i] *= 0x1p50 // inv about 2^-50, as in TestBF16FlaggedLanes
					}
					p := row*stride + q
					x[p], w[q], b[q] = 0x1p-60, 0x1p-18, 0 // y about 2^-128, a bfloat16 subnormal
					nm := Norm{Weight: w, Eps: 1e-6, RoundNormalized: fm == "RoundNormalized"}
					if fm == "LayerNorm" {
						x[p] = 0 // centered: -mean*inv times 2^-126 is subnormal
						w[q] = 0x1p-126
						nm.Center, nm.Bias = true, b
					}
					run := func(k kernelID) []uint16 {
						buf := make([]uint16, span+n*d)
						copy(buf, narrowAll(x, formatBF16))
						applyKernel(k, &nm, formatBF16, &rowsOf[uint16, uint16]{Dst: buf[span:], X: buf[:span], N: n, Stride: stride, DstStride: d})
						return buf[span:]
					}
					want := run(kernelGeneric)
					for _, k := range testKernels() {
						check16Exact(t, fmt.Sprintf("%s d=%d rows=%d row=%d %s", k, d, n, row, fm), run(k), want)
						calls++
					}
				}
			}
		}
	}
	t.Logf("%d calls on kernels %v", calls, testKernels())
}
