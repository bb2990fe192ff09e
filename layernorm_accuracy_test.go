package rmsnorm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// LayerNorm's accuracy, and its agreement with the definitions of PyTorch's F.layer_norm and ONNX
// LayerNormalization. The kernels are bit-identical to generic (layernorm_test.go), so measuring
// generic measures all of them.

// layerNorm64 is LayerNorm as PyTorch's F.layer_norm and ONNX LayerNormalization define it, in
// float64 from the float32 inputs: the mean, the biased variance (divided by d), eps inside the
// square root, then the weight, then the bias (nil: none). It returns y, the mean and the
// inverse standard deviation 1/sqrt(var + eps) (ONNX's Mean and InvStdDev outputs).
func layerNorm64(x, w, b []float32, eps float64) (y []float64, mean, invStd float64) {
	d := float64(len(x))
	for _, v := range x {
		mean += float64(v)
	}
	mean /= d
	var variance float64
	for _, v := range x {
		variance += (float64(v) - mean) * (float64(v) - mean)
	}
	variance /= d
	invStd = 1 / math.Sqrt(variance+eps)
	y = make([]float64, len(x))
	for i, v := range x {
		y[i] = (float64(v) - mean) * invStd * float64(w[i])
		if b != nil {
			y[i] += float64(b[i])
		}
	}
	return y, mean, invStd
}

// layerErrors runs rows of d values (offset + N(0,1)) through Apply with Center, a weight, Inv and
// Mean, and returns the largest error of y against layerNorm64 relative to the row's largest |y|
// (rowY); the largest error against what a mean off by 4 units in the last place of the row's
// largest |x| explains on top of RMSNorm's bound (ratio: at most 1 if so); and the relative errors
// of Mean and Inv.
func layerErrors(d, rows int, offset float32, eps float32, seed int) (rowY, ratio, relMean, relInv float64) {
	r := seedFor(d, rows, seed)
	x := make([]float32, rows*d)
	for i := range x {
		x[i] = offset + normalValue(r)
	}
	w := make([]float32, d)
	fill(w, classNormal, r)
	var wmax float64
	for _, v := range w {
		wmax = max(wmax, math.Abs(float64(v)))
	}
	y, inv, mean := make([]float32, len(x)), make([]float32, rows), make([]float32, rows)
	Norm{Weight: w, Eps: eps, Center: true}.Apply(Rows{Dst: y, X: x, Inv: inv, Mean: mean})
	for row := range rows {
		want, m, is := layerNorm64(x[row*d:(row+1)*d], w, nil, float64(eps))
		var top float64
		for _, v := range want {
			top = max(top, math.Abs(v))
		}
		var xmax float32
		for _, v := range x[row*d : (row+1)*d] {
			xmax = max(xmax, float32(math.Abs(float64(v))))
		}
		ulp := float64(math.Nextafter32(xmax, math.MaxFloat32) - xmax)
		for i, v := range want {
			e := math.Abs(float64(y[row*d+i]) - v)
			rowY = max(rowY, e/top)
			ratio = max(ratio, e/(3e-7*top+4*ulp*is*wmax))
		}
		if m != 0 {
			relMean = max(relMean, math.Abs(float64(mean[row])-m)/math.Abs(m))
		}
		relInv = max(relInv, math.Abs(float64(inv[row])-is)/is)
	}
	return
}

// On normal rows (mean 0, std 1) LayerNorm is as accurate as RMSNorm: RMSNorm's bound of 3e-7
// (TestAccuracyNormalData) holds for every output against the row's largest, and Inv is within a
// few units in the last place of float32. (A row of two is the exception: centered, it is ±1
// whatever its values, so an output's error is the mean's rounding against the difference of the
// two values, however small: it is held to the bound below.) Rows far from zero lose what a
// float32 mean cannot hold: its rounding, a few units in the last place of the offset, shifts
// every centered value; against a spread of 1 that is 2^-17 at x = 100 + N(0,1) and 2^-10 at
// x = 1e4 + N(0,1). Measured (generic kernel, 50 rows of each length):
//
//	x              d = 64     d = 768    d = 4096   (max |err| / max |y| of the row)
//	N(0,1)         1.4e-7     1.4e-7     1.5e-7
//	100 + N(0,1)   8.8e-6     6.6e-6     3.9e-6
//	1e4 + N(0,1)   1.2e-3     5.1e-4     5.2e-4
//
// Every output of every row is held to RMSNorm's bound plus what a mean 4 units in the last place
// of the row's largest |x| off explains (4*ulp*inv*max|w|), and the normal rows of three or more
// to RMSNorm's bound alone.
func TestLayerNormAccuracy(t *testing.T) {
	for _, offset := range []float32{0, 100, 1e4} {
		for _, d := range []int{2, 3, 8, 64, 127, 768, 1024, 4096} {
			rowY, ratio, relMean, relInv := layerErrors(d, 50, offset, 1e-5, 90)
			t.Logf("x = %g + N(0,1) d=%4d: y max|err|/max|y| %.3g (%.2f of the bound); Mean %.3g; Inv %.3g",
				offset, d, rowY, ratio, relMean, relInv)
			if ratio > 1 {
				t.Errorf("x = %g + N(0,1) d=%d: an error is %.3g times what a mean 4 ulp off explains", offset, d, ratio)
			}
			if offset == 0 && d > 2 && rowY > 3e-7 {
				t.Errorf("d=%d: y max|err|/max|y| = %.3g exceeds 3e-7", d, rowY)
			}
			if offset == 0 && relInv > 4*0x1p-24 {
				t.Errorf("d=%d: Inv relative error %.3g exceeds 4 ulp", d, relInv)
			}
			if offset != 0 && relMean > 4*0x1p-24 {
				t.Errorf("x = %g + N(0,1) d=%d: Mean relative error %.3g exceeds 4 ulp", offset, d, relMean)
			}
		}
	}
}

// The definitions of PyTorch's F.layer_norm and ONNX LayerNormalization (axis -1): the mean, the
// biased variance, eps inside the square root, the weight and then the bias; ONNX's optional
// Mean and InvStdDev outputs are Rows.Mean and Rows.Inv. Checked at PyTorch's default eps
// (1e-5), BERT's (1e-12) and on rows whose variance eps dominates.
func TestLayerNormFrameworkSemantics(t *testing.T) {
	for _, eps := range []float32{1e-5, 1e-12, 1e-6} {
		for _, d := range []int{1, 32, 384, 768, 1024} { // 384: all-MiniLM; 768, 1024: BERT base, large
			for _, scale := range []float32{1, 1e-4} {
				const rows = 8
				r := seedFor(d, int(scale*1e4), 91)
				x := make([]float32, rows*d)
				for i := range x {
					x[i] = 0.5 + scale*normalValue(r)
				}
				w, b := make([]float32, d), make([]float32, d)
				fill(w, classNormal, r)
				fill(b, classNormal, r)
				y, inv, mean := make([]float32, len(x)), make([]float32, rows), make([]float32, rows)
				Norm{Weight: w, Bias: b, Eps: eps, Center: true}.Apply(Rows{Dst: y, X: x, Inv: inv, Mean: mean})
				ctx := fmt.Sprintf("eps=%g d=%d x=0.5+%g*N(0,1)", eps, d, scale)
				for row := range rows {
					want, m, is := layerNorm64(x[row*d:(row+1)*d], w, b, float64(eps))
					if e := math.Abs(float64(mean[row])-m) / math.Abs(m); e > 0x1p-22 {
						t.Errorf("%s row %d: Mean = %v, F.layer_norm's mean %v (relative error %.3g)", ctx, row, mean[row], m, e)
					}
					// With a spread of 1e-4 around 0.5, the float32 mean's error (an ulp of 0.5,
					// 2^-24) is 1e-3 of a centered value: Inv and y inherit that much.
					tol := 1e-6
					if scale != 1 {
						tol = 2e-3
					}
					if d == 1 {
						tol = 0 // x - mean is exactly 0: Inv is 1/sqrt(eps), y is the bias
					}
					if e := math.Abs(float64(inv[row])-is) / is; e > max(tol, 2*0x1p-24) {
						t.Errorf("%s row %d: Inv = %v, ONNX's InvStdDev %v (relative error %.3g)", ctx, row, inv[row], is, e)
					}
					var top float64
					for _, v := range want {
						top = max(top, math.Abs(v))
					}
					for i, v := range want {
						if e := math.Abs(float64(y[row*d+i]) - v); e > max(tol, 1e-6)*top {
							t.Fatalf("%s row %d: y[%d] = %v, F.layer_norm gives %v", ctx, row, i, y[row*d+i], v)
						}
					}
				}
			}
		}
	}
}

// BERT's eps, 1e-12: a row whose values are all equal (exactly summed) has variance 0, so t is
// eps and inv 1e6; its centered values are exactly zero, and y is exactly the bias, as PyTorch
// computes it ((x - mean) * rstd * w + b with x - mean = 0), on every kernel and format.
func TestLayerNormBERTEps(t *testing.T) {
	const d = 768
	w, b := normalRows(d, 1, 92), normalRows(d, 1, 93)
	for _, v := range []float32{0, 3, -0.5, 1024} {
		x := make([]float32, 2*d)
		for i := range x {
			x[i] = v
		}
		for _, k := range testKernels() {
			for _, f := range layerFormats {
				lc := lcase{f: f, mode: weighted, center: true, bias: true, inv: true, mean: true}
				out := runLayer(t, k, lc, d, 2, x, nil, w, b, 1e-12, 0)
				for i, y := range out.dst {
					want := b[i%d]
					if f.out() != formatF32 {
						want = f.round(want)
					}
					if y != want {
						t.Fatalf("%s %s constant row %g: y[%d] = %v, want the bias %v", k, fnameAll(f), v, i, y, want)
					}
				}
				if out.mean[0] != v || out.inv[0] != 1/float32(math.Sqrt(1e-12)) {
					t.Fatalf("%s %s constant row %g: Mean %v, Inv %v", k, fnameAll(f), v, out.mean[0], out.inv[0])
				}
			}
		}
	}
}

// PyTorch's layer_norm on bfloat16 and float16 tensors (and Hugging Face's nn.LayerNorm in a 16-bit
// model) computes in float32 and rounds once: y = round16(((x - mean)*rstd)*w + b). This package's
// ApplyBF16 and ApplyF16 with Center and Bias round once too; against a reference with mean and
// rstd from exact sums, each rounded to float32 once, the outputs differ only where the last bit of
// the mean or of inv moves an output across a rounding boundary: by one unit in the last place, in
// a small fraction of outputs. The weights and biases are 16-bit values widened, as a model's are.
func TestLayerNormCastOrders(t *testing.T) {
	for _, f := range []format{formatBF16, formatF16} {
		var outputs, differ int
		for _, d := range []int{64, 384, 768, 1024, 4096} {
			for _, eps := range []float32{1e-5, 1e-12} {
				const rows = 32
				r := rand.New(rand.NewPCG(uint64(d), uint64(f)))
				x := make([]uint16, rows*d)
				for i := range x {
					x[i] = f.narrow(float32(0.25 + r.NormFloat64()*3))
				}
				w, b := make([]float32, d), make([]float32, d)
				for i := range w {
					w[i] = f.round(float32(1 + r.NormFloat64()/4))
					b[i] = f.round(float32(r.NormFloat64() / 8))
				}
				n := Norm{Weight: w, Bias: b, Eps: eps, Center: true}
				y := make([]uint16, len(x))
				if f == formatBF16 {
					n.ApplyBF16(Rows16{Dst: y, X: x})
				} else {
					n.ApplyF16(Rows16{Dst: y, X: x})
				}
				for row := range rows {
					xr := make([]float32, d)
					for i := range xr {
						xr[i] = f.widen(x[row*d+i])
					}
					_, m64, is := layerNorm64(xr, w, nil, float64(eps))
					m, rstd := float32(m64), float32(is)
					for i, v := range xr {
						want := f.narrow(float32(float32((v-m)*rstd)*w[i]) + b[i])
						got := y[row*d+i]
						outputs++
						if got == want {
							continue
						}
						differ++
						if ulps16(got, want) != 1 {
							t.Fatalf("%s d=%d eps=%g row %d: y[%d] = %#04x, the reference gives %#04x: more than one unit apart",
								fnameAll(f), d, eps, row, i, got, want)
						}
					}
				}
			}
		}
		frac := float64(differ) / float64(outputs)
		t.Logf("F.layer_norm %s: %d of %d outputs (%.4f%%) one unit in the last place from the reference, none further",
			fnameAll(f), differ, outputs, 100*frac)
		if frac > 1e-3 {
			t.Errorf("%s: %.4f%% of outputs differ from the reference, more than the 0.1%% the last bits of mean and inv explain",
				fnameAll(f), 100*frac)
		}
	}
}
