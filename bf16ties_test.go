package rmsnorm

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// The scale passes narrow y to bfloat16 with their own copies of the integer rounding, in every
// loop (in cache, streamed, each weight form, RoundNormalized, the ends of rows). Random rows
// almost never put a tie there (1 in 65536 outputs), so a loop that broke ties the wrong way
// would pass the kernel tests. Here every |x| is 1 (for LayerNorm the row's +1 and -1 balanced,
// so that its mean is 0) and the sum of squares over d is 1. With eps 0, inv is 1 and y = ±w'
// exactly, w' chosen for the low half of its bits: ties with the kept bit even and odd, and their
// neighbours. With an eps that makes inv itself a tie (tieEps), RoundNormalized's n = x*inv is
// one in every lane, with the kept bit odd or even. With a residual, h = x + res is a tie of its
// own (res ±2^-8 or ±3*2^-8 beside ±1). Every kernel under test must give the generic kernel's
// bits, in cache and streamed.

// tieLows are the low 16 bits of float32 values around the bfloat16 rounding's half way.
var tieLows = []uint32{0x8000, 0x7fff, 0x8001, 0x0000, 0xffff, 0x0001, 0x4000, 0xc000}

// tieWeights returns d weights whose w' (w itself, or 1+w with offset) have the low halves of
// tieLows over high halves that vary, with both parities of the kept bit.
func tieWeights(d int, offset bool, seed uint64) []float32 {
	w := make([]float32, d)
	for i := range w {
		seed = seed*6364136223846793005 + 1442695040888963407
		hi := uint32(seed>>40) & 0x7f // the kept bits below the leading one, odd and even
		low := tieLows[(i+int(seed>>60))%len(tieLows)]
		if offset {
			// w' = 1 + w in [2, 4): w = w'-1 and 1 + w are both exact.
			v := math.Float32frombits(0x40000000 | hi<<16 | low)
			w[i] = v - 1
		} else {
			exp := uint32(120+(seed>>58)%8) << 23 // 2^-7 .. 2^0
			w[i] = math.Float32frombits(uint32(seed>>63)<<31 | exp | hi<<16 | low)
		}
	}
	return w
}

// tieEps returns the least eps >= 0 for which inv = 1/sqrt(1 + eps) (step 3 of the contract on
// a row whose sum of squares over d is 1) is half way between two bfloat16 values whose lower
// one's last bit is kept, and that inv.
func tieEps(kept uint32) (eps, inv float32) {
	for t := float32(1); t < 2; t = math.Nextafter32(t, 2) {
		inv := 1 / float32(math.Sqrt(float64(t)))
		if b := math.Float32bits(inv); b&0xffff == 0x8000 && b>>16&1 == kept {
			return t - 1, inv // exact: t is in [1, 2)
		}
	}
	panic("no eps")
}

func TestBF16RoundingTies(t *testing.T) {
	epsOdd, invOdd := tieEps(1)
	epsEven, invEven := tieEps(0)
	t.Logf("eps %g gives inv %g (%#x), eps %g gives %g (%#x)", epsOdd, invOdd, math.Float32bits(invOdd),
		epsEven, invEven, math.Float32bits(invEven))
	dims := []int{64, 66, 70, 96, 126, 128, 130, 4096}
	for d := 2; d <= 40; d += 2 {
		dims = append(dims, d)
	}
	forms := []vcase{{mode: weighted}, {mode: weighted, rn: true}, {mode: offset}, {mode: offset, rn: true},
		{mode: unweighted}, {mode: weighted, residual: true}, {mode: offset, residual: true, rn: true},
		{mode: unweighted, residual: true}}
	runs := 0
	for _, d := range dims {
		tc := tieCase{d: d}
		for _, tc.c = range forms {
			for _, e := range []struct{ eps, inv float32 }{{0, 1}, {epsOdd, invOdd}, {epsEven, invEven}} {
				tc.eps, tc.inv = e.eps, e.inv
				for _, tc.center = range []bool{false, true} {
					for _, tc.bias = range []bool{false, true} {
						for _, tc.nan = range []bool{false, true} {
							if tc.nan && tc.c.mode == unweighted && !tc.bias {
								continue // nothing to put a NaN in
							}
							for _, tc.f = range []format{formatBF16, formatToBF16} {
								for _, tc.layout = range []tieLayout{inCache, streamed, strided} {
									runs += tc.check(t)
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d calls on kernels %v", runs, testKernels())
}

// tieRows is the number of rows of each call of TestBF16RoundingTies.
const tieRows = 5 // a group of four rows and one more: both ways the AVX2 kernels sum short rows

// tieLayout is how a call of TestBF16RoundingTies lays out and streams its rows: back to back in
// cache, back to back streamed (withStreaming), or strided (6 elements between rows), which takes
// the loops that prefetch without non-temporal stores.
type tieLayout int

const (
	inCache tieLayout = iota
	streamed
	strided
)

// tieCase is one call of TestBF16RoundingTies: the row length, form, eps, Center, bias, NaN
// weights and biases, format and layout.
type tieCase struct {
	d      int
	c      vcase
	eps    float32
	inv    float32 // what inv is with eps on rows without a residual
	center bool
	bias   bool // a Bias of zeros: y keeps its ties, and the loops that add a bias run
	nan    bool // NaN weights and biases (every 37th, 41st): their vectors take the out-of-line rounding
	f      format
	layout tieLayout
}

// check runs the case on the generic kernel, checks the premise (with eps 0 and no residual, y
// is ±w' rounded once), runs it on every kernel under test and compares, and returns the number
// of kernels it compared.
func (tc tieCase) check(t *testing.T) int {
	t.Helper()
	stride := tc.d
	if tc.layout == strided {
		stride += 6
	}
	size := (tieRows-1)*stride + tc.d
	x, res := make([]float32, size), make([]float32, size)
	for i := range x {
		x[i], res[i] = 7, 7 // between strided rows: neither read nor written
	}
	for r := range tieRows {
		for j := 0; j < tc.d; j += 2 { // ±1, a pair at a time: as many of each in a row
			s := float32(1 - 2*(((r*tc.d+j)*7/3)%2))
			x[r*stride+j], x[r*stride+j+1] = s, -s
		}
		for j := range tc.d {
			res[r*stride+j] = float32([]float64{0x1p-8, -0x1p-8, 0x3p-8, -0x3p-8, 0}[(j*5+r)%5])
		}
	}
	w := tieWeights(tc.d, tc.c.mode == offset, uint64(tc.d))
	n := Norm{Weight: w, UnitOffset: tc.c.mode == offset, RoundNormalized: tc.c.rn, Center: tc.center, Eps: tc.eps}
	if tc.c.mode == unweighted {
		n = Norm{Dim: tc.d, Center: tc.center, Eps: tc.eps}
	}
	if tc.bias {
		n.Bias = make([]float32, tc.d)
	}
	if tc.nan {
		for i := 5; i < tc.d && n.Weight != nil; i += 37 {
			n.Weight[i] = float32(math.NaN())
		}
		for i := 11; i < tc.d && n.Bias != nil; i += 41 {
			n.Bias[i] = float32(math.NaN())
		}
	}
	// run returns y, and the residual h as the call left it: bfloat16 rows (ApplyBF16), or float32
	// ones (ApplyToBF16, hf), and each row's inv.
	run := func(k kernelID) (y, h []uint16, hf, inv []float32) {
		y, inv = make([]uint16, size), make([]float32, tieRows)
		withStreaming(tc.layout == streamed, func() {
			if tc.f == formatToBF16 {
				if tc.c.residual {
					hf = slices.Clone(res)
				}
				applyKernel(k, &n, tc.f, &rowsOf[uint16, float32]{Dst: y, X: x, Residual: hf, Inv: inv, N: tieRows, Stride: stride})
				return
			}
			if tc.c.residual {
				h = narrowAll(res, formatBF16)
			}
			applyRowsWith(k, &n, tc.f, y, narrowAll(x, formatBF16), h, inv, tieRows, stride)
		})
		return y, h, hf, inv
	}
	name := map[format]string{formatBF16: "ApplyBF16", formatToBF16: "ApplyToBF16"}[tc.f]
	form := map[weightMode]string{weighted: "weight", offset: "1+weight", unweighted: "no weight"}[tc.c.mode]
	ctx := fmt.Sprintf("%s d=%d eps=%g %s RoundNormalized=%v residual=%v center=%v bias=%v nan=%v layout=%d", name, tc.d,
		tc.eps, form, tc.c.rn, tc.c.residual, tc.center, tc.bias, tc.nan, tc.layout)
	wantY, wantH, wantHF, wantInv := run(kernelGeneric)
	if !tc.c.residual { // the premise: inv as chosen
		for r, v := range wantInv {
			if v != tc.inv {
				t.Fatalf("%s: generic's inv[%d] = %v (%#x), not %v", ctx, r, v, math.Float32bits(v), tc.inv)
			}
		}
	}
	if !tc.c.residual && tc.eps == 0 && !tc.nan && tc.layout != strided { // so y is ±w' rounded once
		for i, v := range x {
			wp := float32(1)
			if n.Weight != nil {
				wp = w[i%tc.d]
			}
			if n.UnitOffset {
				wp++
			}
			if b := narrowAll([]float32{v * wp}, formatBF16)[0]; wantY[i] != b {
				t.Fatalf("%s: generic's y[%d] = %#04x, not ±w' %#04x", ctx, i, wantY[i], b)
			}
		}
	}
	for _, k := range testKernels() {
		y, h, hf, inv := run(k)
		check16Exact(t, k.name()+" "+ctx+" y", y, wantY)
		check16Exact(t, k.name()+" "+ctx+" residual", h, wantH)
		for _, p := range []struct {
			what      string
			got, want []float32
		}{{"residual", hf, wantHF}, {"inv", inv, wantInv}} {
			if i := firstDiff(p.got, p.want); i >= 0 {
				t.Fatalf("%s %s: %s[%d] = %v, generic gives %v", k.name(), ctx, p.what, i, p.got[i], p.want[i])
			}
		}
	}
	return len(testKernels())
}
