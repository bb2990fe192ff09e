package rmsnorm

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// TestBackwardPipeFlag checks which backward jobs setBackwardMemoryFlags sends through the
// backward pipe: streamed, d a multiple of 64, dx and its stride aligned to 32 bytes, RMSNorm's
// (neither Center nor DB), on a CPU that pipes the backward (backPipe), and either dx out with
// non-temporal stores (out of place, with DX) or in place, for d above backPipeAbove's limit for
// each; and no others.
func TestBackwardPipeFlag(t *testing.T) {
	saved, savedPipe, savedAbove := streamBytes, backPipe, backPipeAbove
	defer func() { streamBytes, backPipe, backPipeAbove = saved, savedPipe, savedAbove }()
	const rows = 4
	for _, c := range []struct {
		name          string
		d, stride     int
		shift         int // elements dx starts past a 32-byte boundary
		inPlace, noDX bool
		center, db    bool
		small, noCPU  bool
		want          bool
	}{
		{name: "streamed rows of 1024", d: 1024, want: true},
		{name: "rows of 576", d: 576, want: true},
		{name: "rows of 512, not above backPipeAbove", d: 512},
		{name: "rows of 1000, not a multiple of 64", d: 1000},
		{name: "rows of 1056, a multiple of 32 and not of 64", d: 1056},
		{name: "in place, rows of 1056", d: 1056, inPlace: true},
		{name: "a stride of 32 bytes more", d: 1024, stride: 1032, want: true},
		{name: "a stride of 16 bytes more", d: 1024, stride: 1028},
		{name: "dx 4 bytes past a boundary", d: 1024, shift: 1},
		{name: "in place", d: 1024, inPlace: true, want: true},
		{name: "in place, rows of 192", d: 192, inPlace: true, want: true},
		{name: "in place, rows of 128, not above its limit", d: 128, inPlace: true},
		{name: "in place, rows of 1000", d: 1000, inPlace: true},
		{name: "in place, dx 4 bytes past a boundary", d: 1024, inPlace: true, shift: 1},
		{name: "in place, rows in cache", d: 1024, inPlace: true, small: true},
		{name: "no DX", d: 1024, noDX: true},
		{name: "Center", d: 1024, center: true},
		{name: "DB", d: 1024, db: true},
		{name: "rows in cache", d: 1024, small: true},
		{name: "a CPU without the backward pipe", d: 1024, noCPU: true},
	} {
		stride := c.stride
		if stride == 0 {
			stride = c.d
		}
		span := (rows-1)*stride + c.d
		x := make([]float32, span)
		dx, _ := aligned32[float32](span+c.shift, 0)
		dx = dx[c.shift:]
		dy, _ := aligned32[float32](span+c.shift, 0)
		if c.inPlace {
			dy = dx
		}
		j := job{dst: ptr(dx), x: ptr(x), dy: ptr(dy), d: c.d, stride: stride, dstStride: stride, rows: rows}
		if c.noDX {
			j.dst = nil
		}
		if c.center {
			j.flags |= flagCenter
		}
		if c.db {
			j.db = ptr(make([]float32, c.d))
		}
		streamBytes, backPipe, backPipeAbove = 0, !c.noCPU, [2]int{512, 128}
		if c.small {
			streamBytes = math.MaxInt
		}
		j.setBackwardMemoryFlags()
		if got := j.flags&flagPipe != 0; got != c.want {
			t.Errorf("%s: flagPipe %v, want %v (flags %#x)", c.name, got, c.want, j.flags)
		}
	}
}

// TestBackwardPipe runs Norm.Backward with the backward pipe on every call that can take it
// (backPipe, whatever the row length) on each kernel and checks DX and DW bit for bit against the
// generic kernel without it: every weight form, with and without Inv and DW, out of place and in
// place, rows back to back and a stride apart, one row (nothing to pipe) to many (blocks of DW
// past the first), a float64-path row among them (a zero row with eps 0: the pipe has summed it,
// then the kernel returns it), and Workers 1 and 3 (each worker's range ends its pipe). The
// kernels without the pipe, generic among them, ignore the flag and must give the same bits too.
func TestBackwardPipe(t *testing.T) {
	splitAll(t)
	saved, savedPipe, savedAbove, savedAhead, savedNext := streamBytes, backPipe, backPipeAbove, aheadRows, nextRows
	defer func() {
		streamBytes, backPipe, backPipeAbove, aheadRows, nextRows = saved, savedPipe, savedAbove, savedAhead, savedNext
	}()
	runs := 0
	for _, k := range testKernels() {
		for _, d := range []int{64, 128, 576, 1024} {
			for _, rows := range []int{1, 2, 3, 5, 33, 66} {
				for _, extra := range []int{0, 8} { // Stride d, or 32 bytes more
					stride := d + extra
					for _, f64Row := range []int{-1, rows / 2} {
						sh := pipeShape{d: d, rows: rows, stride: stride}
						x, eps := sh.input(f64Row)
						span := len(x)
						r := seedFor(d, rows, extra, f64Row)
						dy := make([]float32, span)
						fill(dy, classNormal, r)
						w := make([]float32, d)
						fill(w, classNormal, r)
						dw0 := make([]float32, d)
						fill(dw0, classNormal, r)
						// The form, Inv, DW, Workers, in place and the prefetches cycle with the
						// runs (none, flagNext alone, flagAhead with flagNext); the last two also
						// shift with each row length (24 runs), so that every d meets each of
						// them.
						c := runs
						mode := []weightMode{weighted, offset, unweighted}[c%3]
						withInv, withDW, workers := c/3%2 == 0, c/6%2 == 0, []int{1, 3}[c/12%2]
						inPlace, ahead := (c+c/24)%2 == 0, (c/2+c/24)%3
						n := Norm{Weight: w, Eps: eps, UnitOffset: mode == offset, Workers: workers}
						if mode == unweighted {
							n = Norm{Dim: d, Eps: eps, Workers: workers}
						}
						var inv []float32
						if withInv {
							inv = make([]float32, rows)
							applyRowsWith(kernelGeneric, &n, formatF32, make([]float32, span), x, nil, inv, rows, stride)
						}
						run := func(kk kernelID, piped bool) (dx, dw []float32) {
							dx, window := aligned32[float32](span, 0)
							g := Grad{DX: dx, X: x, DY: dy, N: rows, Stride: stride, Inv: inv}
							if inPlace {
								copy(dx, dy)
								g.DY = dx
							}
							if withDW && mode != unweighted {
								g.DW = slices.Clone(dw0)
							}
							streamBytes, backPipe, backPipeAbove, aheadRows, nextRows = math.MaxInt, false, [2]int{}, false, [2]int{1, 0}
							if piped {
								streamBytes, backPipe, aheadRows = 0, true, ahead == 2
								if ahead == 1 {
									nextRows = [2]int{0, math.MaxInt}
								}
							}
							backwardWith(kk, n, g)
							for i := span; i < len(window); i++ {
								if bitsOf(window[i]) != bitsOf(guardOf[float32]()) {
									t.Fatalf("%s: the guard after DX was written", kk)
								}
							}
							return dx, g.DW
						}
						wdx, wdw := run(kernelGeneric, false)
						gdx, gdw := run(k, true)
						ctx := fmt.Sprintf("%s %v mode=%d Inv=%v DW=%v workers=%d inPlace=%v f64Row=%d", k, sh, mode, withInv, withDW, workers, inPlace, f64Row)
						if i := firstDiff(gdx, wdx); i >= 0 {
							t.Fatalf("%s: DX[%d] = %g (%#x), generic %g (%#x)", ctx, i, gdx[i], bitsOf(gdx[i]), wdx[i], bitsOf(wdx[i]))
						}
						if i := firstDiff(gdw, wdw); i >= 0 {
							t.Fatalf("%s: DW[%d] = %g (%#x), generic %g (%#x)", ctx, i, gdw[i], bitsOf(gdw[i]), wdw[i], bitsOf(wdw[i]))
						}
						runs++
					}
				}
			}
		}
	}
	t.Logf("%d calls with the backward pipe on", runs)
}
