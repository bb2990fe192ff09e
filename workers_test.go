package rmsnorm

import (
	"fmt"
	"math"
	"runtime/metrics"
	"slices"
	"sync"
	"testing"
)

// Norm.Workers (workers.go, runBackward): every entry point gives the same bits for every number
// of workers, on every kernel; Backward's weight gradient is summed by blocks of 32 rows counted
// from the first row of the call, so that splitting a call at a multiple of 32 rows is the same
// as one call; one Norm serves concurrent callers; and below the size threshold a call stays on
// its goroutine.

// workerCounts are the Workers values compared against Workers = 0.
var workerCounts = []int{1, 2, 3, 7, 64}

// diff16 returns the first index where got and want, stored in format f, differ (NaN payloads
// aside), or -1.
func diff16(got, want []uint16, f format) int {
	for i := range want {
		if !same16(got[i], want[i], f) {
			return i
		}
	}
	return -1
}

// workersInput is one shape of TestWorkersSameBits: rows of d values a stride apart (stride = d:
// back to back), with a row scaled by 1e25 and a row holding +Inf in the middle of the batch,
// both on the float64 path.
type workersInput struct {
	d, rows, stride, span int
	x, dy, res, w, dw0    []float32
	mode                  weightMode
}

func newWorkersInput(d, rows, stride int, mode weightMode) *workersInput {
	in := &workersInput{d: d, rows: rows, stride: stride, span: (rows-1)*stride + d, mode: mode}
	r := seedFor(d, rows, stride, 90)
	in.x, in.dy, in.res = make([]float32, in.span), make([]float32, in.span), make([]float32, in.span)
	fill(in.x, classNormal, r)
	fill(in.dy, classNormal, r)
	fill(in.res, classNormal, r)
	in.w, in.dw0 = make([]float32, d), make([]float32, d)
	fill(in.w, classNormal, r)
	fill(in.dw0, classNormal, r)
	if rows >= 3 {
		big := rows / 2 * stride
		for i := big; i < big+d; i++ {
			in.x[i] *= 1e25 // squares overflow: the float64 path
		}
		in.x[rows/3*stride+d/2] = float32(math.Inf(1)) // Inf: the float64 path, NaN and zeros
	}
	return in
}

// norm returns the input's Norm with workers.
func (in *workersInput) norm(workers int) Norm {
	n := normFor(in.mode, in.w, 1e-6)
	n.Workers = workers
	return n
}

// rowsArg returns Rows.N and Rows.Stride for the input: N = 0 when the rows are back to back (on
// odd row counts, to cover both forms), else N and Stride.
func (in *workersInput) rowsArg() (int, int) {
	if in.stride == in.d && in.rows%2 == 1 {
		return 0, 0
	}
	return in.rows, in.stride
}

// workersOutputs runs one entry point and returns the buffers it wrote, by name.
type workersEntry struct {
	name string
	run  func(k kernelID, in *workersInput, workers int) map[string][]float32
	// run16 is set instead of run for 16-bit entry points.
	run16 func(k kernelID, in *workersInput, workers int) map[string][]uint16
	f     format
}

func workersEntries() []workersEntry {
	applyF32 := func(residual, withInv, inPlace bool) func(k kernelID, in *workersInput, workers int) map[string][]float32 {
		return func(k kernelID, in *workersInput, workers int) map[string][]float32 {
			n := in.norm(workers)
			rows, stride := in.rowsArg()
			out := map[string][]float32{}
			x := slices.Clone(in.x)
			dst := sentinels(in.span)
			if inPlace {
				dst = x
			}
			out["Dst"] = dst
			var res, inv []float32
			if residual {
				res = slices.Clone(in.res)
				out["Residual"] = res
			}
			if withInv {
				inv = sentinels(in.rows)
				out["Inv"] = inv
			}
			applyRowsWith(k, &n, formatF32, dst, x, res, inv, rows, stride)
			return out
		}
	}
	apply16 := func(f format) func(k kernelID, in *workersInput, workers int) map[string][]uint16 {
		return func(k kernelID, in *workersInput, workers int) map[string][]uint16 {
			n := in.norm(workers)
			n.RoundNormalized = in.rows%2 == 0
			rows, stride := in.rowsArg()
			x, res := narrowAll(in.x, f), narrowAll(in.res, f)
			dst := make([]uint16, in.span)
			inv := sentinels(in.rows)
			applyRowsWith(k, &n, f, dst, x, res, inv, rows, stride)
			return map[string][]uint16{"Dst": dst, "Residual": res, "Inv": float32Halves(inv)} // Inv bit for bit
		}
	}
	// applyTo16 runs ApplyToBF16 or ApplyToF16 with a residual and Inv; with dstOwn, dst rows at
	// a DstStride of their own: back to back under strided rows, 5 apart under rows back to back.
	applyTo16 := func(f format, dstOwn bool) func(k kernelID, in *workersInput, workers int) map[string][]uint16 {
		return func(k kernelID, in *workersInput, workers int) map[string][]uint16 {
			n := in.norm(workers)
			n.RoundNormalized = in.rows%2 == 0
			r := rowsOf[uint16, float32]{X: in.x, Residual: slices.Clone(in.res), Inv: sentinels(in.rows)}
			r.N, r.Stride = in.rowsArg()
			dstStride := in.stride
			if dstOwn {
				dstStride = workersDstStride(in)
				r.N, r.Stride, r.DstStride = in.rows, in.stride, dstStride
			}
			r.Dst = make([]uint16, max(in.span, (in.rows-1)*dstStride+in.d))[:(in.rows-1)*dstStride+in.d] // see workersDstStride
			applyKernel(k, &n, f, &r)
			return map[string][]uint16{"Dst": r.Dst, "Residual": float32Halves(r.Residual), "Inv": float32Halves(r.Inv)}
		}
	}
	backward := func(withInv, inPlace bool) func(k kernelID, in *workersInput, workers int) map[string][]float32 {
		return func(k kernelID, in *workersInput, workers int) map[string][]float32 {
			n := in.norm(workers)
			rows, stride := in.rowsArg()
			g := Grad{DX: sentinels(in.span), X: in.x, DY: slices.Clone(in.dy), N: rows, Stride: stride}
			if inPlace {
				g.DX = g.DY
			}
			if withInv {
				g.Inv = make([]float32, in.rows)
				f := in.norm(0)
				applyRowsWith(kernelGeneric, &f, formatF32, make([]float32, in.span), in.x, nil, g.Inv, rows, stride)
			}
			out := map[string][]float32{"DX": g.DX}
			if in.mode != unweighted {
				g.DW = slices.Clone(in.dw0)
				out["DW"] = g.DW
			}
			backwardWith(k, n, g)
			return out
		}
	}
	return []workersEntry{
		{name: "Apply", run: applyF32(false, false, false)},
		{name: "Apply Inv", run: applyF32(false, true, false)},
		{name: "Apply Residual", run: applyF32(true, false, false)},
		{name: "Apply Residual Inv in place", run: applyF32(true, true, true)},
		{name: "Forward", run: func(k kernelID, in *workersInput, workers int) map[string][]float32 {
			n := in.norm(workers)
			x := in.x
			if in.stride != in.d { // Forward takes rows back to back
				x = make([]float32, 0, in.rows*in.d)
				for r := range in.rows {
					x = append(x, in.x[r*in.stride:r*in.stride+in.d]...)
				}
			}
			dst := sentinels(len(x))
			applyRowsWith(k, &n, formatF32, dst, x, nil, nil, 0, 0)
			return map[string][]float32{"Dst": dst}
		}},
		{name: "ApplyBF16 Residual Inv", run16: apply16(formatBF16), f: formatBF16},
		{name: "ApplyF16 Residual Inv", run16: apply16(formatF16), f: formatF16},
		{name: "Apply DstStride Residual Inv", run: func(k kernelID, in *workersInput, workers int) map[string][]float32 {
			n := in.norm(workers)
			dstStride := workersDstStride(in)
			r := Rows{X: in.x, N: in.rows, Stride: in.stride, DstStride: dstStride, Residual: slices.Clone(in.res), Inv: sentinels(in.rows)}
			r.Dst = sentinels(max(in.span, (in.rows-1)*dstStride+in.d))[:(in.rows-1)*dstStride+in.d] // see workersDstStride
			applyWith(k, &n, &r)
			return map[string][]float32{"Dst": r.Dst, "Residual": r.Residual, "Inv": r.Inv}
		}},
		{name: "ApplyToBF16 Residual Inv", run16: applyTo16(formatToBF16, false), f: formatToBF16},
		{name: "ApplyToF16 Residual Inv", run16: applyTo16(formatToF16, false), f: formatToF16},
		{name: "ApplyToBF16 DstStride Residual Inv", run16: applyTo16(formatToBF16, true), f: formatToBF16},
		{name: "ApplyToF16 DstStride Residual Inv", run16: applyTo16(formatToF16, true), f: formatToF16},
		{name: "Backward", run: backward(false, false)},
		{name: "Backward Inv in place", run: backward(true, true)},
	}
}

// workersDstStride is the DstStride of the entries with dst rows of their own: d (the head-major
// layout) under strided rows, d+5 under rows back to back. Their Dst has room up to the span of
// x past its length, so that a kernel that wrote the rows of dst at Stride would harm no other
// memory (the tests against generic catch it).
func workersDstStride(in *workersInput) int {
	if in.stride != in.d {
		return in.d
	}
	return in.d + 5
}

// float32Halves returns the bits of v as 16-bit halves, for the entries that return 16-bit
// buffers to compare float32 ones bit for bit.
func float32Halves(v []float32) []uint16 {
	h := make([]uint16, 2*len(v))
	for i, x := range v {
		b := math.Float32bits(x)
		h[2*i], h[2*i+1] = uint16(b), uint16(b>>16)
	}
	return h
}

func TestWorkersSameBits(t *testing.T) {
	splitAll(t)
	rowCounts := []int{1, 2, 5, 31, 32, 33, 64, 100, 257}
	dims := []int{1, 17, 64, 130}
	entries := workersEntries()
	for _, k := range testKernels() {
		for di, d := range dims {
			for ri, rows := range rowCounts {
				stride := d
				if (di+ri)%2 == 1 {
					stride = d + 3
				}
				in := newWorkersInput(d, rows, stride, weightMode((di+ri)%3))
				for _, e := range entries {
					ctx := func(w int, buf string) string {
						return fmt.Sprintf("%s %s d=%d rows=%d stride=%d mode=%d Workers=%d: %s", k, e.name, d, rows, stride, in.mode, w, buf)
					}
					if e.run16 != nil {
						want := e.run16(k, in, 0)
						for _, w := range workerCounts {
							for name, got := range e.run16(k, in, w) {
								if i := diff16(got, want[name], e.f); i >= 0 {
									t.Fatalf("%s[%d] = %#04x, Workers=0 gives %#04x", ctx(w, name), i, got[i], want[name][i])
								}
							}
						}
						continue
					}
					want := e.run(k, in, 0)
					for _, w := range workerCounts {
						for name, got := range e.run(k, in, w) {
							if i := firstDiff(got, want[name]); i >= 0 {
								t.Fatalf("%s[%d] = %v (%#x), Workers=0 gives %v (%#x)", ctx(w, name), i,
									got[i], math.Float32bits(got[i]), want[name][i], math.Float32bits(want[name][i]))
							}
						}
					}
				}
			}
		}
	}
	// The public methods pass Workers on: the active kernel through them.
	in := newWorkersInput(64, 100, 67, weighted)
	for _, w := range workerCounts {
		n := in.norm(w)
		got := map[string][]float32{"Dst": sentinels(in.span), "Inv": sentinels(in.rows), "DX": sentinels(in.span), "DW": slices.Clone(in.dw0)}
		want := map[string][]float32{"Dst": sentinels(in.span), "Inv": sentinels(in.rows), "DX": sentinels(in.span), "DW": slices.Clone(in.dw0)}
		for _, o := range []struct {
			m Norm
			b map[string][]float32
		}{{n, got}, {in.norm(0), want}} {
			o.m.Apply(Rows{Dst: o.b["Dst"], X: in.x, N: in.rows, Stride: in.stride, Inv: o.b["Inv"]})
			o.m.Backward(Grad{DX: o.b["DX"], X: in.x, DY: in.dy, N: in.rows, Stride: in.stride, Inv: o.b["Inv"], DW: o.b["DW"]})
		}
		for name := range want {
			if i := firstDiff(got[name], want[name]); i >= 0 {
				t.Fatalf("public methods, Workers=%d: %s[%d] = %v, Workers=0 gives %v", w, name, i, got[name][i], want[name][i])
			}
		}
	}
}

// Backward counts the blocks of the weight gradient from the first row of the call: a call cut at
// a multiple of 32 rows into several calls, each adding into the same DW, gives the bits of one
// call. DX is per row, so any cut gives the same DX.
func TestBackwardSplitAtBlocks(t *testing.T) {
	for _, k := range testKernels() {
		for _, c := range []struct {
			rows, stride int
			cuts         []int // row indices where the call is cut
		}{
			{33, 64, []int{32}},
			{64, 64, []int{32}},
			{100, 67, []int{32}},
			{100, 64, []int{64}},
			{100, 64, []int{32, 64, 96}},
			{257, 70, []int{96, 256}},
			{257, 64, []int{128}},
		} {
			for _, mode := range []weightMode{weighted, offset} {
				in := newWorkersInput(64, c.rows, c.stride, mode)
				n := in.norm(0)
				inv := make([]float32, in.rows)
				applyRowsWith(k, &n, formatF32, make([]float32, in.span), in.x, nil, inv, in.rows, in.stride)
				wantDX, wantDW := sentinels(in.span), slices.Clone(in.dw0)
				backwardWith(k, n, Grad{DX: wantDX, X: in.x, DY: in.dy, N: in.rows, Stride: in.stride, Inv: inv, DW: wantDW})

				// cut runs the rows in calls cut at cuts, all adding into one DW.
				cut := func(cuts []int) (dx, dw []float32) {
					dx, dw = sentinels(in.span), slices.Clone(in.dw0)
					bounds := append(append([]int{0}, cuts...), in.rows)
					for i := 0; i+1 < len(bounds); i++ {
						r0, r1 := bounds[i], bounds[i+1]
						o := r0 * in.stride
						backwardWith(k, n, Grad{DX: dx[o:], X: in.x[o:], DY: in.dy[o:], N: r1 - r0, Stride: in.stride, Inv: inv[r0:], DW: dw})
					}
					return dx, dw
				}
				ctx := fmt.Sprintf("%s mode=%d rows=%d stride=%d cut at %v", k, mode, c.rows, c.stride, c.cuts)
				dx, dw := cut(c.cuts)
				if i := firstDiff(dx, wantDX); i >= 0 {
					t.Fatalf("%s: DX[%d] = %v, one call gives %v", ctx, i, dx[i], wantDX[i])
				}
				if i := firstDiff(dw, wantDW); i >= 0 {
					t.Fatalf("%s: DW[%d] = %v, one call gives %v", ctx, i, dw[i], wantDW[i])
				}
				// Off the blocks, DX is still the same; DW is the same sums in another grouping.
				dx, _ = cut([]int{c.cuts[0] - 7})
				if i := firstDiff(dx, wantDX); i >= 0 {
					t.Fatalf("%s (moved to %d): DX[%d] = %v, one call gives %v", ctx, c.cuts[0]-7, i, dx[i], wantDX[i])
				}
			}
		}
	}
}

// Norms with Workers serve goroutines calling Apply, Backward and ApplyToBF16 at once, each on its own buffers
// (run with -race). Forty callers with Workers 3 to 11 have up to 400 goroutines waiting to hand
// over a call, more than splitQueue holds, so a call's goroutines often run parts of other calls.
func TestWorkersConcurrentCallers(t *testing.T) {
	splitAll(t)
	const d, rows, callers = 64, 100, 40
	iters := 20
	if testing.Short() {
		iters = 5
	}
	in := newWorkersInput(d, rows, d, weighted)
	shared := Norm{Weight: in.w, Eps: 1e-6, Workers: 4}
	type result struct {
		y, inv, dx, dw []float32
		y16            []uint16 // ApplyToBF16 into rows d+2 apart
	}
	call := func(n Norm, x, dy []float32) result {
		r := result{y: make([]float32, len(x)), inv: make([]float32, rows), dx: make([]float32, len(x)), dw: make([]float32, d),
			y16: make([]uint16, (rows-1)*(d+2)+d)}
		n.Apply(Rows{Dst: r.y, X: x, Inv: r.inv})
		n.Backward(Grad{DX: r.dx, X: x, DY: dy, Inv: r.inv, DW: r.dw})
		n.ApplyToBF16(RowsTo16{Dst: r.y16, X: x, N: rows, DstStride: d + 2})
		return r
	}
	xs, dys := make([][]float32, callers), make([][]float32, callers)
	want := make([]result, callers)
	for c := range callers {
		xs[c], dys[c] = normalRows(d, rows, 100+c), normalRows(d, rows, 200+c)
		want[c] = call(Norm{Weight: in.w, Eps: 1e-6}, xs[c], dys[c])
	}
	errs := make(chan string, callers)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range iters {
				n := shared
				n.Workers = 3 + c%9
				got := call(n, xs[c], dys[c])
				for _, p := range []struct {
					name      string
					got, want []float32
				}{{"y", got.y, want[c].y}, {"Inv", got.inv, want[c].inv}, {"DX", got.dx, want[c].dx}, {"DW", got.dw, want[c].dw}} {
					if i := firstDiff(p.got, p.want); i >= 0 {
						errs <- fmt.Sprintf("caller %d, iteration %d: %s[%d] = %v, sequential %v", c, it, p.name, i, p.got[i], p.want[i])
						return
					}
				}
				if i := diff16(got.y16, want[c].y16, formatBF16); i >= 0 {
					errs <- fmt.Sprintf("caller %d, iteration %d: ApplyToBF16 y[%d] = %#04x, sequential %#04x", c, it, i, got.y16[i], want[c].y16[i])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// Below the threshold (workerBytes of rows per goroutine), a call with Workers stays on the
// calling goroutine: it gives the same bits as Workers = 0 and starts no goroutine, as the
// runtime's count of goroutines created shows; the same calls start goroutines once every call
// is over the threshold. (alloc_test.go checks that neither allocates.)
func TestWorkersBelowThreshold(t *testing.T) {
	const d, rows = 128, 64 // 32 KiB of rows: far below one goroutine's share
	in := newWorkersInput(d, rows, d, weighted)
	x16 := narrowAll(in.x, formatBF16)
	y16 := make([]uint16, len(in.x))
	type bufs struct{ y, inv, dx, dw []float32 }
	mk := func() bufs {
		return bufs{make([]float32, len(in.x)), make([]float32, rows), make([]float32, len(in.x)), make([]float32, d)}
	}
	b8, b0 := mk(), mk()
	calls := []struct {
		name string
		f    func(n Norm, b bufs)
	}{
		{"Apply", func(n Norm, b bufs) { n.Apply(Rows{Dst: b.y, X: in.x, Inv: b.inv}) }},
		{"Forward", func(n Norm, b bufs) { n.Forward(b.y, in.x) }},
		{"ApplyBF16", func(n Norm, b bufs) { n.ApplyBF16(Rows16{Dst: y16, X: x16}) }},
		{"Backward", func(n Norm, b bufs) { n.Backward(Grad{DX: b.dx, X: in.x, DY: in.dy, Inv: b.inv, DW: b.dw}) }},
		{"ApplyToF16", func(n Norm, b bufs) { n.ApplyToF16(RowsTo16{Dst: y16, X: in.x}) }},
	}
	n8, n0 := in.norm(8), in.norm(0)

	calls[0].f(n8, b8)
	calls[0].f(n0, b0)
	calls[3].f(n8, b8)
	calls[3].f(n0, b0)
	for _, p := range [][2][]float32{{b8.y, b0.y}, {b8.inv, b0.inv}, {b8.dx, b0.dx}, {b8.dw, b0.dw}} {
		if i := firstDiff(p[0], p[1]); i >= 0 {
			t.Fatalf("Workers=8 below the threshold: element %d = %v, Workers=0 gives %v", i, p[0][i], p[1][i])
		}
	}

	// A split call starts at least one goroutine; a stray one of the runtime's is allowed for.
	const n = 20
	for _, c := range calls {
		if g := goroutinesStarted(t, func() {
			for range n {
				c.f(n8, b8)
			}
		}); g >= n {
			t.Errorf("%s with Workers=8 below the threshold: %d goroutines started in %d calls: it split", c.name, g, n)
		}
	}
	// The probe can tell: the same calls split when every call is over the threshold.
	splitAll(t)
	for _, c := range calls {
		if g := goroutinesStarted(t, func() {
			for range n {
				c.f(n8, b8)
			}
		}); g < n {
			t.Errorf("%s with Workers=8 split: %d goroutines started in %d calls, so the check above proves nothing", c.name, g, n)
		}
	}
}

// The forward forms and Backward take their shares of a split apart (workerShare, from
// streamrule.Workers): with one share 1 byte and the other larger than any call, only the calls
// of the first kind split.
func TestWorkersShares(t *testing.T) {
	const d, rows, n = 128, 64, 20
	in := newWorkersInput(d, rows, d, weighted)
	y, inv, dx, dw := make([]float32, len(in.x)), make([]float32, rows), make([]float32, len(in.x)), make([]float32, d)
	nw := in.norm(8)
	forward := func() { nw.Apply(Rows{Dst: y, X: in.x, Inv: inv}) }
	backward := func() { nw.Backward(Grad{DX: dx, X: in.x, DY: in.dy, Inv: inv, DW: dw}) }
	saved := workerBytes
	defer func() { workerBytes = saved }()
	for _, c := range []struct {
		name               string
		share              workerShare
		splitFwd, splitBwd bool
	}{
		{"forward share 1", workerShare{forward: 1, backward: math.MaxInt}, true, false},
		{"backward share 1", workerShare{forward: math.MaxInt, backward: 1}, false, true},
	} {
		workerBytes = c.share
		for _, call := range []struct {
			name  string
			f     func()
			split bool
		}{{"Apply", forward, c.splitFwd}, {"Backward", backward, c.splitBwd}} {
			g := goroutinesStarted(t, func() {
				for range n {
					call.f()
				}
			})
			// A split call starts at least one goroutine; a stray one of the runtime's is allowed for.
			if split := g >= n; split != call.split {
				t.Errorf("%s: %s with Workers=8 started %d goroutines in %d calls; want it to split: %v", c.name, call.name, g, n, call.split)
			}
		}
	}
}

// goroutinesStarted returns how many goroutines the program started while f ran.
func goroutinesStarted(t *testing.T, f func()) uint64 {
	t.Helper()
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		t.Fatalf("the runtime does not count the goroutines it creates (%s)", s[0].Name)
	}
	before := s[0].Value.Uint64()
	f()
	metrics.Read(s)
	return s[0].Value.Uint64() - before
}

// A call of a Norm with Workers above 1 takes the short paths of Workers 0 when
// Norm.oneGoroutine says it cannot split. That must never keep whole a call runWorkers would
// split: for every format and layout (in place, a residual, both), the largest x oneGoroutine
// takes must get one goroutine from forwardParts, under the real share and odd ones; and the
// next row must leave oneGoroutine, so that the bound is the one its doc gives.
func TestOneGoroutineNeverSplits(t *testing.T) {
	saved := workerBytes
	defer func() { workerBytes = saved }()
	var a, b, c [1]float32
	pa, pb, pc := ptr(a[:]), ptr(b[:]), ptr(c[:])
	for _, share := range []uintptr{saved.forward, 1 << 20, 1000003, 4096} {
		workerBytes = workerShare{forward: share, backward: saved.backward}
		for _, f := range []format{formatF32, formatBF16, formatF16, formatToBF16, formatToF16} {
			in := f.in().size()
			for _, d := range []int{1, 64, 100, 4096} {
				rows := int((share/2 - 1) / (uintptr(d) * in)) // the most rows whose x is below half a share
				if rows < 1 {
					continue
				}
				for _, inPlace := range []bool{false, true} {
					if inPlace && f.in() != f.out() {
						continue // rows into 16-bit ones cannot be in place
					}
					for _, res := range []bool{false, true} {
						j := job{format: f, d: d, rows: rows, x: pa, dst: pb}
						if inPlace {
							j.dst = pa
						}
						if res {
							j.res = pc
						}
						name := fmt.Sprintf("share %d, format %d, %dx%d, in place %v, residual %v", share, f, rows, d, inPlace, res)
						xBytes := uintptr(rows*d) * in
						n := Norm{Workers: 64}
						if !n.oneGoroutine(xBytes) {
							t.Fatalf("%s: oneGoroutine sends x of %d bytes to the general path, below half of the share", name, xBytes)
						}
						if p := j.forwardParts(n.Workers); p != 1 {
							t.Errorf("%s: oneGoroutine keeps the call whole, but runWorkers would split it in %d", name, p)
						}
						if n.oneGoroutine(xBytes + uintptr(d)*in) {
							t.Errorf("%s: one more row (x of %d bytes) still stays whole", name, xBytes+uintptr(d)*in)
						}
						// The bound holds only while forwardParts counts every byte the call
						// moves: x read, dst written (in place x written back), a residual read
						// and written. Larger calls must get exactly one goroutine per share.
						perElem := in + f.out().size()
						if inPlace {
							perElem = 2 * in
						}
						if res {
							perElem += 2 * in
						}
						for _, r := range []int{2*rows + 7, 5 * rows, 9*rows + 1} {
							jr := j
							jr.rows = r
							want := max(1, min(n.Workers, r, int(uintptr(r*d)*perElem/share)))
							if p := jr.forwardParts(n.Workers); p != want {
								t.Errorf("%s, %d rows: forwardParts = %d, want %d (%d bytes an element)", name, r, p, want, perElem)
							}
						}
					}
				}
			}
		}
	}
	// Workers 0 and 1 stay whole at any size; a negative Workers never does (the general path panics).
	for _, w := range []int{0, 1, -1} {
		n := Norm{Workers: w}
		if got := n.oneGoroutine(math.MaxInt / 2); got != (w >= 0) {
			t.Errorf("Workers %d: oneGoroutine = %v", w, got)
		}
	}
}
