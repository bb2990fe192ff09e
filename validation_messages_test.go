package rmsnorm

import (
	"strings"
	"testing"
)

// The messages of bad calls name what is wrong and nothing else, and point the caller the right way
// where a likely mistake has a better form.

// panicMessage runs f and returns the string it panics with ("" if it does not panic).
func panicMessage(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg, _ = r.(string)
		}
	}()
	f()
	return ""
}

// Only the negative ones of N, Stride and DstStride appear in the message, whichever they are.
func TestNegativeCountsNamed(t *testing.T) {
	w4 := []float32{1, 2, 3, 4}
	n := Norm{Weight: w4, Eps: 1e-6}
	x, dst := make([]float32, 8), make([]float32, 8)
	for _, c := range []struct {
		rows, stride, dstStride int
		want                    string
	}{
		{-1, 0, 0, "N = -1 must not be negative"},
		{2, -4, 0, "Stride = -4 must not be negative"},
		{2, 4, -4, "DstStride = -4 must not be negative"},
		{0, -4, 0, "Stride = -4 must not be negative"},
		{-1, -4, 0, "N = -1 and Stride = -4 must not be negative"},
		{2, -4, -5, "Stride = -4 and DstStride = -5 must not be negative"},
		{-1, -4, -5, "N = -1, Stride = -4 and DstStride = -5 must not be negative"},
	} {
		r := Rows{Dst: dst, X: x, N: c.rows, Stride: c.stride, DstStride: c.dstStride}
		want := "rmsnorm: Norm.Apply: " + c.want
		if got := panicMessage(func() { n.Apply(r) }); got != want {
			t.Errorf("Apply(N %d, Stride %d, DstStride %d): panic %q, want %q", c.rows, c.stride, c.dstStride, got, want)
		}
	}
	for _, c := range []struct {
		rows, stride int
		want         string
	}{
		{-1, 0, "N = -1 must not be negative"},
		{2, -4, "Stride = -4 must not be negative"},
		{-1, -4, "N = -1 and Stride = -4 must not be negative"},
	} {
		g := Grad{DX: dst, X: x, DY: make([]float32, 8), N: c.rows, Stride: c.stride}
		want := "rmsnorm: Norm.Backward: " + c.want
		if got := panicMessage(func() { n.Backward(g) }); got != want {
			t.Errorf("Backward(N %d, Stride %d): panic %q, want %q", c.rows, c.stride, got, want)
		}
	}
}

// An empty but non-nil DX is a DX of the wrong length, and its message says that a nil one asks
// for the weight gradient alone; a DX of another wrong length gets no such hint.
func TestEmptyDXHint(t *testing.T) {
	n := Norm{Weight: []float32{1, 2, 3, 4}, Eps: 1e-6}
	const hint = "leave it nil to ask for DW alone"
	x, dy, dw := make([]float32, 8), make([]float32, 8), make([]float32, 4)
	for _, c := range []struct {
		name string
		g    Grad
		want bool
	}{
		{"empty, back to back", Grad{DX: []float32{}, X: x, DY: dy, DW: dw}, true},
		{"empty, N rows", Grad{DX: []float32{}, X: x, DY: dy, DW: dw, N: 2}, true},
		{"empty, strided", Grad{DX: []float32{}, X: x, DY: dy, DW: dw, N: 1, Stride: 6}, true},
		{"short, back to back", Grad{DX: make([]float32, 7), X: x, DY: dy, DW: dw}, false},
		{"short, N rows", Grad{DX: make([]float32, 7), X: x, DY: dy, DW: dw, N: 2}, false},
		{"DY empty", Grad{DX: make([]float32, 8), X: x, DY: []float32{}, DW: dw}, false},
	} {
		got := panicMessage(func() { n.Backward(c.g) })
		if !strings.HasPrefix(got, "rmsnorm: Norm.Backward: len(D") {
			t.Errorf("%s: panic %q, want one about a length", c.name, got)
		}
		if strings.Contains(got, hint) != c.want {
			t.Errorf("%s: panic %q: hint %q given = %v, want %v", c.name, got, hint, !c.want, c.want)
		}
	}
	// The nil DX the hint points to is a valid call.
	if got := panicMessage(func() { n.Backward(Grad{X: x, DY: dy, DW: dw}) }); got != "" {
		t.Errorf("nil DX with DW: panic %q", got)
	}
}
