package rmsnorm

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"unsafe"
)

// Norm.ForwardBF16 and Norm.ForwardF16 are ApplyBF16 and ApplyF16 on rows back to back: the same
// bits through whichever path they take (forwardRows for a plain weight with one rounding,
// packedRows or applyRows for the rest), and the same panics under their own name.

// methods16 returns n's ForwardBF16 or ForwardF16 and ApplyBF16 or ApplyF16 for format f, and
// the name the first gives in its panics.
func methods16(n Norm, f format) (forward func(dst, x []uint16), apply func(Rows16), name string) {
	if f == formatF16 {
		return n.ForwardF16, n.ApplyF16, "Norm.ForwardF16"
	}
	return n.ForwardBF16, n.ApplyBF16, "Norm.ForwardBF16"
}

// On every kernel under test (active, as a caller has it), for every weight form with
// RoundNormalized on and off, on one goroutine and split over three, in place and not, streaming
// and not: the method gives ApplyBF16's or ApplyF16's bits on the same rows, and the generic
// kernel's. Row 1 of the batches takes the float64 path.
func TestNormForward16MatchesApply(t *testing.T) {
	splitAll(t) // Workers: 3 splits even these few rows
	defer active.Store(active.Load())
	for _, k := range testKernels() {
		active.Store(uint32(k)) // SetKernel("avx512") would pick kernelAVX512BF16 where it stands for avx512
		for _, f := range formats16 {
			for _, d := range []int{1, 7, 64, 100, 513} {
				for _, rows := range []int{1, 5} {
					r := seedFor(d, rows, 26, int(f))
					x32 := make([]float32, rows*d)
					fill(x32, classNormal, r)
					if rows > 1 {
						x32[d] *= 1e30 // overflows float32's sum of squares (bfloat16 has the range)
						if f == formatF16 {
							x32[d] = float32(math.Inf(1)) // binary16 has not: an Inf sends the row there
						}
					}
					w := make([]float32, d)
					fill(w, classNormal, r)
					x := narrowAll(x32, f)
					for _, base := range []Norm{
						{Weight: w},
						{Weight: w, Dim: d},
						{Weight: w, UnitOffset: true},
						{Dim: d},
					} {
						for _, rn := range []bool{false, true} {
							for _, workers := range []int{0, 3} {
								n := base
								n.Eps, n.RoundNormalized, n.Workers = 1e-6, rn, workers
								ctx := fmt.Sprintf("%v format=%d d=%d rows=%d %+v", k, f, d, rows, n)
								checkNormForward16(t, ctx, k, n, f, x)
							}
						}
					}
				}
			}
		}
	}
}

// checkNormForward16 runs n's 16-bit Forward method on x, and ApplyBF16 or ApplyF16 and the
// generic kernel on copies, in place and not, streaming and not, and compares the outputs.
func checkNormForward16(t *testing.T, ctx string, k kernelID, n Norm, f format, x []uint16) {
	t.Helper()
	forward, apply, _ := methods16(n, f)
	for _, stream := range []bool{false, true} {
		for _, inPlace := range []bool{false, true} {
			mk := func() (dst, src []uint16) {
				src = slices.Clone(x)
				if inPlace {
					return src, src
				}
				return make([]uint16, len(x)), src
			}
			got, gotX := mk()
			app, appX := mk()
			gen, genX := mk()
			withStreaming(stream, func() {
				forward(got, gotX)
				apply(Rows16{Dst: app, X: appX})
				applyRowsWith(kernelGeneric, &n, f, gen, genX, nil, nil, 0, 0)
			})
			where := fmt.Sprintf("%s stream=%v in place=%v", ctx, stream, inPlace)
			// Bit for bit, NaN payloads included: the same kernel computes both.
			for i := range got {
				if got[i] != app[i] {
					t.Fatalf("%s: dst[%d] = %#04x, Apply gives %#04x", where, i, got[i], app[i])
				}
			}
			for i := range got {
				if !same16(got[i], gen[i], f) {
					t.Fatalf("%s: dst[%d] = %#04x, generic gives %#04x", where, i, got[i], gen[i])
				}
			}
			if !inPlace && !slices.Equal(gotX, x) {
				t.Fatalf("%s: x was written", where)
			}
		}
	}
}

// Bad input panics before anything is written, naming the method and its arguments (dst, x), on
// each path: a plain weight (rmsnorm.ForwardBF16's), RoundNormalized and UnitOffset (packedRows),
// no weight and Workers (applyRows). ApplyBF16 or ApplyF16 panics on the same rows too.
func TestNormForward16BadInput(t *testing.T) {
	buf := make([]uint16, 64)
	for i := range buf {
		buf[i] = uint16(0x3c00 + i)
	}
	wbuf := make([]float32, 8)
	w4 := wbuf[:4]                                                // 16 bytes
	overW := unsafe.Slice((*uint16)(unsafe.Pointer(&wbuf[3])), 8) // from the weight's last 4 bytes on
	dst8 := make([]uint16, 8)
	type tc struct {
		name   string
		n      Norm
		dst, x []uint16
		want   []string
	}
	var cases []tc
	for _, n := range []Norm{
		{Weight: w4, Eps: 1e-6},
		{Weight: w4, Dim: 4, Eps: 1e-6, RoundNormalized: true},
		{Weight: w4, Eps: 1e-6, UnitOffset: true},
		{Dim: 4, Eps: 1e-6},
		{Weight: w4, Eps: 1e-6, Workers: 4},
	} {
		d := "len(Weight) = 4"
		if n.Weight == nil {
			d = "Dim = 4"
		}
		nan := n
		nan.Eps = float32(math.NaN())
		cases = append(cases,
			tc{"not a multiple", n, make([]uint16, 10), buf[:10], []string{"len(x) = 10", "not a multiple", d}},
			tc{"short dst", n, make([]uint16, 7), buf[:8], []string{"len(dst) = 7", "len(x) = 8"}},
			tc{"long dst", n, make([]uint16, 9), buf[:8], []string{"len(dst) = 9", "len(x) = 8"}},
			tc{"dst shifted over x", n, buf[2:10], buf[0:8], []string{"dst overlaps x"}},
			tc{"x shifted over dst", n, buf[0:8], buf[2:10], []string{"dst overlaps x"}},
			tc{"NaN Eps", nan, dst8, buf[:8], []string{"Eps = NaN"}},
			tc{"NaN Eps without rows", nan, nil, nil, []string{"Eps = NaN"}})
		if n.Weight != nil {
			cases = append(cases,
				tc{"dst over the weight's bytes", n, overW, buf[:8], []string{"dst overlaps Weight"}},
				tc{"empty Weight", Norm{Weight: w4[:0], Eps: 1e-6, UnitOffset: n.UnitOffset}, dst8, buf[:8], []string{"len(Weight) = 0", "len(x) = 8"}})
		}
	}
	cases = append(cases, tc{"Dim disagrees with Weight", Norm{Weight: w4, Dim: 5, Eps: 1e-6}, dst8, buf[:8], []string{"Dim = 5", "len(Weight) = 4"}})
	for _, c := range cases {
		for _, f := range formats16 {
			forward, apply, fn := methods16(c.n, f)
			ctx := fmt.Sprintf("%s %s %+v", fn, c.name, c.n)
			mustPanicUnwritten(t, ctx, append([]string{"rmsnorm: " + fn + ": "}, c.want...), func() { forward(c.dst, c.x) },
				buf, c.dst, overW)
			mustPanic(t, ctx+" (Apply)", nil, func() { apply(Rows16{Dst: c.dst, X: c.x}) })
		}
	}
}
