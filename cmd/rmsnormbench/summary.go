package main

import (
	"math"
	"runtime"
	"slices"
	"strings"

	"github.com/gosimd/rmsnorm"
	"github.com/gosimd/rmsnorm/internal/benchutil"
)

// summaryShapes are the shapes of the summary: a LLaMA-sized row, and a batch of them larger
// than the cache.
var summaryShapes = benchutil.Must("1x4096,2048x4096")

// summary is what the last lines of the text say.
type summary struct {
	Kernel string         `json:"kernel"` // the kernel in use
	Shapes []summaryShape `json:"shapes"`
	// WorkersSpeedup is the time of Norm.Forward on the larger shape with Workers: 1 over its time
	// with Workers: 2 (0 when GOMAXPROCS is 1).
	WorkersSpeedup float64 `json:"workers2_speedup,omitempty"`
	// DispatchGaps are the shapes of the table where a SIMD kernel was more than 5% faster than
	// the one dispatch picks (dispatchCheck); DispatchChecked says whether the table had two
	// SIMD kernels to compare.
	DispatchGaps    []dispatchGap `json:"dispatch_gaps,omitempty"`
	DispatchChecked bool          `json:"dispatch_checked"`
	DispatchCalls   string        `json:"dispatch_calls,omitempty"` // the table's call, when not the plain float32 Forward
	Measurements    int           `json:"measurements"`             // of the whole run
	Busy            int           `json:"busy_measurements"`        // those whose median round was more than busySpread above the best
}

type summaryShape struct {
	Shape     string  `json:"shape"`
	NsPerRow  float64 `json:"ns_per_row"`                      // Forward on float32 rows with the kernel in use
	XTextbook float64 `json:"x_faster_than_textbook"`          // the textbook loop's time over NsPerRow
	XGeneric  float64 `json:"x_faster_than_generic,omitempty"` // generic's time over NsPerRow (0 if generic is in use)
	BF16      float64 `json:"bf16_time_over_f32"`              // ForwardBF16's time over Forward's, timed in turn with the kernel in use
}

// textbook is RMSNorm as textbooks write it, in plain Go: one float32 accumulator for the sum of
// squares, then per element a divide by the rms and a multiply by the weight. The summary
// compares against it when bench/peers (which has the same loop) did not run on the shape.
func textbook(y, x, w []float32, eps float32) {
	d := len(w)
	for r := 0; r < len(x); r += d {
		var sum float32
		for _, v := range x[r : r+d] {
			sum += v * v
		}
		rms := float32(math.Sqrt(float64(sum/float32(d) + eps)))
		for i, v := range x[r : r+d] {
			y[r+i] = v / rms * w[i]
		}
	}
}

// summaryRivals are what the summary times the forward pass of on each shape: the kernel in
// use, the textbook loop and, unless it is the one in use, generic.
func summaryRivals(active string) []string {
	if active == "generic" {
		return []string{active, "textbook"}
	}
	return []string{active, "textbook", "generic"}
}

// inTable reports whether the table holds what the summary wants of who on s: Forward on float32
// rows with kernel who, or the textbook loop among bench/peers' lines.
func (c config) inTable(s benchutil.Shape, who string) bool {
	if !slices.Contains(c.shapes, s) {
		return false
	}
	if who == "textbook" {
		return c.peers && !c.layernorm // with -layernorm, the peers are LayerNorm ones
	}
	return c.format == "f32" && !c.backward && !c.layernorm && c.workers == 0 && slices.Contains(c.kernels, who)
}

// summaryMeasurements is the number of measurements of the summary: per shape, each rival the
// table does not have, and Forward and ForwardBF16 in turn, then Workers: 2 and 1 if Go sees more
// than one CPU.
func (c config) summaryMeasurements(active string) int {
	n := 0
	for _, s := range summaryShapes {
		for _, who := range summaryRivals(active) {
			if !c.inTable(s, who) {
				n++
			}
		}
		n += 2 // Forward and ForwardBF16, in turn
	}
	if runtime.GOMAXPROCS(0) > 1 {
		n += 2
	}
	return n
}

// forwardNs returns the best ns per row of the forward pass of who on s, from the table if it
// has it, else measured on x, y and w.
func (b *bench) forwardNs(s benchutil.Shape, who string, y, x, w []float32) float64 {
	if b.inTable(s, who) {
		name := who
		if who == "textbook" {
			name = "peer:textbook"
		}
		for _, r := range b.rep.Results {
			if r.Shape == s.String() && r.Kernel == name {
				return r.NsPerRow
			}
		}
	}
	call := func() { rmsnorm.Forward(y, x, w, 1e-6) }
	if who == "textbook" {
		call = func() { textbook(y, x, w, 1e-6) }
	} else {
		mustSetKernel(who)
		defer mustSetKernel(b.rep.Machine.Kernel)
	}
	return b.time(s.String()+" "+who, call).Min / float64(s.Rows)
}

// summarySection measures what the summary needs that the table does not have, and prints it.
func (b *bench) summarySection() {
	m := b.rep.Machine
	sum := &summary{Kernel: m.Kernel}
	for _, s := range summaryShapes {
		x, w := benchutil.Data(s)
		y := slices.Clone(x)
		ns := map[string]float64{}
		for _, who := range summaryRivals(m.Kernel) {
			ns[who] = b.forwardNs(s, who, y, x, w)
		}
		x16 := make([]uint16, len(x))
		rmsnorm.Float32ToBF16(x16, x)
		y16 := slices.Clone(x16)
		// bfloat16 against float32, their rounds in turn, with the kernel in use.
		pair := b.timeEach([]string{s.String() + " Forward, beside ForwardBF16", s.String() + " ForwardBF16"}, []func(){
			func() { rmsnorm.Forward(y, x, w, 1e-6) },
			func() { rmsnorm.ForwardBF16(y16, x16, w, 1e-6) },
		}, nil)
		ss := summaryShape{Shape: s.String(), NsPerRow: ns[m.Kernel], XTextbook: ns["textbook"] / ns[m.Kernel],
			BF16: pair[1].Min / pair[0].Min}
		if m.Kernel != "generic" {
			ss.XGeneric = ns["generic"] / ns[m.Kernel]
		}
		sum.Shapes = append(sum.Shapes, ss)
		if s == summaryShapes[len(summaryShapes)-1] && runtime.GOMAXPROCS(0) > 1 { // Go runs goroutines on that many CPUs at once
			n1, n2 := rmsnorm.Norm{Weight: w, Eps: 1e-6, Workers: 1}, rmsnorm.Norm{Weight: w, Eps: 1e-6, Workers: 2}
			ws := b.timeEach([]string{s.String() + " Workers: 1", s.String() + " Workers: 2"},
				[]func(){func() { n1.Forward(y, x) }, func() { n2.Forward(y, x) }}, nil)
			sum.WorkersSpeedup = ws[0].Min / ws[1].Min
		}
	}
	sum.DispatchGaps, sum.DispatchChecked = dispatchCheck(m, b.rep.Results)
	sum.DispatchCalls = b.tableCalls()
	sum.Measurements = len(b.spreads)
	sum.Busy, _ = b.busy(0)
	b.rep.Summary = sum
	b.printSummary()
}

// printSummary prints the summary in a few plain lines.
func (b *bench) printSummary() {
	m, sum := b.rep.Machine, b.rep.Summary
	one, big := sum.Shapes[0], sum.Shapes[1]
	b.printf("\nsummary:\n")
	switch {
	case len(m.Kernels) == 1:
		b.printf("  kernel in use: generic, the pure-Go kernel (no assembly kernel for this CPU or build)\n")
	case m.Kernel == m.Kernels[0]:
		b.printf("  kernel in use: %s, the best of %s on this CPU\n", m.Kernel, strings.Join(m.Kernels, ", "))
	default:
		b.printf("  kernel in use: %s, set by RMSNORM_KERNEL (the best on this CPU: %s)\n", m.Kernel, m.Kernels[0])
	}
	b.printf("  %s is %s than the textbook loop at %s, %s at %s", m.Kernel, faster(one.XTextbook), one.Shape,
		faster(big.XTextbook), big.Shape)
	if m.Kernel != "generic" {
		b.printf("; %s and %s than generic at the same shapes", faster(one.XGeneric), faster(big.XGeneric))
	}
	b.printf("\n  a %s row costs %.0f ns (Forward, float32, the row hot in cache); a %s batch %.2f ms\n", one.Shape, one.NsPerRow, big.Shape,
		big.NsPerRow*float64(summaryShapes[1].Rows)/1e6)
	b.printf("  bfloat16 rows (ForwardBF16) take %s the time of float32 ones at %s, %s at %s\n", times(one.BF16), one.Shape,
		times(big.BF16), big.Shape)
	for _, l := range dispatchLines(m, b.rep.Results, sum.DispatchGaps, sum.DispatchChecked, sum.DispatchCalls) {
		b.printf("  %s\n", l)
	}
	switch s := sum.WorkersSpeedup; {
	case s == 0:
		b.printf("  Workers cannot help here: Go runs one goroutine at a time (GOMAXPROCS is %d)\n", runtime.GOMAXPROCS(0))
	case s >= 1+busySpread:
		b.printf("  Workers: 2 helps here: a %s Norm.Forward runs %s as fast as on one goroutine\n", big.Shape, times(s))
	default:
		// Rounded down, so that a speedup just short of the bar does not print as the bar itself.
		b.printf("  Workers: 2 does not help here: a %s Norm.Forward runs %s as fast as on one goroutine (the bar for helping is %s)\n",
			big.Shape, times(math.Floor(s*100)/100), times(1+busySpread))
	}
	if sum.Busy > 0 {
		b.warnIfBusy(0, "  ")
	} else {
		b.printf("  all %d measurements steady: each one's median round within %.0f%% of its best\n", sum.Measurements,
			100*busySpread)
	}
}

func mustSetKernel(k string) {
	if err := rmsnorm.SetKernel(k); err != nil {
		panic(err)
	}
}

// faster words r, another call's time over this one's: "4.20x faster", or "1.25x slower" when
// this one took longer (r below 1).
func faster(r float64) string {
	if r < 1 && r > 0 {
		return times(1/r) + " slower"
	}
	return times(r) + " faster"
}
