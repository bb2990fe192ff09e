package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gosimd/rmsnorm"
	"github.com/gosimd/rmsnorm/internal/benchutil"
)

// tableMeasurements is the number of measurements of the table: per shape, copy() and, per
// kernel, its call and the call each extra column compares it to.
func (c config) tableMeasurements() int {
	perKernel := 1
	for _, on := range []bool{c.format != "f32", c.backward, c.layernorm, c.workers > 1} {
		if on {
			perKernel++
		}
	}
	return len(c.shapes) * (1 + len(c.kernels)*perKernel)
}

// table measures and prints the table of kernels and shapes, a shape's lines as soon as they are
// measured.
func (b *bench) table(peers *peersRunner) error {
	from := len(b.spreads)
	b.printTableHead()
	for _, s := range b.shapes {
		if err := b.tableShape(s, peers); err != nil {
			return err
		}
	}
	b.printTableNotes()
	b.warnIfBusy(from, "")
	return nil
}

// tableShape measures the lines of one shape: copy(), each kernel, then the peers.
func (b *bench) tableShape(s benchutil.Shape, peers *peersRunner) error {
	x, w := benchutil.Data(s)
	y := slices.Clone(x) // the output's pages exist before anything is timed
	rows := float64(s.Rows)
	bytes := float64(8 * len(x)) // x read plus y written
	copyBytes := bytes
	copyCall := func() { copy(y, x) }

	var x16, y16 []uint16
	var dy, dx, inv, dw []float32
	var lnInv, lnMean, db []float32 // -layernorm -backward: LayerNorm's forward outputs, its bias gradient
	bias := layerNormBias(w)
	switch {
	case b.format != "f32":
		x16 = make([]uint16, len(x))
		if b.format == "bf16" {
			rmsnorm.Float32ToBF16(x16, x)
		} else {
			rmsnorm.Float32ToF16(x16, x)
		}
		y16 = slices.Clone(x16)
		bytes /= 2
		copyBytes = bytes
		copyCall = func() { copy(y16, x16) }
	case b.backward:
		dy, dx, inv, dw = slices.Clone(y), slices.Clone(y), make([]float32, s.Rows), make([]float32, s.D)
		rmsnorm.Norm{Weight: w, Eps: 1e-6}.Apply(rmsnorm.Rows{Dst: dy, X: x, Inv: inv}) // dy: any values near 1
		if b.layernorm {
			lnInv, lnMean, db = make([]float32, s.Rows), make([]float32, s.Rows), make([]float32, s.D)
			layerNorm(w, bias, 0).Apply(rmsnorm.Rows{Dst: dx, X: x, Inv: lnInv, Mean: lnMean})
		}
		bytes = float64(12 * len(x))     // x and dy read, dx written
		copyBytes = float64(16 * len(x)) // x and dy read and written
		copyCall = func() { copy(y, x); copy(dx, dy) }
	}

	// normCall returns n's timed call, through its methods: Backward, or the forward pass of
	// the table's format.
	normCall := func(n rmsnorm.Norm) func() {
		switch {
		case b.backward && n.Center:
			return func() { n.Backward(rmsnorm.Grad{DX: dx, X: x, DY: dy, Inv: lnInv, Mean: lnMean, DW: dw, DB: db}) }
		case b.backward:
			return func() { n.Backward(rmsnorm.Grad{DX: dx, X: x, DY: dy, Inv: inv, DW: dw}) }
		case b.format == "bf16":
			return func() { n.ApplyBF16(rmsnorm.Rows16{Dst: y16, X: x16}) }
		case b.format == "f16":
			return func() { n.ApplyF16(rmsnorm.Rows16{Dst: y16, X: x16}) }
		}
		return func() { n.Forward(y, x) }
	}
	// call returns the timed call with Workers set to workers: through a Norm, or with workers
	// 0 (and RMSNorm's forward pass) the package-level function of the format.
	call := func(workers int) func() {
		switch {
		case b.layernorm:
			return normCall(layerNorm(w, bias, workers))
		case b.backward || workers > 0:
			return normCall(rmsnorm.Norm{Weight: w, Eps: 1e-6, Workers: workers})
		case b.format == "bf16":
			return func() { rmsnorm.ForwardBF16(y16, x16, w, 1e-6) }
		case b.format == "f16":
			return func() { rmsnorm.ForwardF16(y16, x16, w, 1e-6) }
		}
		return func() { rmsnorm.Forward(y, x, w, 1e-6) }
	}

	// copy(), the kernels and the calls their ratios divide by, their rounds interleaved
	// (benchutil.TimeEach), so that the kernels are compared (and dispatch checked), and each
	// ratio taken, under the same conditions.
	var names []string
	var fs, picks []func()
	timed := func(what string, f, pick func()) int {
		names, fs, picks = append(names, what), append(fs, f), append(picks, pick)
		return len(fs) - 1
	}
	cpAt := timed(s.String()+" copy()", copyCall, nil)
	type kernelCalls struct{ main, f32, rms, fwd, one int } // indexes into the timings; -1: none
	kcs := make([]kernelCalls, len(b.kernels))
	for ki, k := range b.kernels {
		if err := rmsnorm.SetKernel(k); err != nil {
			return err
		}
		pick := func() { _ = rmsnorm.SetKernel(k) } // checked above
		what := s.String() + " " + k
		kc := kernelCalls{main: timed(what, call(b.workers), pick), f32: -1, rms: -1, fwd: -1, one: -1}
		if b.format != "f32" {
			// The float32 call the 16-bit one is divided by: the same Workers, so that x f32
			// is what the format changes alone.
			f32 := func() { rmsnorm.Forward(y, x, w, 1e-6) }
			if b.workers > 0 {
				n := rmsnorm.Norm{Weight: w, Eps: 1e-6, Workers: b.workers}
				f32 = func() { n.Forward(y, x) }
			}
			if b.layernorm {
				n := layerNorm(w, bias, b.workers)
				f32 = func() { n.Forward(y, x) }
			}
			kc.f32 = timed(what+" float32", f32, pick)
		}
		if b.layernorm {
			kc.rms = timed(what+" RMSNorm", normCall(rmsnorm.Norm{Weight: w, Eps: 1e-6, Workers: b.workers}), pick)
		}
		if b.backward {
			n, rs := rmsnorm.Norm{Weight: w, Eps: 1e-6, Workers: b.workers}, rmsnorm.Rows{Dst: y, X: x, Inv: inv}
			if b.layernorm {
				n, rs = layerNorm(w, bias, b.workers), rmsnorm.Rows{Dst: y, X: x, Inv: lnInv, Mean: lnMean}
			}
			kc.fwd = timed(what+" forward", func() { n.Apply(rs) }, pick)
		}
		if b.workers > 1 {
			kc.one = timed(what+" one goroutine", call(1), pick)
		}
		kcs[ki] = kc
	}
	ts := b.timeEach(names, fs, picks)
	cp := ts[cpAt]
	b.addResult(benchutil.Result{Shape: s.String(), Kernel: "copy()", NsPerRow: cp.Min / rows,
		NsPerRowMedian: cp.Median / rows, GBps: copyBytes / cp.Min, XCopy: 1})
	ratio := func(t benchutil.Timing, i int) float64 { // t over the call timed at i; 0 for none
		if i < 0 {
			return 0
		}
		return t.Min / ts[i].Min
	}
	for ki, k := range b.kernels {
		kc := kcs[ki]
		t := ts[kc.main]
		b.addResult(benchutil.Result{Shape: s.String(), Kernel: k, NsPerRow: t.Min / rows, NsPerRowMedian: t.Median / rows,
			GBps: bytes / t.Min, XCopy: t.Min / cp.Min, XF32: ratio(t, kc.f32), XRMSNorm: ratio(t, kc.rms),
			XForward: ratio(t, kc.fwd), XOneWorker: ratio(t, kc.one)})
	}
	if peers == nil {
		return nil
	}
	peerRows, err := peers.run(s, b.dur, b.layernorm)
	if err != nil {
		return err
	}
	for _, p := range peerRows {
		p.Kernel = "peer:" + p.Kernel
		b.spreads = append(b.spreads, spread{s.String() + " " + p.Kernel, p.NsPerRowMedian/p.NsPerRow - 1})
		b.addResult(p)
	}
	return nil
}

// call16 names the 16-bit call the table times: ForwardBF16 or ForwardF16, or a Norm's
// ApplyBF16 or ApplyF16 with LayerNorm or Workers.
func (b *bench) call16() string {
	if b.layernorm || b.workers > 0 {
		return map[string]string{"bf16": "Norm.ApplyBF16", "f16": "Norm.ApplyF16"}[b.format]
	}
	return map[string]string{"bf16": "ForwardBF16", "f16": "ForwardF16"}[b.format]
}

// tableCalls names the call the table times, for the summary's dispatch lines: "" for the plain
// float32 Forward, else the call, LayerNorm and Workers where they apply.
func (b *bench) tableCalls() string {
	var parts []string
	switch {
	case b.backward:
		parts = append(parts, "Norm.Backward")
	case b.format != "f32":
		parts = append(parts, b.call16())
	case b.layernorm || b.workers > 0:
		parts = append(parts, "Norm.Forward")
	}
	if b.layernorm {
		parts = append(parts, "LayerNorm")
	}
	if b.workers > 0 {
		parts = append(parts, fmt.Sprintf("Workers: %d", b.workers))
	}
	return strings.Join(parts, ", ")
}

// printTableHead says what the table's calls are and prints its column heads.
func (b *bench) printTableHead() {
	switch {
	case b.format != "f32":
		b.printf("rows stored as %s: %s, each against copy() of the same 16-bit bytes\n", b.format, b.call16())
	case b.backward && b.layernorm:
		b.printf("Norm.Backward with Inv, Mean, DW and DB (RMSNorm: Inv and DW), against copy() of x and dy into two other buffers\n")
	case b.backward:
		b.printf("Norm.Backward with Inv and DW (a training step's call), against copy() of x and dy into two other buffers\n")
	}
	if b.layernorm {
		b.printf("LayerNorm: a Norm with Center, Weight and Bias (eps 1e-12), against copy() and against RMSNorm\n")
	}
	if b.workers > 0 {
		share := b.rep.Machine.WorkerBytes[0]
		if b.backward {
			share = b.rep.Machine.WorkerBytes[1]
		}
		b.printf("calls through a Norm with Workers: %d (one goroutine per %s of rows read and written on this machine, at most %d)\n",
			b.workers, size(share), b.workers)
	}
	head := fmt.Sprintf("%-12s %-14s %s %9s %8s", "shape", "kernel", minMedianHead("ns/row"), "GB/s", "x copy")
	for _, c := range b.extraColumns() {
		head += fmt.Sprintf(" %*s", c.width, c.head)
	}
	b.printf("%s\n", head)
}

// column is one of the table's optional columns: a ratio to another call.
type column struct {
	head  string
	width int
	value func(benchutil.Result) float64
}

// extraColumns are the optional columns the flags turn on.
func (b *bench) extraColumns() []column {
	var cs []column
	if b.format != "f32" {
		cs = append(cs, column{"x f32", 8, func(r benchutil.Result) float64 { return r.XF32 }})
	}
	if b.backward {
		cs = append(cs, column{"x fwd", 8, func(r benchutil.Result) float64 { return r.XForward }})
	}
	if b.layernorm {
		cs = append(cs, column{"x rms", 8, func(r benchutil.Result) float64 { return r.XRMSNorm }})
	}
	if b.workers > 1 {
		cs = append(cs, column{"x 1 gor.", 9, func(r benchutil.Result) float64 { return r.XOneWorker }})
	}
	return cs
}

// addResult keeps a line of the table and prints it.
func (b *bench) addResult(r benchutil.Result) {
	b.rep.Results = append(b.rep.Results, r)
	line := fmt.Sprintf("%-12s %-14s %s %9.2f %8.2f", r.Shape, r.Kernel, minMedian(r.NsPerRow, r.NsPerRowMedian), r.GBps, r.XCopy)
	for _, c := range b.extraColumns() {
		if v := c.value(r); v > 0 {
			line += fmt.Sprintf(" %*.2f", c.width, v)
		} else {
			line += fmt.Sprintf(" %*s", c.width, "")
		}
	}
	b.printf("%s\n", strings.TrimRight(line, " "))
}

// printTableNotes explains the table's columns.
func (b *bench) printTableNotes() {
	b.printf("\nns/row of the best of ten rounds and of the median one; GB/s and the ratios use the best.\n")
	b.printf("At each shape copy() and the kernels take their rounds in turn.\n")
	if b.backward {
		b.printf("GB/s counts x and dy read plus dx written (copy(): x and dy read and written); x copy is the time\n" +
			"over copy() of x and dy into two other buffers (lower is better).\n")
		if b.layernorm {
			b.printf("x fwd is the time over Norm.Apply on the same rows (with Inv and Mean) and the same kernel.\n")
		} else {
			b.printf("x fwd is the time over Norm.Apply on the same rows (with Inv) and the same kernel.\n")
		}
	} else {
		b.printf("GB/s counts x read plus y written; x copy is the time over copy() of the same bytes (lower is better).\n")
	}
	if b.format != "f32" {
		b.printf("x f32 is the time over the float32 call (Forward, or Norm.Forward with the same Workers and\n" +
			"LayerNorm fields) on the same rows, with the same kernel (lower is better).\n")
	}
	if b.layernorm {
		b.printf("x rms is LayerNorm's time over RMSNorm's (a Norm with the same Weight, without Center and Bias)\n" +
			"in the same call on the same rows with the same kernel: what centering and the bias cost.\n")
	}
	if b.workers > 1 {
		b.printf("x 1 gor. is the time over the same call with Workers: 1 (below 1 the split pays).\n")
	}
	if slices.ContainsFunc(b.rep.Results, func(r benchutil.Result) bool { return strings.HasPrefix(r.Kernel, "peer:") }) {
		b.printf("peer: lines come from bench/peers, each against copy() timed in its own process.\n")
	}
}

// layerNorm is the LayerNorm the bench command times: weight w, bias bias and BERT's eps 1e-12,
// with Workers workers.
func layerNorm(w, bias []float32, workers int) rmsnorm.Norm {
	return rmsnorm.Norm{Weight: w, Bias: bias, Center: true, Eps: 1e-12, Workers: workers}
}

// layerNormBias returns a bias for the weight w: w - 1, small values around zero, as a trained
// LayerNorm's bias has.
func layerNormBias(w []float32) []float32 {
	bias := make([]float32, len(w))
	for i, v := range w {
		bias[i] = v - 1
	}
	return bias
}
