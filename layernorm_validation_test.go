package rmsnorm

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// LayerNorm misuse: every rule on Bias, Mean and DB panics with an "rmsnorm:" message naming the
// rule, before anything is written; and the legal edges (the bias shares memory with X or the
// weight, both read only) run.

// layerMisuse is one call on slices of mem, which the call must leave as it was.
type layerMisuse struct {
	name string
	call func(mem []float32)
	want []string // substrings of the panic message
}

func TestLayerNormBadInput(t *testing.T) {
	const d = 4
	at := func(mem []float32, i, n int) []float32 { return mem[i : i+n : i+n] }
	w := func(mem []float32) []float32 { return at(mem, 0, d) }
	x := func(mem []float32) []float32 { return at(mem, 8, 2*d) }    // two rows
	dst := func(mem []float32) []float32 { return at(mem, 24, 2*d) } // Dst, or DX
	res := func(mem []float32) []float32 { return at(mem, 40, 2*d) } // Residual, or DY
	inv := func(mem []float32) []float32 { return at(mem, 56, 2) }
	mean := func(mem []float32) []float32 { return at(mem, 60, 2) }
	bias := func(mem []float32) []float32 { return at(mem, 64, d) }
	grad := func(mem []float32) []float32 { return at(mem, 72, d) } // DW, or DB
	db := func(mem []float32) []float32 { return at(mem, 80, d) }
	norm := func(mem []float32, center bool) Norm {
		return Norm{Weight: w(mem), Bias: bias(mem), Eps: 1e-5, Center: center}
	}
	apply := func(n Norm, r Rows) { n.Apply(r) }
	cases := []layerMisuse{
		{"Bias short", func(m []float32) {
			n := norm(m, true)
			n.Bias = n.Bias[:3]
			apply(n, Rows{Dst: dst(m), X: x(m)})
		}, []string{"Norm.Apply", "len(Bias) = 3", "len(Weight) = 4"}},
		{"Bias empty, not nil", func(m []float32) {
			n := norm(m, false)
			n.Bias = n.Bias[:0]
			apply(n, Rows{Dst: dst(m), X: x(m)})
		}, []string{"len(Bias) = 0", "= 4"}},
		{"Bias long, no weight", func(m []float32) {
			n := Norm{Dim: d, Bias: at(m, 64, d+1), Eps: 1e-5}
			apply(n, Rows{Dst: dst(m), X: x(m)})
		}, []string{"len(Bias) = 5", "Dim = 4"}},
		{"Bias overlaps Dst", func(m []float32) {
			n := norm(m, true)
			n.Bias = at(m, 26, d)
			apply(n, Rows{Dst: dst(m), X: x(m)})
		}, []string{"Bias overlaps Dst"}},
		{"Bias overlaps Dst in place", func(m []float32) {
			n := norm(m, true)
			n.Bias = at(m, 12, d)
			apply(n, Rows{Dst: x(m), X: x(m)})
		}, []string{"Bias overlaps Dst"}},
		{"Bias overlaps Residual", func(m []float32) {
			n := norm(m, false)
			n.Bias = at(m, 44, d)
			apply(n, Rows{Dst: dst(m), X: x(m), Residual: res(m)})
		}, []string{"Bias overlaps Residual"}},
		{"Bias overlaps Inv", func(m []float32) {
			n := norm(m, true)
			n.Bias = at(m, 54, d)
			apply(n, Rows{Dst: dst(m), X: x(m), Inv: inv(m)})
		}, []string{"Bias overlaps Inv"}},
		{"Mean without Center", func(m []float32) {
			apply(norm(m, false), Rows{Dst: dst(m), X: x(m), Mean: mean(m)})
		}, []string{"Mean is set but Center is not: Mean receives the mean that Center subtracts"}},
		{"Mean without Center, RMSNorm", func(m []float32) {
			Norm{Weight: w(m), Eps: 1e-5}.Apply(Rows{Dst: dst(m), X: x(m), Mean: mean(m)})
		}, []string{"Mean is set but Center is not"}},
		{"Mean short", func(m []float32) {
			apply(norm(m, true), Rows{Dst: dst(m), X: x(m), Mean: mean(m)[:1]})
		}, []string{"len(Mean) = 1", "2 rows"}},
		{"Mean short, strided", func(m []float32) {
			apply(norm(m, true), Rows{Dst: dst(m), X: x(m), N: 2, Stride: d, Mean: mean(m)[:1]})
		}, []string{"len(Mean) = 1", "2 rows"}},
		{"Mean overlaps X", func(m []float32) {
			apply(norm(m, true), Rows{Dst: dst(m), X: x(m), Mean: at(m, 14, 2)})
		}, []string{"Mean overlaps X"}},
		{"Mean overlaps Dst", func(m []float32) {
			apply(norm(m, true), Rows{Dst: dst(m), X: x(m), Mean: at(m, 31, 2)})
		}, []string{"Mean overlaps Dst"}},
		{"Mean overlaps Weight", func(m []float32) {
			apply(norm(m, true), Rows{Dst: dst(m), X: x(m), Mean: at(m, 3, 2)})
		}, []string{"Mean overlaps Weight"}},
		{"Mean overlaps Residual", func(m []float32) {
			apply(norm(m, true), Rows{Dst: dst(m), X: x(m), Residual: res(m), Mean: at(m, 40, 2)})
		}, []string{"Mean overlaps Residual"}},
		{"Mean overlaps Inv", func(m []float32) {
			apply(norm(m, true), Rows{Dst: dst(m), X: x(m), Inv: inv(m), Mean: at(m, 57, 2)})
		}, []string{"Mean overlaps Inv"}},
		{"Mean overlaps Bias", func(m []float32) {
			apply(norm(m, true), Rows{Dst: dst(m), X: x(m), Mean: at(m, 67, 2)})
		}, []string{"Mean overlaps Bias"}},
		{"Forward: Bias overlaps dst", func(m []float32) {
			n := norm(m, true)
			n.Bias = at(m, 24, d)
			n.Forward(dst(m), x(m))
		}, []string{"Norm.Forward", "Bias overlaps dst"}},
		{"ApplyBF16: Bias short", func(m []float32) {
			n := norm(m, true)
			n.Bias = n.Bias[:1]
			n.ApplyBF16(Rows16{Dst: make([]uint16, 8), X: make([]uint16, 8)})
		}, []string{"Norm.ApplyBF16", "len(Bias) = 1"}},
		{"ApplyToF16: Mean without Center", func(m []float32) {
			norm(m, false).ApplyToF16(RowsTo16{Dst: make([]uint16, 8), X: x(m), Mean: mean(m)})
		}, []string{"Norm.ApplyToF16", "Mean is set but Center is not"}},
		{"ForwardF16: Workers and a short Bias", func(m []float32) {
			n := norm(m, true)
			n.Bias, n.Workers = n.Bias[:2], 4
			n.ForwardF16(make([]uint16, 8), make([]uint16, 8))
		}, []string{"Norm.ForwardF16", "len(Bias) = 2"}},

		// Backward.
		{"DB without Bias", func(m []float32) {
			Norm{Weight: w(m), Eps: 1e-5, Center: true}.Backward(Grad{DX: dst(m), X: x(m), DY: res(m), DB: db(m)})
		}, []string{"Norm.Backward", "DB is set but the Norm has no Bias"}},
		{"DB short", func(m []float32) {
			norm(m, true).Backward(Grad{DX: dst(m), X: x(m), DY: res(m), DB: db(m)[:3]})
		}, []string{"len(DB) = 3", "= 4"}},
		{"DB overlaps DX", func(m []float32) {
			norm(m, true).Backward(Grad{DX: dst(m), X: x(m), DY: res(m), DB: at(m, 30, d)})
		}, []string{"DB overlaps DX"}},
		{"DB overlaps DY", func(m []float32) {
			norm(m, false).Backward(Grad{DX: dst(m), X: x(m), DY: res(m), DB: at(m, 42, d)})
		}, []string{"DB overlaps DY"}},
		{"DB overlaps X", func(m []float32) {
			norm(m, true).Backward(Grad{X: x(m), DY: res(m), DB: at(m, 9, d)})
		}, []string{"DB overlaps X"}},
		{"DB overlaps DW", func(m []float32) {
			norm(m, true).Backward(Grad{DX: dst(m), X: x(m), DY: res(m), DW: grad(m), DB: at(m, 74, d)})
		}, []string{"DB overlaps DW"}},
		{"DB overlaps Inv", func(m []float32) {
			norm(m, true).Backward(Grad{DX: dst(m), X: x(m), DY: res(m), Inv: inv(m), DB: at(m, 55, d)})
		}, []string{"DB overlaps Inv"}},
		{"DB is Bias", func(m []float32) {
			norm(m, true).Backward(Grad{DX: dst(m), X: x(m), DY: res(m), DB: bias(m)})
		}, []string{"Bias overlaps DB"}},
		{"Backward: Bias short", func(m []float32) {
			n := norm(m, true)
			n.Bias = n.Bias[:3]
			n.Backward(Grad{DX: dst(m), X: x(m), DY: res(m)})
		}, []string{"len(Bias) = 3"}},
		{"Backward: Bias overlaps DX", func(m []float32) {
			n := norm(m, true)
			n.Bias = at(m, 28, d)
			n.Backward(Grad{DX: dst(m), X: x(m), DY: res(m)})
		}, []string{"Bias overlaps DX"}},
		{"Backward: Bias overlaps DW", func(m []float32) {
			n := norm(m, true)
			n.Bias = at(m, 73, d)
			n.Backward(Grad{DX: dst(m), X: x(m), DY: res(m), DW: grad(m)})
		}, []string{"Bias overlaps DW"}},
		{"Backward: Mean without Center", func(m []float32) {
			norm(m, false).Backward(Grad{DX: dst(m), X: x(m), DY: res(m), Mean: mean(m)})
		}, []string{"Mean is set but Center is not: Mean holds the row means of a forward call with Center"}},
		{"Backward: Mean short", func(m []float32) {
			norm(m, true).Backward(Grad{DX: dst(m), X: x(m), DY: res(m), Mean: mean(m)[:1]})
		}, []string{"len(Mean) = 1", "2 rows"}},
		{"Backward: Mean overlaps DX", func(m []float32) {
			norm(m, true).Backward(Grad{DX: dst(m), X: x(m), DY: res(m), Mean: at(m, 24, 2)})
		}, []string{"Mean overlaps DX"}},
		{"Backward: Mean overlaps DB", func(m []float32) {
			norm(m, true).Backward(Grad{DX: dst(m), X: x(m), DY: res(m), DB: db(m), Mean: at(m, 82, 2)})
		}, []string{"Mean overlaps DB"}},
		{"Backward: Mean overlaps Inv", func(m []float32) {
			norm(m, true).Backward(Grad{DX: dst(m), X: x(m), DY: res(m), Inv: inv(m), Mean: at(m, 57, 2)})
		}, []string{"Mean overlaps Inv"}},
	}
	for _, c := range cases {
		mem := make([]float32, 128)
		for i := range mem {
			mem[i] = float32(i%13) - 6.5
		}
		before := slices.Clone(mem)
		msg := func() (msg string) {
			defer func() {
				if p := recover(); p != nil {
					msg = fmt.Sprint(p)
				}
			}()
			c.call(mem)
			return ""
		}()
		if msg == "" {
			t.Errorf("%s: no panic", c.name)
			continue
		}
		if !strings.HasPrefix(msg, "rmsnorm: ") {
			t.Errorf("%s: panic %q does not start with \"rmsnorm: \"", c.name, msg)
		}
		for _, s := range c.want {
			if !strings.Contains(msg, s) {
				t.Errorf("%s: panic %q does not say %q", c.name, msg, s)
			}
		}
		if i := firstDiff(mem, before); i >= 0 {
			t.Errorf("%s: element %d of memory changed before the panic", c.name, i)
		}
	}
}

// The bias is read only: it may be X, lie inside X, or be the weight; a Mean alone with Center, a
// Bias without a Center and a Center without a Bias are all legal; and DB without DX or DW.
func TestLayerNormLegalEdges(t *testing.T) {
	const d = 4
	x := []float32{1, 2, 3, 4, -1, 0.5, 2, 7}
	w := []float32{1, 0.5, 2, -1}
	ref := func(n Norm) []float32 {
		y := make([]float32, len(x))
		n.Bias = slices.Clone(n.Bias)
		n.Apply(Rows{Dst: y, X: slices.Clone(x)})
		return y
	}
	for _, c := range []struct {
		name string
		bias func(x []float32) []float32
	}{
		{"Bias is the first row of X", func(x []float32) []float32 { return x[:d] }},
		{"Bias inside X", func(x []float32) []float32 { return x[2 : 2+d] }},
	} {
		xs := slices.Clone(x)
		n := Norm{Weight: w, Bias: c.bias(xs), Eps: 1e-5, Center: true}
		want := ref(n)
		y := make([]float32, len(x))
		n.Apply(Rows{Dst: y, X: xs})
		if i := firstDiff(y, want); i >= 0 {
			t.Errorf("%s: y[%d] = %v, want %v", c.name, i, y[i], want[i])
		}
	}
	ws := slices.Clone(w)
	n := Norm{Weight: ws, Bias: ws, Eps: 1e-5}
	want := ref(n)
	y := make([]float32, len(x))
	n.Forward(y, x)
	if i := firstDiff(y, want); i >= 0 {
		t.Errorf("Bias is the weight: y[%d] = %v, want %v", i, y[i], want[i])
	}
	// DB alone (no DX, no DW) is the sum of DY.
	dy := []float32{1, 2, 3, 4, 0.5, 0.25, -1, 8}
	db := make([]float32, d)
	Norm{Weight: w, Bias: w, Eps: 1e-5, Center: true}.Backward(Grad{X: x, DY: dy, DB: db})
	for i := range d {
		if want := dy[i] + dy[d+i]; db[i] != want {
			t.Errorf("DB alone: DB[%d] = %v, want %v", i, db[i], want)
		}
	}
}
