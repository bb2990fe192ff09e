package main

import (
	"github.com/gosimd/rmsnorm"
	"github.com/gosimd/rmsnorm/internal/benchutil"
)

// The calls the overhead section times, as a user writes them. In apiApplyLiteral and
// apiResidualLiteral the Rows are a literal written in the call; in apiApplyAhead and
// apiResidualAhead they are built before the timing, once per piece of the batch, as a caller
// that keeps them (per layer, say) would.
const (
	apiForward         = "rmsnorm.Forward(y, x, w, eps)"
	apiNormForward     = "Norm.Forward(y, x)"
	apiApplyLiteral    = "Norm.Apply(Rows{Dst: y, X: x})"
	apiApplyAhead      = "Norm.Apply(rows), rows built ahead"
	apiResidualLiteral = "Norm.Apply(Rows{Dst: y, X: x, Residual: r})"
	apiResidualAhead   = "Norm.Apply(rows), with Residual, built ahead"
)

var overheadAPIs = []string{apiForward, apiNormForward, apiApplyLiteral, apiApplyAhead, apiResidualLiteral,
	apiResidualAhead}

// overheadMeasurements is the number of measurements of the overhead section: per shape, the
// kernel alone without and with a residual, and each call.
func overheadMeasurements() int {
	return len(benchutil.Must(benchutil.Overhead)) * (2 + len(overheadAPIs))
}

// overheadBatch is the batch of rows of length d that the calls on a shape of rows x d are
// pieces of: x and y fill at most half of the L2 cache (256 KiB if cpuid does not say), with 16
// to 4096 rows, a multiple of rows.
func overheadBatch(rows, d, l2 int) benchutil.Shape {
	if l2 <= 0 {
		l2 = 256 << 10
	}
	n := min(max(l2/2/(8*d), 16), 4096)
	return benchutil.Shape{Rows: max(n/rows, 1) * rows, D: d}
}

// overheadPieces returns api called on the rows of batch in pieces of rows rows, one call per
// piece, in order.
func overheadPieces(api string, batch benchutil.Shape, rows int) func() {
	x, w := benchutil.Data(batch)
	y := make([]float32, len(x))
	res := append([]float32(nil), x...)
	n := rmsnorm.Norm{Weight: w, Eps: 1e-6}
	per := rows * batch.D
	switch api {
	case apiForward:
		return func() {
			for i := 0; i < len(x); i += per {
				rmsnorm.Forward(y[i:i+per], x[i:i+per], w, 1e-6)
			}
		}
	case apiNormForward:
		return func() {
			for i := 0; i < len(x); i += per {
				n.Forward(y[i:i+per], x[i:i+per])
			}
		}
	case apiApplyLiteral:
		return func() {
			for i := 0; i < len(x); i += per {
				n.Apply(rmsnorm.Rows{Dst: y[i : i+per], X: x[i : i+per]})
			}
		}
	case apiResidualLiteral:
		return func() {
			for i := 0; i < len(x); i += per {
				n.Apply(rmsnorm.Rows{Dst: y[i : i+per], X: x[i : i+per], Residual: res[i : i+per]})
			}
		}
	case apiApplyAhead, apiResidualAhead:
		var rs []rmsnorm.Rows
		for i := 0; i < len(x); i += per {
			r := rmsnorm.Rows{Dst: y[i : i+per], X: x[i : i+per]}
			if api == apiResidualAhead {
				r.Residual = res[i : i+per]
			}
			rs = append(rs, r)
		}
		return func() {
			for _, r := range rs {
				n.Apply(r)
			}
		}
	}
	panic("unknown api " + api)
}

// overheadSection times each call of overheadAPIs on the shapes of benchutil.Overhead. Each call
// normalizes the next piece of a batch of rows of the same length, in cache; the kernel's own
// time for the same rows comes from one call on the whole batch, which spreads that call's own
// cost over all its rows. Both read and write the same memory, so what separates them is the Go
// side of the call and not a cache level.
func (b *bench) overheadSection() {
	b.printf("\ncost of one call, kernel %s:\n", b.rep.Machine.Kernel)
	b.printf("%-10s %-46s %s\n", "shape", "call", minMedianHead("ns/call"))
	for _, s := range benchutil.Must(benchutil.Overhead) {
		batch := overheadBatch(s.Rows, s.D, b.rep.Machine.L2)
		x, w := benchutil.Data(batch)
		y, res := make([]float32, len(x)), append([]float32(nil), x...)
		n := rmsnorm.Norm{Weight: w, Eps: 1e-6}
		// The kernel alone, with and without a residual, and each call, their rounds in turn.
		names := []string{s.String() + " kernel alone", s.String() + " kernel alone, Residual"}
		fs := []func(){
			func() { rmsnorm.Forward(y, x, w, 1e-6) },
			func() { n.Apply(rmsnorm.Rows{Dst: y, X: x, Residual: res}) },
		}
		for _, api := range overheadAPIs {
			names, fs = append(names, s.String()+" "+api), append(fs, overheadPieces(api, batch, s.Rows))
		}
		ts := b.timeEach(names, fs, nil)
		share := float64(s.Rows) / float64(batch.Rows) // the shape's share of one call on the whole batch
		alone, aloneRes := ts[0].Min*share, ts[1].Min*share

		calls := float64(batch.Rows / s.Rows)
		for i, api := range overheadAPIs {
			t := ts[2+i]
			kernel := alone
			if api == apiResidualLiteral || api == apiResidualAhead {
				kernel = aloneRes
			}
			o := overheadRow{Shape: s.String(), API: api, NsPerCall: t.Min / calls, NsPerCallMedian: t.Median / calls,
				KernelNs: kernel, Batch: batch.String()}
			b.rep.Overhead = append(b.rep.Overhead, o)
			b.printf("%-10s %-46s %s\n", o.Shape, o.API, minMedian(o.NsPerCall, o.NsPerCallMedian))
		}
		b.printf("%-10s (kernel alone: %.1f ns, %.1f ns with Residual; the rest of a call is its Go side)\n", "", alone, aloneRes)
	}
	b.printf("\nns/call is what one call costs you; each call normalizes the next piece of a batch of rows in L2 (the\n" +
		"table above times each of its single rows over and over, from whichever cache holds it), and the kernel\n" +
		"alone is the same rows' share of one call on the batch.\n" +
		"Rows{...} is what you pay when you write the Rows literal in the call; \"rows built ahead\" is what you pay\n" +
		"when you build the Rows once (per layer, say) and pass them again, which spares the call a wait for the\n" +
		"literal's stores to reach the cache.\n")
}
