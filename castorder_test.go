package rmsnorm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Agreement with the cast orders of the frameworks people compare 16-bit outputs against. Each
// reference below follows a framework's sequence of float32 operations and roundings, with 1/rms
// computed from the exact (float64) mean of squares and rounded to float32 once: the only thing
// left to differ from this package is the last bit of inv (another summation order), which moves
// an output by one unit in the last place now and then. The weights are 16-bit values widened to
// float32, as a model's are.
//
//   - Hugging Face LlamaRMSNorm (and every model that copies it): n = round16(x*r),
//     y = round16(w*n); this package with RoundNormalized.
//   - PyTorch F.rms_norm (and vLLM's CPU kernel): y = round16((x*r)*w); the default.
//   - Gemma's RMSNorm: y = round16((x*r)*(1+w)), 1+w in float32; UnitOffset.
func TestFrameworkCastOrders(t *testing.T) {
	for _, f := range []format{formatBF16, formatF16} {
		for _, fw := range []struct {
			name string
			norm Norm
		}{
			{"LlamaRMSNorm", Norm{RoundNormalized: true}},
			{"F.rms_norm", Norm{}},
			{"Gemma", Norm{UnitOffset: true}},
		} {
			var outputs, differ int
			for _, d := range []int{64, 128, 896, 1024, 4096} {
				const rows = 64
				r := rand.New(rand.NewPCG(uint64(d), uint64(f)))
				x := make([]uint16, rows*d)
				for i := range x {
					x[i] = f.narrow(float32(r.NormFloat64() * 3))
				}
				w := make([]float32, d)
				for i := range w {
					v := 1 + r.NormFloat64()/4
					if fw.norm.UnitOffset {
						v = r.NormFloat64() / 4
					}
					w[i] = f.widen(f.narrow(float32(v)))
				}
				n := fw.norm
				n.Weight, n.Eps = w, 1e-6
				y := make([]uint16, len(x))
				if f == formatBF16 {
					n.ApplyBF16(Rows16{Dst: y, X: x})
				} else {
					n.ApplyF16(Rows16{Dst: y, X: x})
				}
				for row := 0; row < rows; row++ {
					xr := x[row*d : (row+1)*d]
					var ss float64
					for _, h := range xr {
						v := float64(f.widen(h))
						ss += v * v
					}
					inv := float32(1 / math.Sqrt(ss/float64(d)+1e-6))
					for i, h := range xr {
						v := f.widen(h) * inv
						var want uint16
						switch fw.name {
						case "LlamaRMSNorm":
							want = f.narrow(w[i] * f.round(v))
						case "F.rms_norm":
							want = f.narrow(v * w[i])
						default:
							want = f.narrow(v * (1 + w[i]))
						}
						got := y[row*d+i]
						outputs++
						if got == want {
							continue
						}
						differ++
						if ulps16(got, want) != 1 {
							t.Fatalf("%s %s d=%d row %d: y[%d] = %#04x, the reference gives %#04x: more than one unit apart",
								fw.name, fname(f), d, row, i, got, want)
						}
					}
				}
			}
			frac := float64(differ) / float64(outputs)
			t.Logf("%-12s %s: %d of %d outputs (%.4f%%) one unit in the last place from the reference, none further",
				fw.name, fname(f), differ, outputs, 100*frac)
			if frac > 1e-3 {
				t.Errorf("%s %s: %.4f%% of outputs differ from the reference, more than the 0.1%% that the last bit of inv explains",
					fw.name, fname(f), 100*frac)
			}
		}
	}
}

// ulps16 is the distance of two finite 16-bit values of the same sign in units in the last place.
func ulps16(a, b uint16) int {
	if (a^b)&0x8000 != 0 {
		return math.MaxInt
	}
	d := int(a&0x7fff) - int(b&0x7fff)
	if d < 0 {
		d = -d
	}
	return d
}

// fname names format f in test messages.
func fname(f format) string {
	return [...]string{"float32", "bfloat16", "float16", "float32 to bfloat16", "float32 to float16"}[f]
}
