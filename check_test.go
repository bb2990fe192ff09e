package rmsnorm

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// mustPanic runs f and checks that it panics with a message containing every part of want.
func mustPanic(t *testing.T, name string, want []string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("%s: no panic", name)
		}
		msg, ok := r.(string)
		if !ok {
			t.Fatalf("%s: panic value %T %v, want a string", name, r, r)
		}
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Fatalf("%s: panic %q does not contain %q", name, msg, w)
			}
		}
	}()
	f()
}

func TestForwardBadInput(t *testing.T) {
	nan := float32(math.NaN())
	buf := make([]float32, 64)
	for i := range buf {
		buf[i] = float32(i + 1)
	}
	w4 := []float32{1, 2, 3, 4}
	cases := []struct {
		name   string
		dst, x []float32
		w      []float32
		eps    float32
		want   []string
	}{
		{"empty w", make([]float32, 8), buf[:8], nil, 1e-6, []string{"len(w) = 0", "len(x) = 8"}},
		{"not a multiple", make([]float32, 10), buf[:10], w4, 1e-6, []string{"len(x) = 10", "multiple of len(w) = 4"}},
		{"short dst", make([]float32, 7), buf[:8], w4, 1e-6, []string{"len(dst) = 7", "len(x) = 8"}},
		{"long dst", make([]float32, 9), buf[:8], w4, 1e-6, []string{"len(dst) = 9", "len(x) = 8"}},
		{"nil dst", nil, buf[:8], w4, 1e-6, []string{"len(dst) = 0", "len(x) = 8"}},
		{"dst with empty x", make([]float32, 4), nil, w4, 1e-6, []string{"len(dst) = 4", "len(x) = 0"}},
		{"negative eps", make([]float32, 8), buf[:8], w4, -1e-6, []string{"eps = -1e-06", ">= 0"}},
		{"NaN eps", make([]float32, 8), buf[:8], w4, nan, []string{"eps = NaN"}},
		{"Inf eps", make([]float32, 8), buf[:8], w4, float32(math.Inf(1)), []string{"eps = +Inf"}},
		{"NaN eps on empty x", nil, nil, w4, nan, []string{"eps = NaN"}},
		{"dst shifted over x", buf[4:12], buf[0:8], w4, 1e-6, []string{"dst overlaps x"}},
		{"dst inside x", buf[0:4], buf[0:8][:4:4], w4[:2], 1e-6, nil}, // same start and length: in place, fine
		{"dst overlaps w", buf[16:24], buf[0:8], buf[20:24], 1e-6, []string{"dst overlaps w"}},
		{"dst is w", buf[0:4], buf[8:12], buf[0:4], 1e-6, []string{"dst overlaps w"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.want == nil { // a legal call in the table, to keep the overlap rule honest
				Forward(c.dst, c.x, c.w, c.eps)
				return
			}
			before := slices.Clone(buf)
			dstBefore := slices.Clone(c.dst)
			mustPanic(t, c.name, append([]string{"rmsnorm: Forward: "}, c.want...), func() {
				Forward(c.dst, c.x, c.w, c.eps)
			})
			if firstDiff(buf, before) >= 0 {
				t.Fatalf("%s: the shared buffer changed before the panic", c.name)
			}
			if firstDiff(c.dst, dstBefore) >= 0 {
				t.Fatalf("%s: dst changed before the panic", c.name)
			}
		})
	}
}

// Legal calls that look odd must not panic.
func TestForwardLegalEdges(t *testing.T) {
	Forward(nil, nil, nil, 1e-6)       // nothing at all
	Forward(nil, nil, []float32{1}, 0) // no rows
	x := []float32{1, 2, 3, 4}
	w := []float32{1, 1}
	Forward(x, x, w, 1e-6) // in place
	y := make([]float32, 4)
	Forward(y, x, x[:2], 1e-6) // w inside x: both are only read
	if y[0] != y[0] || x[0] == 1 {
		t.Fatalf("in-place and w-inside-x calls did not run: x=%v y=%v", x, y)
	}
}
