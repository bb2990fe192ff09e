package rmsnorm

import (
	"fmt"
	"math"
	"testing"

	"github.com/gosimd/rmsnorm/internal/streamrule"
)

// TestLayerNormGroups runs short rows (at most groupMax) in batches that the AVX2 Layer functions
// take four at a time (layerGroups), and the AVX-512 ones with flagGroups (up to longGroupMax:
// avx512LayerGroups forced on for every length here, and off), on every kernel against generic: every format,
// layer form and weight form, RoundNormalized, Inv and Mean, counts of rows that leave a tail of
// one to three, and groups with a row that takes the float64 path by its sum (an infinity, a NaN,
// finite elements whose sum overflows) or by its variance (a constant row with eps = 0), first in
// its group or inside it, so that the group is redone a row at a time and the rows before that
// row are written once; half of them with the memory flags of rows from memory (prefetches,
// non-temporal stores).
func TestLayerNormGroups(t *testing.T) {
	defer func(from int) { avx512LayerGroups = from }(avx512LayerGroups)
	for _, from := range []int{1, 0} {
		avx512LayerGroups = from
		testLayerNormGroups(t, from)
	}
}

func testLayerNormGroups(t *testing.T, from int) {
	type special struct {
		name string
		set  func(row []float32) float32 // sets the row, returns the call's eps
	}
	specials := []special{
		{"", nil},
		{"inf", func(row []float32) float32 { row[len(row)/2] = float32(math.Inf(-1)); return 1e-5 }},
		{"nan", func(row []float32) float32 { row[0] = float32(math.NaN()); return 1e-5 }},
		{"overflow", func(row []float32) float32 {
			for i := range row {
				row[i] = 3e38
			}
			return 1e-5
		}},
		{"constant", func(row []float32) float32 {
			for i := range row {
				row[i] = 1.5
			}
			return 0
		}},
	}
	n := 0
	for _, k := range simdKernels() {
		for _, f := range layerFormats {
			for _, d := range []int{5, 64, 100, 128, 384, groupMax, 768, longGroupMax} {
				for _, rows := range []int{4, 6, 7, 9} {
					for si, sp := range specials {
						for _, at := range []int{0, 2, rows - 1} {
							if sp.set == nil && at != 0 {
								continue
							}
							n++
							lf := layerForms[n%len(layerForms)]
							mode := []weightMode{weighted, offset, unweighted}[n%3]
							lc := lcase{f: f, mode: mode, center: lf.center, bias: lf.bias,
								rn:  n%2 == 0 && f.out() != formatF32 && mode != unweighted,
								inv: n%4 != 0, mean: lf.center && n%5 != 0, gap: [2]int{0, 3}[n%2], dgap: [3]int{0, 5, 0}[n%3],
								wclass: classNormal, bclass: classNormal, resClass: classNormal}
							lc.strided = lc.gap != 0
							x, res, w, b := layerInputs(seedFor(d, rows, si, at, int(f), 35), lc, d, rows, classNormal)
							for i := range x {
								x[i] += 2 // a mean to subtract
							}
							eps := float32(1e-5)
							if sp.set != nil {
								eps = sp.set(x[at*d : (at+1)*d])
							}
							off := (d + rows) % 16
							ctx := fmt.Sprintf("%s %s d=%d rows=%d special=%q at row %d, AVX-512 groups from %d", k, lc, d, rows, sp.name, at, from)
							// The kernel first: a call without Center must not read the means a call
							// with Center left on the stack (the generic kernel would zero them).
							// Half the calls with the memory flags of rows from memory: the
							// groups' scale pass then prefetches and stores non-temporally.
							var got, want layerOut
							withStreaming((n/2)%2 == 1, func() {
								got = runLayer(t, k, lc, d, rows, x, res, w, b, eps, off)
								want = runLayer(t, kernelGeneric, lc, d, rows, x, res, w, b, eps, off)
							})
							sameOut(t, ctx+fmt.Sprintf(" streaming=%v", (n/2)%2 == 1), got, want)
						}
					}
				}
			}
		}
	}
}

// TestGroupsFlag holds setGroups, which sends a call's rows to the AVX-512 groups (flagGroups),
// to its rules: the avx512 kernels only; LayerNorm's rows from avx512LayerGroups (not 0) to
// longGroupMax, in every format; with avx512LongGroups, RMSNorm's rows longer than groupMax, up
// to longGroupMax, 16-bit ones (in, out or both) and float32 ones of the calls f32Groups takes;
// and of rows longer than groupMax, none from memory.
func TestGroupsFlag(t *testing.T) {
	defer func(from int, long bool, sb int, fg streamrule.F32Groups) {
		avx512LayerGroups, avx512LongGroups, streamBytes, f32Groups = from, long, sb, fg
	}(avx512LayerGroups, avx512LongGroups, streamBytes, f32Groups)
	f32Groups = streamrule.F32Groups{}
	// flagged reports whether setGroups gives flagGroups to kernel k's job of n rows of d in
	// format f: a LayerNorm one (flagCenter) or not, in place or not, with a residual or not.
	type call struct {
		n, d                     int
		f                        format
		layer, inPlace, residual bool
	}
	flagged := func(k kernelID, c call) bool {
		x, dst, res := make([]float32, c.n*c.d), make([]float32, c.n*c.d), make([]float32, c.n*c.d)
		j := job{dst: ptr(dst), x: ptr(x), d: c.d, stride: c.d, dstStride: c.d, rows: c.n, format: c.f}
		if c.layer {
			j.flags = flagCenter
		}
		if c.inPlace {
			j.dst = j.x
		}
		if c.residual {
			j.res = ptr(res)
		}
		j.setGroups(k)
		return j.flags&flagGroups != 0
	}
	const rows = 8
	// groups is flagged for rows rows out of place without a residual.
	groups := func(k kernelID, f format, d int, layer bool) bool {
		return flagged(k, call{n: rows, d: d, f: f, layer: layer})
	}
	formats := []format{formatF32, formatBF16, formatF16, formatToBF16, formatToF16}
	streamBytes = math.MaxInt // every call in cache
	for _, from := range []int{0, 1, 128} {
		for _, long := range []bool{false, true} {
			avx512LayerGroups, avx512LongGroups = from, long
			for _, k := range []kernelID{kernelGeneric, kernelAVX2, kernelNEON, kernelAVX512, kernelAVX512BF16} {
				avx512 := k == kernelAVX512 || k == kernelAVX512BF16
				for _, f := range formats {
					for _, d := range []int{1, 64, 127, 128, 300, groupMax, groupMax + 1, 768, longGroupMax, longGroupMax + 1, 4096} {
						wantLayer := avx512 && from != 0 && d >= from && d <= longGroupMax
						wantRMS := avx512 && long && f != formatF32 && d > groupMax && d <= longGroupMax
						if got := groups(k, f, d, true); got != wantLayer {
							t.Errorf("avx512LayerGroups %d: %s, format %d, d %d, LayerNorm: flagGroups %v, want %v", from, k, f, d, got, wantLayer)
						}
						if got := groups(k, f, d, false); got != wantRMS {
							t.Errorf("avx512LongGroups %v: %s, format %d, d %d, RMSNorm: flagGroups %v, want %v", long, k, f, d, got, wantRMS)
						}
					}
				}
			}
		}
	}
	avx512LayerGroups, avx512LongGroups = 1, true
	for _, d := range []int{128, groupMax, groupMax + 64, longGroupMax} {
		for _, stream := range []bool{false, true} {
			streamBytes = math.MaxInt
			if stream {
				streamBytes = 0
			}
			want := !stream || d <= groupMax
			if got := groups(kernelAVX512, formatF32, d, true); got != want {
				t.Errorf("%dx%d LayerNorm, from memory %v: flagGroups %v, want %v", rows, d, stream, got, want)
			}
			if got, want := groups(kernelAVX512, formatBF16, d, false), want && d > groupMax; got != want {
				t.Errorf("%dx%d RMSNorm bfloat16, from memory %v: flagGroups %v, want %v", rows, d, stream, got, want)
			}
		}
	}
	// Float32 RMSNorm rows longer than groupMax: the calls f32Groups takes by d and the bytes they
	// move (x and dst, x alone in place), in cache, with avx512LongGroups.
	streamBytes = math.MaxInt
	f32Groups = streamrule.F32Groups{Bytes: 48 << 10, WideFrom: 832, WideBytes: 1 << 20}
	f32 := func(k kernelID, n, d int, inPlace bool) bool {
		return flagged(k, call{n: n, d: d, f: formatF32, inPlace: inPlace})
	}
	for _, long := range []bool{false, true} {
		avx512LongGroups = long
		for _, k := range []kernelID{kernelAVX2, kernelAVX512, kernelAVX512BF16} {
			avx512 := k == kernelAVX512 || k == kernelAVX512BF16
			for _, d := range []int{groupMax, groupMax + 1, 576, 768, 769, 831, 832, longGroupMax, longGroupMax + 1} {
				for _, n := range []int{4, 8, 64, 128, 129} {
					for _, inPlace := range []bool{false, true} {
						bytes := n * d * 4
						if !inPlace {
							bytes *= 2
						}
						fits := bytes <= f32Groups.Bytes || d >= f32Groups.WideFrom && bytes <= f32Groups.WideBytes
						want := avx512 && long && d > groupMax && d <= longGroupMax && fits
						if got := f32(k, n, d, inPlace); got != want {
							t.Errorf("avx512LongGroups %v: %s, %dx%d float32, in place %v (%d bytes, rule %+v): flagGroups %v, want %v",
								long, k, n, d, inPlace, bytes, f32Groups, got, want)
						}
					}
				}
			}
		}
	}
	avx512LongGroups, streamBytes = true, 0 // from memory: never, whatever the bound
	if f32(kernelAVX512, 8, 576, false) {
		t.Errorf("8x576 float32 from memory: flagGroups set")
	}
	// Fewer than four rows make no group, nor do rows with a residual: no flag, in any format,
	// RMSNorm's or LayerNorm's.
	streamBytes, avx512LayerGroups = math.MaxInt, 1
	for _, n := range []int{1, 2, 3, 4} {
		for _, f := range formats {
			for _, layer := range []bool{false, true} {
				for _, residual := range []bool{false, true} {
					want := n == 4 && !residual
					if got := flagged(kernelAVX512, call{n: n, d: 576, f: f, layer: layer, residual: residual}); got != want {
						t.Errorf("%dx576 format %d, LayerNorm %v, residual %v: flagGroups %v, want %v", n, f, layer, residual, got, want)
					}
				}
			}
		}
	}
}
