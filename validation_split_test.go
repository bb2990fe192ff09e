package rmsnorm

import (
	"fmt"
	"slices"
	"testing"
)

// The validation sweep (validation_matrix_test.go) for calls that Norm.Workers splits over
// goroutines: a valid call splits (the runtime's count of goroutines started shows it) and does
// not panic, and a call that breaks a rule panics before any goroutine writes. Every buffer of a
// call lies in one arena, one after the other, so that a buffer can be moved over its
// neighbours' edges.
//
// -matrix=full calls on rows above the real threshold of a split (workerBytes, from the CPU), with
// every length off by one and every ordered pair of buffers overlapping by one element at either
// edge. The other sizes lower the threshold to a byte (splitAll) and make a few calls on short rows.
func TestWorkersSplitValidation(t *testing.T) {
	full := matrixSize() == "full"
	d, rows := 8, 2*gradBlock+1 // Backward splits by blocks of gradBlock rows
	calls := []struct {
		entry   string
		feature sweepFeature
	}{{"Norm.Apply", featureLayer}, {"Norm.Backward", backwardLayer}}
	if full {
		// Rows that split: a split call moves at least 12 bytes per element (float32 x and dst
		// or dy, and the residual or dx), and each goroutine takes a share of workerBytes.
		d = 4096
		rows = int(2*max(workerBytes.forward, workerBytes.backward)/(12*uintptr(d))) + 2*gradBlock
		calls = append(calls, struct {
			entry   string
			feature sweepFeature
		}{"Norm.ApplyToBF16", featureLayer})
	} else {
		splitAll(t)
	}
	l := sweepLayout{name: fmt.Sprintf("%d rows of %d back to back", rows, d), d: d, rows: rows}
	a := new(arenas)
	fails := &failures{t: t}
	for _, call := range calls {
		e := sweepEntries[slices.IndexFunc(sweepEntries, func(e *entry) bool { return e.name == call.entry })]
		f := call.feature
		f.workers = 3
		f.name += ", Workers 3"
		base, ok := baseCase(e, l, f)
		if !ok {
			t.Fatalf("test bug: no %s case with %s", e.name, f.name)
		}
		oneArena(&base)
		if v := rulesVerdict(&base); v.broken != nil {
			t.Fatalf("test bug: the base case breaks the rule %q: %s", v.broken.doc, &base)
		}
		runCase(a, &base, fails)
		// A split call starts at least one goroutine; a stray one of the runtime's is allowed for.
		const n = 3
		if started := goroutinesStarted(t, func() {
			for range n {
				a.call(&base)
			}
		}); started < n {
			t.Errorf("%s: %d valid calls started %d goroutines: they did not split, and the calls below prove nothing\n\tcase: %s",
				e.name, n, started, &base)
		}
		invalid := 0
		for _, c := range splitVariants(base, full) {
			if runCase(a, &c, fails).broken != nil {
				invalid++
			}
		}
		if invalid == 0 {
			t.Errorf("test bug: %s: no variant of the split call breaks a rule", e.name)
		}
		t.Logf("%s, %s: %d variants of a split call, %d of them invalid", e.name, l.name, len(splitVariants(base, full)), invalid)
	}
	fails.done()
}

// oneArena places the buffers of c one after the other in arena 0, with room before the first and
// after the last for any of them.
func oneArena(c *sweepCase) {
	most := 0
	for a, p := range c.bufs {
		most = max(most, p.len*c.e.size(arg(a)))
	}
	off := most + 64
	for a, p := range c.bufs {
		if p.set {
			c.bufs[a].arena, c.bufs[a].off = 0, off
			off += (p.len*c.e.size(arg(a))/64 + 2) * 64
		}
	}
	c.arenaBytes = off + most + 64
}

// splitVariants returns variants of base: every length off by one and every ordered pair of
// buffers overlapping by one element at either edge (full: most break a rule, some do not, such as
// the bias over X), or only Inv one short and Dst's (DX's) first element on X's last.
func splitVariants(base sweepCase, full bool) []sweepCase {
	e := base.e
	var cs []sweepCase
	with := func(change string, mod func(c *sweepCase)) {
		c := base
		c.change = change
		mod(&c)
		cs = append(cs, c)
	}
	overlap := func(a, b arg, first bool) {
		pa, pb := base.bufs[a], base.bufs[b]
		sb := e.size(b)
		off, change := pa.off+pa.len*e.size(a)-sb, "the first element of "+e.argName(b)+" on the last of "+e.argName(a)
		if !first {
			off, change = pa.off-pb.len*sb+sb, "the last element of "+e.argName(b)+" on the first of "+e.argName(a)
		}
		with(change, func(c *sweepCase) { c.bufs[b].off = off })
	}
	if !full {
		with("len(Inv) - 1", func(c *sweepCase) { c.bufs[argInv].len-- })
		overlap(argX, argDst, true)
		return cs
	}
	for a := range numArgs {
		if base.bufs[a].set {
			name := e.argName(arg(a))
			with("len("+name+") - 1", func(c *sweepCase) { c.bufs[a].len-- })
			with("len("+name+") + 1", func(c *sweepCase) { c.bufs[a].len++ })
		}
	}
	for a := range numArgs {
		for b := range numArgs {
			if a != b && base.bufs[a].set && base.bufs[b].set {
				overlap(arg(a), arg(b), true)
				overlap(arg(a), arg(b), false)
			}
		}
	}
	return cs
}
