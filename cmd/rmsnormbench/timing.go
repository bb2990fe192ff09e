package main

import (
	"fmt"
	"io"
	"math"
	"runtime"

	"github.com/gosimd/rmsnorm/internal/benchutil"
)

// busySpread is the spread (the median round over the best one, minus 1) above which a
// measurement counts as disturbed. The rounds of an undisturbed measurement differ by a few
// percent (the timer, the clock frequency, a memory-bound call's own jitter), so below 10% the
// warning would fire on a quiet machine. Above it, the median round says that other programs
// took a share of the CPU or of its caches during half the rounds or more, and then the best
// round may be off too, by enough to blur the differences the output is read for (kernel against
// kernel or copy(), a Rows literal against Rows built ahead: mostly 20% and more).
const busySpread = 0.10

// bench runs the measurements of one run and prints them.
type bench struct {
	config
	out     io.Writer // where the text goes, line by line
	rep     report
	spreads []spread // every measurement, in order
}

// spread is how much one measurement's median round was slower than its best.
type spread struct {
	what   string
	spread float64
}

// time measures f alone (see benchutil.Time), keeping its spread under the name what.
func (b *bench) time(what string, f func()) benchutil.Timing {
	return b.timeEach([]string{what}, []func(){f}, nil)[0]
}

// timeEach measures fs with their rounds interleaved (see benchutil.TimeEach), prep[i] (if not
// nil) picking the kernel of fs[i], keeping each one's spread under its name in names. The
// kernel left set afterwards is the last prep's.
func (b *bench) timeEach(names []string, fs, prep []func()) []benchutil.Timing {
	ts := benchutil.TimeEach(b.dur, fs, prep)
	for i, t := range ts {
		b.spreads = append(b.spreads, spread{names[i], t.Spread()})
	}
	return ts
}

func (b *bench) printf(format string, args ...any) { fmt.Fprintf(b.out, format, args...) }

// busy returns how many of the measurements from the from-th on have a spread above busySpread,
// and the worst of them.
func (b *bench) busy(from int) (n int, worst spread) {
	for _, s := range b.spreads[from:] {
		if s.spread > busySpread {
			n++
			if s.spread > worst.spread {
				worst = s
			}
		}
	}
	return n, worst
}

// warnIfBusy prints a warning, each line after indent, when measurements from the from-th on
// were disturbed.
func (b *bench) warnIfBusy(from int, indent string) {
	if n, worst := b.busy(from); n > 0 {
		b.printf("%sthis machine looks busy: the numbers may be off; rerun, or close other programs.\n", indent)
		b.printf("%s  (on %d of %d measurements the median round was more than %.0f%% slower than the best round;\n",
			indent, n, len(b.spreads)-from, 100*busySpread)
		b.printf("%s  worst: %s, %.0f%% slower)\n", indent, worst.what, 100*worst.spread)
	}
}

// measurements returns how many measurements the run takes in this process (the calls b.time
// and b.timeEach time),
// and how many bench/peers takes in its own, with active the kernel in use.
func (c config) measurements(active string) (own, peers int) {
	own = c.tableMeasurements()
	if c.variants {
		own += c.variantsMeasurements()
	}
	if c.overhead {
		own += overheadMeasurements()
	}
	if c.summary {
		own += c.summaryMeasurements(active)
	}
	if c.peers {
		// copy() and each peer per shape: the textbook loop, vek, gonum and archsimd (built on
		// amd64 only), or with -layernorm the textbook loop and spago.
		perShape := 4
		switch {
		case c.layernorm:
			perShape = 3
		case runtime.GOARCH == "amd64":
			perShape = 5
		}
		peers = perShape * len(c.shapes)
	}
	return own, peers
}

// printEstimate says how long the run will take: each measurement lasts -duration plus the
// search for its block of calls and the overshoot of its rounds' last blocks (up to a tenth
// more), longer only where one call takes more than a tenth of -duration.
func (b *bench) printEstimate() {
	own, peers := b.measurements(b.rep.Machine.Kernel)
	secs := math.Ceil(float64(own+peers) * 1.1 * b.dur.Seconds())
	extra := ""
	if peers > 0 {
		// bench/peers times its own copy() at each shape, a reference for its lines: it takes
		// its time, but it is not one of the measurements the busy check counts.
		extra = ", with bench/peers' copy() at each shape, plus building bench/peers"
		peers -= len(b.shapes)
	}
	b.printf("run:      %d measurements of about %v each: about %.0f s%s\n\n", own+peers, b.dur, secs, extra)
}
