package rmsnorm

import (
	"slices"
	"strconv"
	"testing"
)

// The backward pass: every kernel against the generic one, bit for bit, DX and DW.

// backwardWith is n.Backward(g) with an explicit kernel.
func backwardWith(k kernelID, n Norm, g Grad) { backwardRows(&n, &g, k) }

// backwardCase is one backward call of the core matrix: the weight form, whether Inv is given,
// whether DW is accumulated, in place (DX = DY) or not, and the stride (0: back to back).
type backwardCase struct {
	mode            weightMode
	withInv, withDW bool
	inPlace         bool
	stride          int
	workers         int
}

// splitAll makes every call with Workers > 1 split, whatever its size, for the rest of the test.
func splitAll(t testing.TB) {
	saved := workerBytes
	workerBytes = workerShare{1, 1}
	t.Cleanup(func() { workerBytes = saved })
}

// checkBackward runs case bc with kernel c.k and with the generic kernel on the same inputs and
// compares DX and DW bit for bit, with guards around every buffer the call writes.
func checkBackward(t *testing.T, c matrixCase, bc backwardCase, off int, seed uint64) {
	t.Helper()
	d, rows := c.d, c.rows
	stride := bc.stride
	span := rows * d
	if stride != 0 {
		span = (rows-1)*stride + d
	}
	r := seedFor(d, rows, int(seed%1000))
	x := make([]float32, span)
	fill(x, c.class, r)
	dy := make([]float32, span)
	fill(dy, classNormal, r)
	w := make([]float32, d)
	// The weight cycles through the forward tests' weight classes. With x of signed zeros it is
	// made of them too: g = dy*w, then dx, are zeros whose sign comes from w's, so a kernel's
	// plain-weight path that took w + c with c = +0 (w + -0 is w for every w) shows.
	wc := c.weightClass()
	if c.class.name == classSignedZero.name {
		wc = classSignedZero
	}
	fill(w, wc, r)
	dw0 := make([]float32, d)
	fill(dw0, classNormal, r)
	n := Norm{Weight: w, Eps: c.eps, UnitOffset: bc.mode == offset, Workers: bc.workers}
	if bc.mode == unweighted {
		n = Norm{Dim: d, Eps: c.eps, Workers: bc.workers}
	}
	var inv []float32
	if bc.withInv {
		inv = make([]float32, rows)
		y := make([]float32, span)
		applyRowsWith(kernelGeneric, &n, formatF32, y, x, nil, inv, rows, stride)
	}
	run := func(k kernelID, dxg, dyg, dwg *guarded[float32]) {
		g := Grad{DX: dxg.s, X: x, DY: dyg.s, N: rows, Stride: stride, Inv: inv}
		if bc.inPlace {
			g.DX = g.DY
		}
		if bc.withDW && bc.mode != unweighted {
			g.DW = dwg.s
		}
		backwardWith(k, n, g)
	}
	mk := func(o int) (dxg, dyg, dwg *guarded[float32]) {
		dxg, dyg, dwg = newGuarded[float32]("DX", span, o), newGuarded[float32]("DY", span, o), newGuarded[float32]("DW", d, o)
		copy(dyg.s, dy)
		copy(dwg.s, dw0)
		return
	}
	wdx, wdy, wdw := mk(0)
	run(kernelGeneric, wdx, wdy, wdw)
	want := wdx.s
	if bc.inPlace {
		want = wdy.s
	}
	gdx, gdy, gdw := mk(off)
	// Non-temporal stores of dx forced on for half the cases (off in the others, whatever the
	// size); the generic kernel ignores them.
	withStreaming((c.d+off)%2 == 0, func() { run(c.k, gdx, gdy, gdw) })
	got := gdx.s
	if bc.inPlace {
		got = gdy.s
	}
	ctx := func() string {
		return c.String() + " " + [...]string{"weighted", "offset", "unweighted"}[bc.mode] +
			map[bool]string{true: " Inv", false: ""}[bc.withInv] + map[bool]string{true: " DW", false: ""}[bc.withDW] +
			map[bool]string{true: " in place", false: ""}[bc.inPlace] + " stride=" + strconv.Itoa(stride) + " workers=" + strconv.Itoa(bc.workers)
	}
	for _, gb := range []*guarded[float32]{gdx, gdy, gdw} {
		gb.check(t, ctx())
	}
	// Between rows (a stride), DX keeps what it held.
	for rr := 0; rr < rows; rr++ {
		if i := firstDiff(got[rr*max(stride, d):rr*max(stride, d)+d], want[rr*max(stride, d):rr*max(stride, d)+d]); i >= 0 {
			t.Fatalf("%s: DX row %d element %d = %g (%#x), generic %g (%#x)", ctx(), rr, i,
				got[rr*max(stride, d)+i], bitsOf(got[rr*max(stride, d)+i]), want[rr*max(stride, d)+i], bitsOf(want[rr*max(stride, d)+i]))
		}
	}
	if !slices.EqualFunc(got, want, sameBits) {
		t.Fatalf("%s: DX differs outside the rows", ctx())
	}
	if i := firstDiff(gdw.s, wdw.s); i >= 0 {
		t.Fatalf("%s: DW[%d] = %g (%#x), generic %g (%#x)", ctx(), i, gdw.s[i], bitsOf(gdw.s[i]), wdw.s[i], bitsOf(wdw.s[i]))
	}
}

// Many rows, which the core matrix (at most 5) lacks: blocks of 32 past the first, rows closing a
// block (r%32 == 31) with flagFuse, for a plain weight and UnitOffset, a last row inside a block
// or alone in one, block mode's slots past the first (Workers), and float64-path rows among them
// (classWide and classSpecial at short d).
func TestBackwardBlocks(t *testing.T) {
	splitAll(t)
	classes := []valueClass{classNormal, classWide, classSpecial}
	for _, k := range simdKernels() {
		n := 0
		for _, d := range []int{1, 3, 5, 16, 67, 100} {
			for _, rows := range []int{31, 32, 33, 64, 65, 97} {
				for ci := range 7 {
					c := matrixCase{k: k, d: d, rows: rows, class: classes[(ci+d)%len(classes)], ci: ci,
						nclasses: len(classes), eps: testEps[(d+rows+ci)%len(testEps)], offsets: []int{0, 3}}
					bc := backwardCase{mode: weightMode(ci % 2), withInv: ci%3 == 0, withDW: ci != 1 && ci != 4, inPlace: ci >= 3}
					if ci%2 == 1 {
						bc.stride = d + 2
					}
					switch {
					case ci == 6:
						// UnitOffset with DW on one goroutine: the blocks fused into DW as they close,
						// a block of one row at the end of 33, 65 and 97 rows.
						bc.mode = offset
					case ci >= 2:
						bc.workers = ci // 2..5 workers split the blocks differently
					}
					checkBackward(t, c, bc, c.offsets[ci%2], uint64(d*1000+rows*10+ci))
					n++
				}
			}
		}
		t.Logf("%s: %d calls of up to 97 rows", k, n)
	}
}
