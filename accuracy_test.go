package rmsnorm

import (
	"math"
	"math/big"
	"slices"
	"testing"
)

// Accuracy of the contract against float64 and exact references. The kernels are bit-identical
// to generic (contract_test.go), so measuring generic measures all of them.

// ref64 is RMSNorm in float64 of the float32 inputs.
func ref64(x, w []float32, eps float32) []float64 {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+float64(eps))
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v) * inv * float64(w[i])
	}
	return y
}

func TestAccuracyNormalData(t *testing.T) {
	const target = 3e-7
	for _, d := range []int{1, 2, 3, 8, 64, 127, 128, 1000, 1024, 4096, 8192, 16384} {
		worst := 0.0
		for row := 0; row < 50; row++ {
			r := seedFor(d, row, 3)
			x := make([]float32, d)
			fill(x, classNormal, r)
			w := make([]float32, d)
			fill(w, classNormal, r)
			y := make([]float32, d)
			forwardWith(kernelGeneric, y, x, w, 1e-6)
			for i, want := range ref64(x, w, 1e-6) {
				if want == 0 {
					continue
				}
				if e := math.Abs(float64(y[i])-want) / math.Abs(want); e > worst {
					worst = e
				}
			}
		}
		t.Logf("d=%5d: max relative error %.3g (%.2f ulp of 2^-24)", d, worst, worst/0x1p-24)
		if worst > target {
			t.Errorf("d=%d: max relative error %.3g exceeds %.0e", d, worst, target)
		}
	}
}

// float64Path is the contract's float64 path written independently of rowFloat64.
func float64Path(x, w []float32, eps float32) []float32 {
	var ss float64
	for i := 0; i < len(x); i++ {
		ss = ss + float64(x[i])*float64(x[i])
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+float64(eps))
	y := make([]float32, len(x))
	for i := range x {
		y[i] = float32((float64(x[i]) * inv) * float64(w[i]))
	}
	return y
}

// exact returns the correctly rounded float32 of x[i]*w[i]/sqrt(mean(x^2)+eps), computed with
// 256-bit big.Float.
func exact(x, w []float32, eps float32) []float32 {
	const prec = 256
	ss := new(big.Float).SetPrec(prec)
	for _, v := range x {
		f := new(big.Float).SetPrec(prec).SetFloat64(float64(v))
		ss.Add(ss, f.Mul(f, f))
	}
	ms := new(big.Float).SetPrec(prec).Quo(ss, new(big.Float).SetPrec(prec).SetInt64(int64(len(x))))
	ms.Add(ms, new(big.Float).SetPrec(prec).SetFloat64(float64(eps)))
	rms := new(big.Float).SetPrec(prec).Sqrt(ms)
	y := make([]float32, len(x))
	for i, v := range x {
		q := new(big.Float).SetPrec(prec).SetFloat64(float64(v))
		q.Mul(q, new(big.Float).SetPrec(prec).SetFloat64(float64(w[i])))
		q.Quo(q, rms)
		y[i], _ = q.Float32()
	}
	return y
}

func TestFloat64PathRows(t *testing.T) {
	big := func(d int, scale float32) []float32 {
		x := make([]float32, d)
		for i := range x {
			x[i] = scale * (float32(i%9) - 4.5)
		}
		return x
	}
	cases := []struct {
		name string
		x    []float32
		eps  float32
	}{
		{"seed example x 1e30", []float32{3e30, 4e30}, 1e-6},
		{"overflowing squares", big(100, 1e25), 1e-6},
		{"MaxFloat32 row", []float32{math.MaxFloat32, -math.MaxFloat32, math.MaxFloat32}, 1e-5},
		{"sum overflows late", append(big(4096, 3e17), 1e30), 1e-6},
		{"tiny row, eps 0", big(64, 1e-30), 0},
		{"subnormal row, eps 0", []float32{1e-45, -3e-44, 7e-42, 1e-40}, 0},
		{"tiny row, tiny eps", big(300, 1e-25), 1e-38},
		{"one element", []float32{-2e35}, 0},
	}
	for _, c := range cases {
		w := make([]float32, len(c.x))
		for i := range w {
			w[i] = 0.5 + float32(i%4)/8
		}
		for _, k := range testKernels() {
			y := make([]float32, len(c.x))
			forwardWith(k, y, c.x, w, c.eps)
			want := float64Path(c.x, w, c.eps)
			if i := firstDiff(y, want); i >= 0 {
				t.Fatalf("%s %s: y[%d] = %v, the float64 path gives %v", c.name, k, i, y[i], want[i])
			}
			ex := exact(c.x, w, c.eps)
			for i := range y {
				if math.IsInf(float64(y[i]), 0) || y[i] != y[i] {
					t.Fatalf("%s %s: y[%d] = %v, want a finite value", c.name, k, i, y[i])
				}
				if diff := ulps(y[i], ex[i]); diff > 1 {
					t.Fatalf("%s %s: y[%d] = %v is %d ulp from the exact %v", c.name, k, i, y[i], diff, ex[i])
				}
			}
		}
	}
}

// ulps returns the distance between two finite float32 values of the same sign in units in the
// last place.
func ulps(a, b float32) int64 {
	if a == b {
		return 0
	}
	ia, ib := int64(math.Float32bits(a)), int64(math.Float32bits(b))
	if (ia < 0) != (ib < 0) || a*b < 0 {
		return math.MaxInt64
	}
	if ia > ib {
		return ia - ib
	}
	return ib - ia
}

// The float64 trigger is exactly t outside [2^-100, MaxFloat32] (NaN included).
func TestFloat64Trigger(t *testing.T) {
	cases := []struct {
		ss   float32
		eps  float32
		want bool // stays on the float32 path
	}{
		{0x1p-100, 0, true},
		{math.Nextafter32(0x1p-100, 0), 0, false},
		{0, 0x1p-100, true},
		{0, math.Nextafter32(0x1p-100, 0), false},
		{math.MaxFloat32, 0, true},
		{math.MaxFloat32, math.MaxFloat32, false}, // t overflows to +Inf
		{float32(math.Inf(1)), 0, false},
		{float32(math.NaN()), 1, false},
		{0, 0, false},
		{1, 1e-6, true},
	}
	for _, c := range cases {
		if _, ok := invRMS(c.ss, 1, c.eps); ok != c.want {
			t.Errorf("invRMS(ss=%g, d=1, eps=%g): float32 path %v, want %v", c.ss, c.eps, ok, c.want)
		}
	}
}

// Each variant against float64, on normally distributed rows.
func TestVariantAccuracy(t *testing.T) {
	const target = 3e-7
	for _, unit := range []bool{false, true} {
		for _, residual := range []bool{false, true} {
			worst := 0.0
			for _, d := range []int{1, 64, 128, 1000, 4096, 16384} {
				x := normalRows(d, 4, 14)
				res := normalRows(d, 4, 15)
				w := normalRows(d, 1, 16)
				h := slices.Clone(x)
				if residual {
					for i := range h {
						h[i] = x[i] + res[i]
					}
				}
				we := slices.Clone(w)
				if unit {
					for i := range we {
						we[i] = 1 + w[i] // exact reference weight: 1 + w in float32
					}
				}
				y := make([]float32, len(x))
				n := Norm{Weight: w, Eps: 1e-6, UnitOffset: unit}
				r := Rows{Dst: y, X: x}
				if residual {
					r.Residual = res
				}
				n.Apply(r)
				for row := 0; row < 4; row++ {
					ref := ref64(h[row*d:(row+1)*d], we, 1e-6)
					for i, want := range ref {
						if want == 0 {
							continue
						}
						if e := math.Abs(float64(y[row*d+i])-want) / math.Abs(want); e > worst {
							worst = e
						}
					}
				}
			}
			t.Logf("UnitOffset=%v Residual=%v: max relative error %.3g", unit, residual, worst)
			if worst > target {
				t.Errorf("UnitOffset=%v Residual=%v: max relative error %.3g exceeds %.0e", unit, residual, worst, target)
			}
		}
	}
}
