package rmsnorm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBF16NaNLanesExact puts NaN-making weights and biases into every bfloat16 output form (rows
// of bfloat16 and float32 rows into bfloat16; RMSNorm and each LayerNorm form; every weight form,
// RoundNormalized, residual, streaming on and off) and compares each output's bits with generic's,
// NaN lanes included: the contract narrows every NaN to 0x7fc0, which the other comparisons, NaN
// payloads aside, do not check. The kernels find those lanes apart from the rest (on AVX2 one
// compare per pair of vectors, then an out-of-line path: packAVX2 in asm/amd64), so each scale
// loop's rare path runs here: NaN weights and biases of several signs and payloads, and an
// infinite weight times a zero element or plus the opposite infinite bias. Rows stay in range, so
// the kernels' own paths compute them.
func TestBF16NaNLanesExact(t *testing.T) {
	inf := float32(math.Inf(1))
	// NaNs of both signs, quiet and signaling, with payloads: the integer rounding alone would
	// turn most of them into something else than 0x7fc0 (0xffc0, 0x7fc1, or -0 after a carry).
	nanBits := []uint32{0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001, 0x7fffffff, 0xffffffff, 0x7fc0ffff}
	forms := append([]struct{ center, bias bool }{{false, false}}, layerForms...)
	nans := 0
	for _, k := range simdKernels() {
		for _, f := range []format{formatBF16, formatToBF16} {
			for _, lf := range forms {
				for _, mode := range []weightMode{weighted, offset, unweighted} {
					for _, rn := range []bool{false, true} {
						if rn && mode == unweighted {
							continue // RoundNormalized comes with a weight
						}
						for _, residual := range []bool{false, true} {
							for _, stream := range []bool{false, true} {
								for _, d := range []int{64, 100, 257, 1000} {
									r := rand.New(rand.NewPCG(uint64(d), uint64(f)))
									const rows = 3
									x, res, w, b := normalInputs(r, rows, d)
									for q := 3; q < d; q += 37 {
										nan := math.Float32frombits(nanBits[q%len(nanBits)])
										switch q % 3 {
										case 0:
											w[q] = nan
										case 1:
											b[q] = nan // only where the form has a bias
										case 2:
											// Inf*y + -Inf with a bias, else ±Inf; Inf*0 in row 1.
											w[q], b[q], x[d+q], res[d+q] = inf, -inf, 0, 0
										}
									}
									c := lcase{f: f, mode: mode, center: lf.center, bias: lf.bias, rn: rn, residual: residual,
										wclass: classNormal, bclass: classNormal, resClass: classNormal}
									var got, want layerOut
									withStreaming(stream, func() {
										want = runLayer(t, kernelGeneric, c, d, rows, x, res, w, b, 1e-5, d%16)
										got = runLayer(t, k, c, d, rows, x, res, w, b, 1e-5, d%16)
									})
									for i, v := range want.dst {
										if g := got.dst[i]; math.Float32bits(g) != math.Float32bits(v) {
											t.Fatalf("%s %s stream=%v d=%d: dst[%d] = %#08x, want %#08x",
												k, c, stream, d, i, math.Float32bits(g), math.Float32bits(v))
										}
										if v != v {
											nans++
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
	if nans == 0 && len(simdKernels()) > 0 {
		t.Fatal("no NaN output was compared")
	}
	t.Logf("%d NaN outputs compared bit for bit", nans)
}
