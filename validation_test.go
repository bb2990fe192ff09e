package rmsnorm

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// Validation (check.go): a call that breaks a rule of Forward or Norm.Apply panics, before writing
// anything, with a message that names the rule and the values at fault; calls at the edge of the
// rules run.

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

// mustPanicUnwritten is mustPanic for a call that must also leave every element of bufs as it was.
func mustPanicUnwritten[T elem](t *testing.T, name string, want []string, f func(), bufs ...[]T) {
	t.Helper()
	before := make([][]T, len(bufs))
	for i, b := range bufs {
		before[i] = slices.Clone(b)
	}
	mustPanic(t, name, want, f)
	for i, b := range bufs {
		if j := slices.Compare(b, before[i]); j != 0 || len(b) != len(before[i]) {
			t.Fatalf("%s: buffer %d changed before the panic", name, i)
		}
	}
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
		{"not a multiple", make([]float32, 10), buf[:10], w4, 1e-6, []string{"len(x) = 10", "not a multiple", "len(w) = 4"}},
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
			mustPanicUnwritten(t, c.name, append([]string{"rmsnorm: Forward: "}, c.want...), func() {
				Forward(c.dst, c.x, c.w, c.eps)
			}, buf, c.dst)
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

func TestApplyBadInput(t *testing.T) {
	nan := float32(math.NaN())
	buf := make([]float32, 256)
	for i := range buf {
		buf[i] = float32(i%17) - 8
	}
	w4 := []float32{1, 2, 3, 4}
	type tc struct {
		name string
		n    Norm
		r    Rows
		want []string
	}
	cases := []tc{
		{"Dim disagrees with Weight", Norm{Weight: w4, Dim: 5, Eps: 1e-6}, Rows{Dst: make([]float32, 8), X: buf[:8]}, []string{"Dim = 5", "len(Weight) = 4"}},
		{"Dim with an empty Weight", Norm{Weight: w4[:0], Dim: 4, Eps: 1e-6}, Rows{Dst: make([]float32, 8), X: buf[:8]}, []string{"Dim = 4", "Weight is empty and not nil"}},
		{"UnitOffset without Weight", Norm{Dim: 4, Eps: 1e-6, UnitOffset: true}, Rows{Dst: make([]float32, 8), X: buf[:8]}, []string{"UnitOffset", "Weight is nil"}},
		{"negative Dim", Norm{Dim: -4, Eps: 1e-6}, Rows{Dst: make([]float32, 8), X: buf[:8]}, []string{"Dim = -4"}},
		{"no row length", Norm{Eps: 1e-6}, Rows{Dst: make([]float32, 8), X: buf[:8]}, []string{"row length is 0", "len(X) = 8"}},
		{"negative N", Norm{Weight: w4, Eps: 1e-6}, Rows{Dst: make([]float32, 8), X: buf[:8], N: -1}, []string{"N = -1"}},
		{"negative Stride", Norm{Weight: w4, Eps: 1e-6}, Rows{Dst: make([]float32, 8), X: buf[:8], N: 2, Stride: -4}, []string{"Stride = -4"}},
		{"Stride shorter than d", Norm{Weight: w4, Eps: 1e-6}, Rows{Dst: make([]float32, 8), X: buf[:8], N: 2, Stride: 3}, []string{"Stride = 3", "row length 4"}},
		{"Stride without N", Norm{Weight: w4, Eps: 1e-6}, Rows{Dst: make([]float32, 8), X: buf[:8], Stride: 6}, []string{"Stride = 6 needs N"}},
		{"X too short for N rows", Norm{Weight: w4, Eps: 1e-6}, Rows{Dst: make([]float32, 64), X: buf[:13], N: 3, Stride: 5}, []string{"len(X) = 13", "at least 14", "N = 3"}},
		{"Dst too short for N rows", Norm{Weight: w4, Eps: 1e-6}, Rows{Dst: make([]float32, 13), X: buf[:14], N: 3, Stride: 5}, []string{"len(Dst) = 13", "at least 14"}},
		{"not a multiple", Norm{Weight: w4, Eps: 1e-6}, Rows{Dst: make([]float32, 9), X: buf[:9]}, []string{"len(X) = 9", "not a multiple", "len(Weight) = 4"}},
		{"Dst length", Norm{Weight: w4, Eps: 1e-6}, Rows{Dst: make([]float32, 12), X: buf[:8]}, []string{"len(Dst) = 12", "len(X) = 8"}},
		{"Residual length", Norm{Weight: w4, Eps: 1e-6}, Rows{Dst: make([]float32, 8), X: buf[:8], Residual: make([]float32, 4)}, []string{"len(Residual) = 4", "len(X) = 8"}},
		{"Residual too short for N rows", Norm{Weight: w4, Eps: 1e-6}, Rows{Dst: make([]float32, 16), X: buf[:16], N: 2, Stride: 8, Residual: make([]float32, 11)}, []string{"len(Residual) = 11", "at least 12"}},
		{"Inv too short", Norm{Weight: w4, Eps: 1e-6}, Rows{Dst: make([]float32, 12), X: buf[:12], Inv: make([]float32, 2)}, []string{"len(Inv) = 2", "3 rows"}},
		{"NaN Eps", Norm{Weight: w4, Eps: nan}, Rows{Dst: make([]float32, 8), X: buf[:8]}, []string{"Eps = NaN"}},
		{"negative Eps strided", Norm{Weight: w4, Eps: -1}, Rows{Dst: make([]float32, 8), X: buf[:8], N: 2}, []string{"Eps = -1"}},
		{"Dst shifted over X", Norm{Weight: w4, Eps: 1e-6}, Rows{Dst: buf[2:10], X: buf[0:8]}, []string{"Dst overlaps X"}},
		{"strided Dst inside X", Norm{Weight: w4, Eps: 1e-6}, Rows{Dst: buf[4:40], X: buf[0:40], N: 3, Stride: 8}, []string{"Dst overlaps X"}},
		{"Dst overlaps Weight", Norm{Weight: buf[100:104], Eps: 1e-6}, Rows{Dst: buf[98:106], X: buf[0:8]}, []string{"Dst overlaps Weight"}},
		{"Residual is X", Norm{Weight: w4, Eps: 1e-6}, Rows{Dst: make([]float32, 8), X: buf[0:8], Residual: buf[0:8]}, []string{"Residual overlaps"}},
		{"Residual is Dst", Norm{Weight: w4, Eps: 1e-6}, Rows{Dst: buf[16:24], X: buf[0:8], Residual: buf[16:24]}, []string{"Residual overlaps"}},
		{"Residual overlaps Weight", Norm{Weight: buf[40:44], Eps: 1e-6}, Rows{Dst: make([]float32, 8), X: buf[0:8], Residual: buf[38:46]}, []string{"Residual overlaps"}},
		{"Inv overlaps Dst", Norm{Weight: w4, Eps: 1e-6}, Rows{Dst: buf[16:24], X: buf[0:8], Inv: buf[20:22]}, []string{"Inv overlaps"}},
		{"Inv overlaps X", Norm{Weight: w4, Eps: 1e-6}, Rows{Dst: make([]float32, 8), X: buf[0:8], Inv: buf[6:8]}, []string{"Inv overlaps"}},
		{"nil X with rows", Norm{Weight: w4, Eps: 1e-6}, Rows{Dst: make([]float32, 8), N: 2}, []string{"len(X) = 0", "at least 8"}},
	}
	cases = append(cases, tc{"NaN Eps without rows", Norm{Weight: w4, Eps: nan}, Rows{}, []string{"Eps = NaN"}})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The same mistake with UnitOffset and with a residual of its own, which send the
			// rows back to back down other paths (see Apply), must be told the same way.
			norms := []Norm{c.n}
			if c.n.Weight != nil && !c.n.UnitOffset {
				uo := c.n
				uo.UnitOffset = true
				norms = append(norms, uo)
			}
			rs := []Rows{c.r}
			if c.r.Residual == nil {
				withRes := c.r
				withRes.Residual = make([]float32, len(c.r.X))
				rs = append(rs, withRes)
			}
			for _, n := range norms {
				for _, r := range rs {
					name := fmt.Sprintf("%s (UnitOffset %v, Residual %v)", c.name, n.UnitOffset, r.Residual != nil)
					mustPanicUnwritten(t, name, append([]string{"rmsnorm: Norm.Apply: "}, c.want...), func() { n.Apply(r) },
						buf, r.Dst, r.Residual)
				}
			}
		})
	}
}

// Norm.Forward names itself and its arguments whether it takes rmsnorm.Forward's path (a plain
// weight, one goroutine) or Apply's (the other Norms), and writes nothing before it panics.
func TestNormForwardBadInput(t *testing.T) {
	buf := make([]float32, 64)
	for i := range buf {
		buf[i] = float32(i%13) - 6
	}
	w4 := []float32{1, 2, 3, 4}
	type tc struct {
		name   string
		n      Norm
		dst, x []float32
		want   []string
	}
	cases := []tc{
		{"Dim disagrees with Weight", Norm{Weight: w4, Dim: 5, Eps: 1e-6}, make([]float32, 8), buf[:8], []string{"Dim = 5", "len(Weight) = 4"}},
		{"Dim with an empty Weight", Norm{Weight: w4[:0], Dim: 4, Eps: 1e-6}, make([]float32, 8), buf[:8], []string{"Dim = 4", "Weight is empty and not nil"}},
		{"empty Weight", Norm{Weight: w4[:0], Eps: 1e-6}, make([]float32, 8), buf[:8], []string{"len(Weight) = 0", "len(x) = 8"}},
		{"empty Weight, UnitOffset", Norm{Weight: w4[:0], Eps: 1e-6, UnitOffset: true}, make([]float32, 8), buf[:8], []string{"len(Weight) = 0", "len(x) = 8"}},
		{"NaN Eps", Norm{Weight: w4, Eps: float32(math.NaN())}, make([]float32, 8), buf[:8], []string{"Eps = NaN"}},
		{"dst overlaps Weight", Norm{Weight: buf[40:44], Eps: 1e-6}, buf[38:46], buf[:8], []string{"dst overlaps Weight"}},
	}
	// The same three mistakes with a Norm of each path: the first is rmsnorm.Forward's.
	for _, n := range []Norm{
		{Weight: w4, Eps: 1e-6},
		{Weight: w4, Eps: 1e-6, UnitOffset: true},
		{Dim: 4, Eps: 1e-6},
		{Weight: w4, Eps: 1e-6, Workers: 4},
	} {
		d := "len(Weight) = 4"
		if n.Weight == nil {
			d = "Dim = 4"
		}
		cases = append(cases,
			tc{fmt.Sprintf("not a multiple %+v", n), n, make([]float32, 10), buf[:10], []string{"len(x) = 10", "not a multiple", d}},
			tc{fmt.Sprintf("short dst %+v", n), n, make([]float32, 7), buf[:8], []string{"len(dst) = 7", "len(x) = 8"}},
			tc{fmt.Sprintf("dst shifted over x %+v", n), n, buf[4:12], buf[0:8], []string{"dst overlaps x"}})
	}
	for _, c := range cases {
		mustPanicUnwritten(t, c.name, append([]string{"rmsnorm: Norm.Forward: "}, c.want...), func() { c.n.Forward(c.dst, c.x) }, buf, c.dst)
	}
}

// Calls at the edge of the rules that must work.
func TestApplyLegalEdges(t *testing.T) {
	var n Norm
	n.Apply(Rows{}) // nothing
	w := []float32{1, 2}
	buf := make([]float32, 20)
	for i := range buf {
		buf[i] = float32(i)
	}
	m := Norm{Weight: w, Dim: 2, Eps: 1e-6}
	m.Apply(Rows{Dst: buf, X: buf, N: 3, Stride: 7}) // in place, strided, slices longer than needed
	if buf[2] != 2 || buf[0] != 0 || buf[1] == 1 {
		t.Fatalf("strided in place: %v", buf[:9])
	}
	inv := make([]float32, 5)
	m.Apply(Rows{Dst: make([]float32, 4), X: []float32{3, 4, 3, 4}, Inv: inv}) // Inv longer than N
	if inv[0] == 0 || inv[1] != inv[0] || inv[2] != 0 {
		t.Fatalf("Inv = %v, want two equal values then zeros", inv)
	}
}

// The 16-bit entry points apply the same rules, name themselves in the message, and write nothing
// before they panic.
func TestBadInput16(t *testing.T) {
	buf := make([]uint16, 64)
	for i := range buf {
		buf[i] = uint16(0x3c00 + i)
	}
	w4 := []float32{1, 2, 3, 4}
	n := Norm{Weight: w4, Eps: 1e-6}
	type tc struct {
		name string
		want []string
		f    func()
	}
	cases := []tc{
		{"ForwardBF16 not a multiple", []string{"rmsnorm: ForwardBF16: ", "len(x) = 10", "not a multiple", "len(w) = 4"},
			func() { ForwardBF16(make([]uint16, 10), buf[:10], w4, 1e-6) }},
		{"ForwardF16 short dst", []string{"rmsnorm: ForwardF16: ", "len(dst) = 7", "len(x) = 8"},
			func() { ForwardF16(make([]uint16, 7), buf[:8], w4, 1e-6) }},
		{"ForwardBF16 NaN eps", []string{"rmsnorm: ForwardBF16: ", "eps = NaN"},
			func() { ForwardBF16(make([]uint16, 8), buf[:8], w4, float32(math.NaN())) }},
		{"ForwardF16 dst shifted over x", []string{"rmsnorm: ForwardF16: ", "dst overlaps x"},
			func() { ForwardF16(buf[2:10], buf[0:8], w4, 1e-6) }},
		{"ApplyBF16 Residual is X", []string{"rmsnorm: Norm.ApplyBF16: ", "Residual overlaps X"},
			func() { n.ApplyBF16(Rows16{Dst: make([]uint16, 8), X: buf[0:8], Residual: buf[0:8]}) }},
		{"ApplyF16 X too short", []string{"rmsnorm: Norm.ApplyF16: ", "len(X) = 13", "at least 14"},
			func() { n.ApplyF16(Rows16{Dst: make([]uint16, 64), X: buf[:13], N: 3, Stride: 5}) }},
		{"ApplyBF16 Inv too short", []string{"rmsnorm: Norm.ApplyBF16: ", "len(Inv) = 1", "2 rows"},
			func() { n.ApplyBF16(Rows16{Dst: make([]uint16, 8), X: buf[:8], Inv: make([]float32, 1)}) }},
	}
	// The rules that the short path of rows back to back checks itself (see Apply), with a plain
	// weight, UnitOffset, RoundNormalized and a residual: Eps, the weight's bytes under Dst, and
	// Eps when there are no rows at all.
	wbuf := make([]float32, 8)
	w := wbuf[:4]                                                 // 16 bytes
	overW := unsafe.Slice((*uint16)(unsafe.Pointer(&wbuf[3])), 8) // from the weight's last 4 bytes on
	nan := float32(math.NaN())
	dsts := [][]uint16{buf, overW}
	for _, m := range []Norm{{Weight: w}, {Weight: w, UnitOffset: true}, {Weight: w, RoundNormalized: true}} {
		for _, withRes := range []bool{false, true} {
			for _, f := range []format{formatBF16, formatF16} {
				fn := map[format]string{formatBF16: "Norm.ApplyBF16", formatF16: "Norm.ApplyF16"}[f]
				apply := func(n Norm, r Rows16) {
					if withRes {
						r.Residual = make([]uint16, len(r.X))
					}
					map[format]func(Norm, Rows16){formatBF16: Norm.ApplyBF16, formatF16: Norm.ApplyF16}[f](n, r)
				}
				ctx := fmt.Sprintf("%s %+v residual=%v", fn, m, withRes)
				bad := m
				bad.Eps = nan
				m.Eps = 1e-6
				dst := make([]uint16, 8)
				dsts = append(dsts, dst)
				cases = append(cases,
					tc{ctx + " NaN Eps", []string{"rmsnorm: " + fn + ": ", "Eps = NaN"}, func() { apply(bad, Rows16{Dst: dst, X: buf[:8]}) }},
					tc{ctx + " NaN Eps without rows", []string{"rmsnorm: " + fn + ": ", "Eps = NaN"}, func() { apply(bad, Rows16{}) }},
					tc{ctx + " Dst over the weight's bytes", []string{"rmsnorm: " + fn + ": ", "Dst overlaps Weight"}, func() { apply(m, Rows16{Dst: overW, X: buf[:8]}) }})
			}
		}
	}
	for _, c := range cases {
		mustPanicUnwritten(t, c.name, c.want, c.f, dsts...)
	}
}

// A negative Workers panics in every entry point that takes a Norm, before anything is written:
// with each weight form, on the short paths (a plain weight, rows back to back, a residual) as on
// the general one, and with no rows at all, as a negative Dim does.
func TestNegativeWorkers(t *testing.T) {
	buf := make([]float32, 64)
	for i := range buf {
		buf[i] = float32(i%11) - 5
	}
	buf16 := make([]uint16, 16)
	for i := range buf16 {
		buf16[i] = uint16(0x3c00 + i)
	}
	w4 := []float32{1, 2, 3, 4}
	for _, workers := range []int{-1, -3, math.MinInt} {
		for _, n := range []Norm{
			{Weight: w4, Eps: 1e-6},
			{Weight: w4, Eps: 1e-6, UnitOffset: true},
			{Weight: w4, Eps: 1e-6, RoundNormalized: true},
			{Dim: 4, Eps: 1e-6},
		} {
			n.Workers = workers
			ctx := fmt.Sprintf("%+v", n)
			want := func(fn string) []string {
				return []string{"rmsnorm: " + fn + ": ", fmt.Sprintf("Workers = %d is negative", workers)}
			}
			dst, res, inv := make([]float32, 8), make([]float32, 8), make([]float32, 2)
			dst16, res16 := make([]uint16, 8), make([]uint16, 8)
			dx, dw := sentinels(8), sentinels(4)
			var g Grad
			if n.Weight != nil {
				g.DW = dw
			}
			cases := []struct {
				name string
				fn   string
				f    func()
			}{
				{"Forward", "Norm.Forward", func() { n.Forward(dst, buf[:8]) }},
				{"Forward in place", "Norm.Forward", func() { n.Forward(buf[:8], buf[:8]) }},
				{"Apply", "Norm.Apply", func() { n.Apply(Rows{Dst: dst, X: buf[:8]}) }},
				{"Apply Residual", "Norm.Apply", func() { n.Apply(Rows{Dst: dst, X: buf[:8], Residual: res}) }},
				{"Apply strided Inv", "Norm.Apply", func() { n.Apply(Rows{Dst: buf[16:32], X: buf[:16], N: 2, Stride: 8, Inv: inv}) }},
				{"Apply no rows", "Norm.Apply", func() { n.Apply(Rows{}) }},
				{"ApplyBF16", "Norm.ApplyBF16", func() { n.ApplyBF16(Rows16{Dst: dst16, X: buf16[:8]}) }},
				{"ApplyBF16 Residual", "Norm.ApplyBF16", func() { n.ApplyBF16(Rows16{Dst: dst16, X: buf16[:8], Residual: res16}) }},
				{"ApplyF16", "Norm.ApplyF16", func() { n.ApplyF16(Rows16{Dst: dst16, X: buf16[:8]}) }},
				{"ApplyF16 strided", "Norm.ApplyF16", func() { n.ApplyF16(Rows16{Dst: dst16, X: buf16[:8], N: 1, Stride: 6}) }},
				{"ForwardBF16", "Norm.ForwardBF16", func() { n.ForwardBF16(dst16, buf16[:8]) }},
				{"ForwardBF16 in place", "Norm.ForwardBF16", func() { n.ForwardBF16(buf16[:8], buf16[:8]) }},
				{"ForwardF16", "Norm.ForwardF16", func() { n.ForwardF16(dst16, buf16[:8]) }},
				{"ForwardF16 no rows", "Norm.ForwardF16", func() { n.ForwardF16(nil, nil) }},
				{"Backward", "Norm.Backward", func() {
					g.DX, g.X, g.DY = dx, buf[:8], buf[8:16]
					n.Backward(g)
				}},
				{"Backward no rows", "Norm.Backward", func() { n.Backward(Grad{}) }},
			}
			for _, c := range cases {
				mustPanicUnwritten(t, ctx+" "+c.name, want(c.fn), c.f, buf, dst, res, inv, dx, dw)
				mustPanicUnwritten(t, ctx+" "+c.name, want(c.fn), c.f, buf16, dst16, res16)
			}
		}
	}
}
