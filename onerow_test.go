package rmsnorm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/gosimd/rmsnorm/internal/streamrule"
)

// oneRowDims are the row lengths of TestOneRowMatchesGeneric: every multiple of 64 up to 1024,
// powers of two and not (the one-row path of the amd64 functions multiplies by 1/d for the first
// and divides by d for the others), and the model widths above it; and lengths that are not
// multiples of 64, which that path leaves to the general one.
var oneRowDims = []int{
	64, 128, 192, 256, 320, 384, 448, 512, 576, 640, 704, 768, 832, 896, 960, 1024,
	1536, 2048, 2560, 3072, 3584, 4096, 5120, 8192,
	1, 63, 65, 100, 1000,
}

// TestOneRowMatchesGeneric runs single rows, the calls the float32 functions of amd64 take on
// their one-row path (asm/amd64/onerow.go) when nothing else is asked, and Forward's single row,
// which goes to the row function of those kernels (TestCallRow calls it straight): each kernel
// against generic, bit for bit, on rows of every value class (those whose t leaves [2^-100,
// MaxFloat32] return to Go for the float64 path), through the job without and with Inv, and as
// row r of a job of three rows, from = r, to = r+1, as Workers and the float64 path's restart call
// it, with strides of x and dst of their own; and with flagRows, which runs every row of a call
// through that path (streamrule.Rows), alone and with flagNT and flagPF (the streamed loop), over
// [r, 3). The matrix tests cover the other forms; TestRowsOneByOne, Forward both ways.
func TestOneRowMatchesGeneric(t *testing.T) {
	const rows = 3
	// Strides of x and of dst, in elements past d: the rows back to back, then apart, each
	// differently, so that a row offset taken from the wrong one shows.
	strides := [][2]int{{0, 0}, {16, 0}, {0, 72}, {64, 8}}
	for _, k := range testKernels() {
		if k == kernelGeneric {
			continue
		}
		for _, d := range oneRowDims {
			for ci, c := range valueClasses {
				for seed := range 6 {
					r := seedFor(d, ci, seed, 61)
					st := strides[seed%len(strides)]
					stride, dstStride := d+st[0], d+st[1]
					x := make([]float32, rows*stride)
					fill(x, c, r)
					w := make([]float32, d)
					fill(w, classNormal, r)
					eps := []float32{0, 1e-6, 1e-5}[seed%3]
					name := fmt.Sprintf("%s/d=%d/%s/seed=%d", k.name(), d, c.name, seed)

					// One row through Forward's path (the row function, on the kernels that have one).
					got, want := make([]float32, d), make([]float32, d)
					forwardWith(k, got, x[:d], w, eps)
					forwardWith(kernelGeneric, want, x[:d], w, eps)
					if i := firstDiff(got, want); i >= 0 {
						t.Fatalf("%s: Forward: y[%d] = %v (%#08x), generic %v (%#08x)", name, i, got[i], bitsOf(got[i]), want[i], bitsOf(want[i]))
					}

					// Row 1 of three alone through the job, without Inv: the job's one-row path
					// for a single row that Forward would give the row function.
					g := runRowsInv(t, k, x, w, d, stride, dstStride, rows, 1, 2, 0, eps, false)
					wnt := runRowsInv(t, kernelGeneric, x, w, d, stride, dstStride, rows, 1, 2, 0, eps, false)
					if i := firstDiff(g, wnt); i >= 0 {
						t.Fatalf("%s: row 1 of %d through the job without Inv, strides %d and %d: y[%d] = %v (%#08x), generic %v (%#08x)",
							name, rows, stride, dstStride, i, g[i], bitsOf(g[i]), wnt[i], bitsOf(wnt[i]))
					}

					// Row r of three, alone, with Inv; and with flagRows (the rows one at a time of
					// streamrule.Rows), in cache and streamed (with flagNT and flagPF: dst starts on
					// 64 bytes, and its rows stay aligned to the vector where dstStride keeps them),
					// the rows [from, 3), the empty range among them.
					for _, fl := range []uint32{0, flagRows, flagRows | flagNT | flagPF} {
						for from := range rows + 1 {
							to := from + 1
							if fl != 0 {
								to = rows
							} else if from == rows {
								continue
							}
							g := runRows(t, k, x, w, d, stride, dstStride, rows, from, to, fl, eps)
							wnt := runRows(t, kernelGeneric, x, w, d, stride, dstStride, rows, from, to, fl, eps)
							if i := firstDiff(g, wnt); i >= 0 {
								t.Fatalf("%s: rows [%d, %d) of %d, flags %#x, strides %d and %d: element %d = %v (%#08x), generic %v (%#08x) (rows of d, then inv)",
									name, from, to, rows, fl, stride, dstStride, i, g[i], bitsOf(g[i]), wnt[i], bitsOf(wnt[i]))
							}
						}
					}
				}
			}
		}
	}
}

// TestCallRowDeclines: callRow returns rowNone and writes nothing for a row of length 0, which
// its callers never pass but the functions test anyway, with and without a residual, and for a
// kernel id past its table.
func TestCallRowDeclines(t *testing.T) {
	x, w, dst, res := ones(64), ones(64), make([]float32, 64), ones(64)
	for i := range dst {
		dst[i] = float32(math.NaN())
	}
	for _, k := range append(testKernels(), kernelID(len(kernelNames)), kernelID(1<<31)) {
		for _, r := range []unsafe.Pointer{nil, ptr(res)} {
			if got := callRow(ptr(dst), ptr(x), r, ptr(w), 0, 1e-6, k); got != rowNone {
				t.Errorf("kernel %d, residual %v: callRow returned %d for a row of length 0", k, r != nil, got)
			}
		}
	}
	for _, k := range []kernelID{kernelID(len(kernelNames)), kernelID(1 << 31)} {
		for _, r := range []unsafe.Pointer{nil, ptr(res)} {
			if got := callRow(ptr(dst), ptr(x), r, ptr(w), 64, 1e-6, k); got != rowNone {
				t.Errorf("kernel id %d, past the table, residual %v: callRow returned %d", k, r != nil, got)
			}
		}
	}
	for i, y := range dst {
		if y == y {
			t.Fatalf("callRow wrote dst[%d] on a row it declined", i)
		}
	}
	for i, h := range res {
		if h != 1 {
			t.Fatalf("callRow wrote res[%d] on a row it declined", i)
		}
	}
}

// TestCallRow calls each kernel's row function (callRow, which Forward and Apply take for one
// float32 row in cache, with or without a residual) straight, on rows inside buffers of NaN: with
// a row function, a row of a multiple of 64 whose t is in range comes out with generic's bits (y,
// and h in res), in place too, and nothing else is written. A row it leaves returns rowNone with
// nothing written at all (t out of range without a residual, a length not a multiple of 64, a
// kernel without a row function), or, t out of range with a residual, rowHeld with h in res and
// nothing else written.
func TestCallRow(t *testing.T) {
	const pad = 16
	padded := func(d int) (row, buf []float32) { return paddedRow(d, pad, float32(math.NaN())) }
	for _, k := range testKernels() {
		for _, d := range oneRowDims {
			for ci, c := range valueClasses {
				for seed := range 3 {
					r := seedFor(d, ci, seed, 67)
					x := make([]float32, d)
					fill(x, c, r)
					w := make([]float32, d)
					fill(w, classNormal, r)
					resIn := make([]float32, d)
					fill(resIn, classNormal, r)
					eps := []float32{0, 1e-6, 1e-5}[seed]
					for _, withRes := range []bool{false, true} {
						name := fmt.Sprintf("%s/d=%d/%s/seed=%d/residual=%v", k.name(), d, c.name, seed, withRes)
						h := x // what the row normalizes: x, or h = x + res as the generic kernel adds it
						if withRes {
							h = make([]float32, d)
							for i := range h {
								h[i] = x[i] + resIn[i]
							}
						}
						want := make([]float32, d)
						forwardWith(kernelGeneric, want, h, w, eps)
						_, inRange := invRMS(sumSquares(h), d, eps) // false: the float64 path's row
						wantRet := rowNone
						if hasRowFunc(k) && d%64 == 0 {
							switch {
							case inRange:
								wantRet = rowDone
							case withRes:
								wantRet = rowHeld
							}
						}
						for _, inPlace := range []bool{false, true} {
							dst, buf := padded(d)
							res, rbuf := padded(d)
							rp := unsafe.Pointer(nil)
							if withRes {
								copy(res, resIn)
								rp = ptr(res)
							}
							src := x
							if inPlace {
								copy(dst, x)
								src = dst
							}
							before, rbefore := slices.Clone(buf), slices.Clone(rbuf)
							if got := callRow(ptr(dst), ptr(src), rp, ptr(w), d, eps, k); got != wantRet {
								t.Fatalf("%s, in place %v: callRow returned %d, want %d", name, inPlace, got, wantRet)
							}
							switch {
							case wantRet == rowNone:
								if i := firstDiff(buf, before); i >= 0 {
									t.Fatalf("%s, in place %v: callRow returned rowNone and changed element %d of dst's buffer", name, inPlace, i-pad)
								}
								if i := firstDiff(rbuf, rbefore); i >= 0 {
									t.Fatalf("%s, in place %v: callRow returned rowNone and changed element %d of res's buffer", name, inPlace, i-pad)
								}
								continue
							case wantRet == rowHeld:
								if i := firstDiff(buf, before); i >= 0 {
									t.Fatalf("%s, in place %v: callRow returned rowHeld and changed element %d of dst's buffer", name, inPlace, i-pad)
								}
							default:
								if i := firstDiff(dst, want); i >= 0 {
									t.Fatalf("%s, in place %v: y[%d] = %v (%#08x), generic %v (%#08x)", name, inPlace, i, dst[i], bitsOf(dst[i]), want[i], bitsOf(want[i]))
								}
							}
							if withRes {
								if i := firstDiff(res, h); i >= 0 {
									t.Fatalf("%s, in place %v: h[%d] = %v (%#08x) in res, want x + res = %v (%#08x)", name, inPlace, i, res[i], bitsOf(res[i]), h[i], bitsOf(h[i]))
								}
							} else if i := firstDiff(rbuf, rbefore); i >= 0 {
								t.Fatalf("%s, in place %v: callRow without a residual changed element %d of res's buffer", name, inPlace, i-pad)
							}
							for i := range pad {
								if buf[i] == buf[i] || buf[pad+d+i] == buf[pad+d+i] || rbuf[i] == rbuf[i] || rbuf[pad+d+i] == rbuf[pad+d+i] {
									t.Fatalf("%s, in place %v: callRow wrote outside the rows", name, inPlace)
								}
							}
						}
					}
				}
			}
		}
	}
}

// runRows runs kernel k on rows [from, to) of the rows x (rows rows of d, stride apart), as a job
// of all of them with dst rows dstStride apart and flags fl, whose call covers [from, to), and
// returns those rows of dst followed by their inv. dst starts on a 64-byte boundary (the
// alignment the streamed loop of the one-row path needs for AVX-512). Every other element of dst
// and inv holds NaN, and the test fails if the call changed one.
func runRows(t *testing.T, k kernelID, x, w []float32, d, stride, dstStride, rows, from, to int, fl uint32, eps float32) []float32 {
	return runRowsInv(t, k, x, w, d, stride, dstStride, rows, from, to, fl, eps, true)
}

// runRowsInv is runRows with Inv (withInv) or without it, in which case only the rows of dst
// come back.
func runRowsInv(t *testing.T, k kernelID, x, w []float32, d, stride, dstStride, rows, from, to int, fl uint32, eps float32, withInv bool) []float32 {
	t.Helper()
	dst, inv := make([]float32, rows*dstStride+16), make([]float32, rows)
	for uintptr(unsafe.Pointer(&dst[0]))%64 != 0 {
		dst = dst[1:]
	}
	dst = dst[:rows*dstStride]
	for i := range dst {
		dst[i] = float32(math.NaN())
	}
	for i := range inv {
		inv[i] = float32(math.NaN())
	}
	v := forwardVariant[formatF32][weighted][0]
	invp := ptr(inv)
	if !withInv {
		invp = nil
	}
	var j job
	j.init(ptr(dst), ptr(x), ptr(w), d, stride, dstStride, eps, fl, uint32(k)*numEntries+uint32(v), weighted, formatF32, v, nil, invp, nil, nil, rows)
	if r := callKernel(&j, from, to); r < to {
		j.finish(r, to)
	}
	var out []float32
	for i, y := range dst {
		r, e := i/dstStride, i%dstStride
		if r >= from && r < to && e < d {
			out = append(out, y)
		} else if y == y {
			t.Fatalf("%s: the call on rows [%d, %d) of %d (strides %d and %d) wrote dst[%d]", k.name(), from, to, rows, stride, dstStride, i)
		}
	}
	for r := range rows {
		if r >= from && r < to && withInv {
			out = append(out, inv[r])
		} else if inv[r] == inv[r] {
			t.Fatalf("%s: the call on rows [%d, %d) wrote inv[%d]", k.name(), from, to, r)
		}
	}
	return out
}

// TestRangeEnds puts t = ss/d + eps exactly on the ends of the range the float32 path takes,
// 2^-100 and MaxFloat32 (both in it), on rows of equal elements whose ss is exact: every kernel
// must give generic's bits there, which the float64 path (taken for t outside the range) does not
// give for these rows, as the test checks first. A kernel whose range check were off by the end
// point would fail: one row of 64 (on amd64 the row function through Forward, the one-row path
// of the job through Apply with Inv), one of 100 (the general path), and five rows of each (a
// group of four and one, on the kernels that group short rows).
func TestRangeEnds(t *testing.T) {
	for _, d := range []int{64, 100} {
		for _, rows := range []int{1, 5} {
			testRangeEnds(t, d, rows)
		}
	}
}

func testRangeEnds(t *testing.T, d, rows int) {
	t.Helper()
	lo, hi := float32(tLow), float32(math.MaxFloat32)
	for _, c := range []struct {
		name string
		x    float32 // every element
		eps  float32
		t    float32 // ss/d + eps rounded to float32: one end of the range
	}{
		// x^2 = 0.5625*2^-124; ss/d + eps = 2^-100 - 0.4375*2^-124, which rounds up to 2^-100.
		{"t=2^-100", 0.75 * 0x1p-62, math.Nextafter32(lo, 0), lo},
		// x^2 = 2^102, far below half an ulp of MaxFloat32: t rounds to MaxFloat32.
		{"t=MaxFloat32", 0x1p51, hi, hi},
	} {
		x := make([]float32, rows*d)
		for i := range x {
			x[i] = c.x
		}
		w := make([]float32, d)
		fill(w, classNormal, seedFor(d, 62))
		// The partials and the tree add squares that are equal, and as many as 2 of them for
		// d = 100: every sum is exact, and so is ss/d.
		ss := c.x * c.x * float32(d)
		if tt := ss/float32(d) + c.eps; tt != c.t {
			t.Fatalf("%dx%d, %s: t = %v, want %v: the rows do not sit on the end", rows, d, c.name, tt, c.t)
		}
		want := make([]float32, rows*d)
		forwardWith(kernelGeneric, want, x, w, c.eps)
		// The float64 path's result: inv from the exact t, y rounded once.
		inv64 := 1 / math.Sqrt(float64(c.x)*float64(c.x)+float64(c.eps))
		differs := false
		for i := range x {
			if float32(float64(c.x)*inv64*float64(w[i%d])) != want[i] {
				differs = true
			}
		}
		if !differs {
			t.Fatalf("%dx%d, %s: the float64 path gives generic's bits here: the test cannot tell the paths apart", rows, d, c.name)
		}
		for _, k := range testKernels() {
			got := make([]float32, rows*d)
			forwardWith(k, got, x, w, c.eps)
			if i := firstDiff(got, want); i >= 0 {
				t.Errorf("%dx%d, %s: %s: y[%d] = %v (%#08x), generic %v (%#08x)", rows, d, c.name, k.name(), i, got[i], bitsOf(got[i]), want[i], bitsOf(want[i]))
			}
			// The same rows through a job with Inv: Apply's path, which leaves one row of 64 to
			// the job's one-row path (Forward gives it to the row function on amd64).
			for i := range got {
				got[i] = 0
			}
			applyWith(k, &Norm{Weight: w, Eps: c.eps}, &Rows{Dst: got, X: x, Inv: make([]float32, rows)})
			if i := firstDiff(got, want); i >= 0 {
				t.Errorf("%dx%d, %s: %s, with Inv: y[%d] = %v (%#08x), generic %v (%#08x)", rows, d, c.name, k.name(), i, got[i], bitsOf(got[i]), want[i], bitsOf(want[i]))
			}
		}
	}
}

// TestRowsOneByOne runs Forward on batches of rows with a row rule that sends every call it can one
// row at a time (flagRows) and one that sends none (the groups of four, the general path), every
// kernel against generic, in guarded buffers: rows of 64 to 512 and of 576 and 1024 (the rows
// flagRows takes, up to a rule's largest Short), and of 100 and 600 (those it leaves to their
// usual path), from 1 to 9 rows, every value class; and, with normal rows, in place, and with the
// middle row scaled so that its squares overflow (the float64 path amid rows the kernel takes,
// and its restart).
func TestRowsOneByOne(t *testing.T) {
	defer func(r [2]streamrule.RowRule) { rowRules = r }(rowRules)
	for _, on := range []bool{false, true} {
		rowRules = bothKernels(streamrule.RowRule{})
		if on {
			rowRules = bothKernels(streamrule.RowRule{From: 2, Short: streamrule.LongAbove, Long: true})
		}
		for _, k := range testKernels() {
			for _, d := range []int{64, 128, 100, 192, 256, 384, 448, 512, 576, 600, 1024} {
				for rows := 1; rows <= 9; rows++ {
					for ci, c := range valueClasses {
						for _, how := range []string{"out of place", "in place", "a row of the float64 path"} {
							if how != "out of place" && c.name != classNormal.name {
								continue
							}
							checkRowsCall(t, fmt.Sprintf("one at a time %v", on), k, rows, d, c, how, 0,
								seedFor(d, rows, ci, 63), func(f func()) { f() })
						}
					}
				}
			}
		}
	}
}

// TestRowsStreamed runs streamed calls of Forward (withStreaming) with RowRule.Stream off and on,
// every kernel against generic: with it (and Short at its largest), out-of-place rows of 64 to
// 512 go one at a time through the one-row path's streaming loop (flagRows, flagNT, flagPF), and dst rows not
// aligned to the vector (off: elements past a 64-byte boundary, 8 of them aligned for AVX2 but
// not AVX-512) go back to the general path. Lengths the rule leaves to the groups, in-place
// calls and a row of the float64 path, which the loop returns to Go for and resumes after, too.
// The loop gives the groups' bits, so this test alone cannot tell that it ran: TestStreamFlags
// holds the flags that select it, TestAsmRows the functions that test them.
func TestRowsStreamed(t *testing.T) {
	defer func(r [2]streamrule.RowRule) { rowRules = r }(rowRules)
	for _, on := range []bool{false, true} {
		rowRules = bothKernels(streamrule.RowRule{Stream: on, Short: streamrule.LongAbove})
		for _, k := range testKernels() {
			for _, d := range []int{64, 128, 100, 192, 384, 512, 600} {
				for _, rows := range []int{1, 2, 3, 5, 9, 40} {
					for _, how := range []string{"out of place", "in place", "a row of the float64 path"} {
						for _, off := range []int{0, 1, 4, 8} {
							if how == "in place" && off != 0 {
								continue
							}
							checkRowsCall(t, fmt.Sprintf("streamed one at a time %v", on), k, rows, d, classNormal, how, off,
								seedFor(d, rows, off, 64), func(f func()) { withStreaming(true, f) })
						}
					}
				}
			}
		}
	}
}

// checkRowsCall runs Forward with kernel k on rows of d of class c against generic, bit for bit,
// with guards around x and dst: out of place, in place, or with a row of the float64 path in the
// middle (how), dst off elements past a 64-byte boundary, the kernel's call inside around (which
// may set the memory mode). what names the case in a failure.
func checkRowsCall(t *testing.T, what string, k kernelID, rows, d int, c valueClass, how string, off int, r *rand.Rand, around func(func())) {
	t.Helper()
	xg := newGuarded[float32]("x", rows*d, 0)
	fill(xg.s, c, r)
	if how == "a row of the float64 path" {
		for i := range xg.s[rows/2*d : rows/2*d+d] {
			xg.s[rows/2*d+i] *= 1e20 // finite, but the squares are not
		}
	}
	w := make([]float32, d)
	fill(w, classNormal, r)
	want := make([]float32, rows*d)
	forwardWith(kernelGeneric, want, xg.s, w, 1e-6)
	got := newGuarded[float32]("dst", rows*d, off)
	around(func() {
		if how == "in place" {
			copy(got.s, xg.s)
			forwardWith(k, got.s, got.s, w, 1e-6)
		} else {
			forwardWith(k, got.s, xg.s, w, 1e-6)
		}
	})
	got.check(t, "dst")
	xg.check(t, "x")
	if i := firstDiff(got.s, want); i >= 0 {
		t.Fatalf("%s, %s, %dx%d, %s, %s, dst %d elements past 64 bytes: y[%d] = %v (%#08x), generic %v (%#08x)",
			what, k.name(), rows, d, c.name, how, off, i, got.s[i], bitsOf(got.s[i]), want[i], bitsOf(want[i]))
	}
}

// TestStreamFlags holds the flags forwardRows gives a streamed call (setStreamFlags) to the rule
// of streamrule.Rows: flagRows with flagNT and flagPF, exactly, for float32 rows of 64 or 128 out
// of place on Zen 3 and Zen 5 (with either kernel), and of up to 384 on Zen 5 with the avx512
// kernel; the memory flags alone for every other call, and on the other CPUs.
func TestStreamFlags(t *testing.T) {
	saved, savedPipe, savedRules := streamBytes, pipeRows, rowRules
	defer func() { streamBytes, pipeRows, rowRules = saved, savedPipe, savedRules }()
	streamBytes, pipeRows = 0, false
	const rows, streamed, inPlace = 64, flagNT | flagPF, flagPF
	for _, c := range []struct {
		d       int
		f       format
		inPlace bool
		// the flags on Zen 3 and on Zen 5 with the avx2 kernel, and on Zen 5 with the avx512
		// one; elsewhere zen3's without flagRows
		zen3, zen5wide uint32
	}{
		{64, formatF32, false, flagRows | streamed, flagRows | streamed},
		{128, formatF32, false, flagRows | streamed, flagRows | streamed},
		{128, formatF32, true, inPlace, inPlace},
		{100, formatF32, false, streamed, streamed},
		{192, formatF32, false, streamed, flagRows | streamed},
		{256, formatF32, false, streamed, flagRows | streamed},
		{384, formatF32, false, streamed, flagRows | streamed},
		{384, formatF32, true, inPlace, inPlace},
		{448, formatF32, false, streamed, streamed},
		{4096, formatF32, false, streamed, streamed},
		{128, formatBF16, false, streamed, streamed},
		{256, formatF16, false, streamed, streamed},
	} {
		x, dst := make([]float32, rows*c.d), make([]float32, rows*c.d)
		for _, cpu := range ruleCPUs {
			rowRules = rulesOf(cpu.cpu)
			for _, k := range []kernelID{kernelAVX2, kernelAVX512, kernelAVX512BF16} {
				want := c.zen3
				switch {
				case cpu.name == "Zen 5" && k != kernelAVX2:
					want = c.zen5wide
				case cpu.name != "Zen 3" && cpu.name != "Zen 5":
					want &^= flagRows
				}
				j := job{dst: ptr(dst), x: ptr(x), d: c.d, stride: c.d, dstStride: c.d, rows: rows, format: c.f}
				if c.inPlace {
					j.dst = j.x
				}
				j.setStreamFlags(k)
				if j.flags != want {
					t.Errorf("%s, %s: %dx%d, format %d, in place %v: flags %#x, want %#x", cpu.name, k, rows, c.d, c.f, c.inPlace, j.flags, want)
				}
			}
		}
	}
}

// ruleCPUs are CPUs of each row rule of streamrule.Rows, and one of none (Zen 4).
var ruleCPUs = []struct {
	name string
	cpu  streamrule.CPU
}{
	{"Emerald Rapids", streamrule.CPU{Intel: true, Family: 6, Model: 0xcf, L2: 2 << 20, L3: 260 << 20}},
	{"Zen 3", streamrule.CPU{AMD: true, Family: 0x19, L2: 512 << 10, L3: 32 << 20}},
	{"Zen 4", streamrule.CPU{AMD: true, Family: 0x19, L2: 1 << 20, L3: 32 << 20}},
	{"Zen 5", streamrule.CPU{AMD: true, Family: 0x1a, L2: 1 << 20, L3: 32 << 20}},
}

// rulesOf is rowRules as they are on cpu.
func rulesOf(cpu streamrule.CPU) [2]streamrule.RowRule {
	return [2]streamrule.RowRule{streamrule.Rows(cpu, false), streamrule.Rows(cpu, true)}
}

// bothKernels is rowRules with rule r for both kernels.
func bothKernels(r streamrule.RowRule) [2]streamrule.RowRule { return [2]streamrule.RowRule{r, r} }

// TestOneByOneCalls holds oneByOne, forwardRows's choice of flagRows for an in-cache call, to the
// rules of streamrule.Rows at their ends: float32 rows only, more than one, d a multiple of 64,
// at most rowsMax (384 with Zen 5's avx512 kernel) or above groupMax as the CPU's rule for the
// kernel says.
func TestOneByOneCalls(t *testing.T) {
	defer func(r [2]streamrule.RowRule) { rowRules = r }(rowRules)
	for _, c := range []struct {
		rows, d int
		f       format
		// Emerald Rapids (either kernel), Zen 3, Zen 5 with the avx512 kernel and the avx2; Zen 4
		// has no rule, so none of its calls goes one at a time
		xeon, zen3, zen5, zen5avx2 bool
	}{
		{1, 128, formatF32, false, false, false, false},
		{2, 128, formatF32, true, true, true, true},
		{3, 64, formatF32, true, true, true, true},
		{4, 128, formatF32, true, false, true, false},
		{4, 64, formatF32, true, false, true, false},
		{63, 128, formatF32, true, false, true, false},
		{64, 128, formatF32, true, true, true, false},
		{64, 64, formatF32, true, true, true, false},
		{64, 100, formatF32, false, false, false, false},
		{64, 192, formatF32, false, false, true, false},
		{3, 192, formatF32, false, false, true, false},
		{4, 384, formatF32, false, false, true, false},
		{1024, 256, formatF32, false, false, true, false},
		{2, 448, formatF32, false, false, false, false},
		{64, 448, formatF32, false, false, false, false},
		{64, 512, formatF32, false, false, false, false},
		{64, 320, formatBF16, false, false, false, false},
		{2, 576, formatF32, false, true, false, false},
		{64, 600, formatF32, false, false, false, false},
		{64, 4096, formatF32, false, true, false, false},
		{1, 4096, formatF32, false, false, false, false},
		{64, 128, formatBF16, false, false, false, false},
		{2, 128, formatF16, false, false, false, false},
		{64, 4096, formatBF16, false, false, false, false},
	} {
		want := map[string][3]bool{ // avx2, avx512, avx512 with AVX512_BF16
			"Emerald Rapids": {c.xeon, c.xeon, c.xeon},
			"Zen 3":          {c.zen3, c.zen3, c.zen3},
			"Zen 4":          {},
			"Zen 5":          {c.zen5avx2, c.zen5, c.zen5},
		}
		for _, cpu := range ruleCPUs {
			rowRules = rulesOf(cpu.cpu)
			for i, k := range []kernelID{kernelAVX2, kernelAVX512, kernelAVX512BF16} {
				if got := oneByOne(c.rows, c.d, c.f, k); got != want[cpu.name][i] {
					t.Errorf("%s, %s: oneByOne(%d, %d, format %d) = %v, want %v", cpu.name, k, c.rows, c.d, c.f, got, want[cpu.name][i])
				}
			}
		}
	}
}

// TestRowRuleBounds holds streamrule's row lengths to the kernels': the rows the one-row path takes
// one at a time instead of the groups are at most rowsMax unless a rule raises the bound (Short,
// at most groupMax, the longest row of a group, and a multiple of 64), and those it takes instead
// of the general path are longer than groupMax.
func TestRowRuleBounds(t *testing.T) {
	if streamrule.ShortMax != rowsMax || streamrule.LongAbove != groupMax {
		t.Errorf("streamrule.ShortMax, LongAbove = %d, %d; want rowsMax %d, groupMax %d",
			streamrule.ShortMax, streamrule.LongAbove, rowsMax, groupMax)
	}
	for _, cpu := range ruleCPUs {
		for wide, r := range rulesOf(cpu.cpu) {
			if r.Short != 0 && (r.Short < rowsMax || r.Short > groupMax || r.Short%64 != 0) {
				t.Errorf("%s (kernel %d): Short %d; want 0 or a multiple of 64 from rowsMax %d to groupMax %d",
					cpu.name, wide, r.Short, rowsMax, groupMax)
			}
		}
	}
}

// TestApplyResidualOneRow runs Apply with a residual on one row, the call packedRows gives to the
// row function, on every kernel and value class: y, h in Residual and the bits of the generic
// kernel, the rows whose h needs the float64 path (rowHeld: the job finishes them from res)
// among them; in place too.
func TestApplyResidualOneRow(t *testing.T) {
	defer active.Store(active.Load())
	for _, d := range []int{64, 128, 192, 1024} {
		for ci, c := range valueClasses {
			for seed := range 2 {
				r := seedFor(d, ci, seed, 71)
				x, res, w := make([]float32, d), make([]float32, d), make([]float32, d)
				fill(x, c, r)
				fill(res, c, r)
				fill(w, classNormal, r)
				n := Norm{Weight: w, Eps: []float32{0, 1e-6}[seed]}
				run := func(k kernelID, inPlace bool) (y, h []float32) {
					active.Store(uint32(k))
					h = slices.Clone(res)
					xs := slices.Clone(x)
					y = make([]float32, d)
					if inPlace {
						y = xs
					}
					n.Apply(Rows{Dst: y, X: xs, Residual: h})
					return y, h
				}
				for _, inPlace := range []bool{false, true} {
					wy, wh := run(kernelGeneric, inPlace)
					for _, k := range testKernels() {
						y, h := run(k, inPlace)
						name := fmt.Sprintf("%s/d=%d/%s/seed=%d/in place %v", k.name(), d, c.name, seed, inPlace)
						if i := firstDiff(h, wh); i >= 0 {
							t.Fatalf("%s: h[%d] = %v (%#08x), generic %v (%#08x)", name, i, h[i], bitsOf(h[i]), wh[i], bitsOf(wh[i]))
						}
						if i := firstDiff(y, wy); i >= 0 {
							t.Fatalf("%s: y[%d] = %v (%#08x), generic %v (%#08x)", name, i, y[i], bitsOf(y[i]), wy[i], bitsOf(wy[i]))
						}
					}
				}
			}
		}
	}
}
