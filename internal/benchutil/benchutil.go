// Package benchutil is what the bench commands share: shapes, deterministic data, and the timing
// loop. It is internal to the repository (cmd/rmsnormbench and the peers module use it).
package benchutil

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Shape is rows x d.
type Shape struct{ Rows, D int }

func (s Shape) String() string { return fmt.Sprintf("%dx%d", s.Rows, s.D) }

// Standard is the default list of shapes: single rows from short to long, per-head q/k norm
// (32768x128) and a batch of LLaMA-sized rows larger than the cache (2048x4096). The benchmarks of
// the package, the bench command and bench/peers all measure these.
const Standard = "1x128,1x1024,1x4096,1x16384,32768x128,2048x4096"

// Large is a batch of LLaMA-sized rows far larger than any cache (256 MiB of float32 rows): what
// memory bandwidth gives. The package's benchmarks add it to Standard (the bench command takes it
// with -shapes).
const Large = "16384x4096"

// Overhead are the shapes on which the cost of the Go side of a call shows: single rows and a
// small batch of short ones.
const Overhead = "1x128,1x1024,1x4096,32x128"

// Must parses a list of shapes that is known to be valid.
func Must(list string) []Shape {
	s, err := ParseShapes(list)
	if err != nil {
		panic(err)
	}
	return s
}

// MaxElems is the most elements a shape may have: 2 GiB of float32, in each of the few buffers
// a measurement allocates.
const MaxElems = 1 << 29

// ParseShapes parses a comma-separated list of ROWSxD, each shape once in the order of its first
// appearance.
func ParseShapes(list string) ([]Shape, error) {
	var shapes []Shape
	for _, f := range strings.Split(list, ",") {
		r, d, ok := strings.Cut(f, "x")
		var s Shape
		var errR, errD error
		s.Rows, errR = strconv.Atoi(r)
		s.D, errD = strconv.Atoi(d)
		if !ok || errR != nil || errD != nil || s.Rows < 1 || s.D < 1 {
			return nil, fmt.Errorf("bad shape %q: want ROWSxD with both >= 1, e.g. 32768x128", f)
		}
		if s.Rows > MaxElems/s.D {
			return nil, fmt.Errorf("shape %q: more than %d elements (2 GiB of float32)", f, MaxElems)
		}
		if !slices.Contains(shapes, s) {
			shapes = append(shapes, s)
		}
	}
	return shapes, nil
}

// Data returns x uniform in [-1, 1) and w around 1, the same for a shape in every process.
func Data(s Shape) (x, w []float32) {
	x = make([]float32, s.Rows*s.D)
	w = make([]float32, s.D)
	var state uint64 = 0x9e3779b97f4a7c15 ^ uint64(s.Rows*131+s.D)
	next := func() float32 { // xorshift
		state ^= state << 13
		state ^= state >> 7
		state ^= state << 17
		return float32(int32(state>>32)) / (1 << 31)
	}
	for i := range x {
		x[i] = next()
	}
	for i := range w {
		w[i] = 1 + next()/4
	}
	return x, w
}

// Timing is what one measurement found: the nanoseconds per call of its best round and of its
// median round.
type Timing struct{ Min, Median float64 }

// Spread is how much slower the median round was than the best, as a fraction (0.1: 10%). On an
// idle machine the rounds of a call differ by a few percent; a larger spread means that other
// work took a share of the CPU or of its caches while this was timed.
func (t Timing) Spread() float64 { return t.Median/t.Min - 1 }

// rounds is the number of rounds of a measurement.
const rounds = 10

// Time calls f in ten rounds that together last about d (longer when a single call takes more
// than d/10) and returns the nanoseconds per call of the best round, the one least disturbed by
// the rest of the machine, and of the median round.
func Time(d time.Duration, f func()) Timing {
	return TimeEach(d, []func(){f}, nil)[0]
}

// TimeEach measures each of fs as Time does, with their rounds interleaved: round r of every
// function, then round r+1, each round in an order of its own (shuffled, the same on every run),
// so that a change in the machine's load or state during the run (another VM's work, the clock)
// falls on all of them alike, and none runs after the same one round after round (whose dirty
// cache lines it would pay for each time: on one Zen 5 VM, bench-anchors' fixed rotation put the
// avx512 kernel at 1.23x the best C variant's time at 2048x4096, a new order every round at
// 1.10x; bench/results/amd-zen5-turin.txt).
// Comparisons of kernels on a busy machine need that: measured one after the other, the same
// kernel moved 10-30% between measurements on the 2-vCPU VMs this package is measured on. When
// prep is not nil, prep[i] (if not nil) runs before each block search and each round of fs[i],
// outside the time: it picks the kernel fs[i] calls.
func TimeEach(d time.Duration, fs []func(), prep []func()) []Timing {
	before := func(i int) {
		if prep != nil && prep[i] != nil {
			prep[i]()
		}
	}
	// For each function, a block of calls that lasts at least a hundredth of d. Each round then
	// runs blocks until it has lasted a tenth of d: the rounds keep their length even when the
	// machine slowed the search down and made the block too short.
	blocks := make([]int, len(fs))
	for i, f := range fs {
		before(i)
		f() // warm up: page in, fill caches
		block := 1
		for {
			t := time.Now()
			for range block {
				f()
			}
			if time.Since(t) >= d/(10*rounds) || block >= 1<<30 {
				break
			}
			block *= 2
		}
		blocks[i] = block
	}
	ns := make([][]float64, len(fs))
	for i := range ns {
		ns[i] = make([]float64, rounds)
	}
	order := rand.New(rand.NewPCG(1, 2))
	for r := range rounds {
		for _, i := range order.Perm(len(fs)) {
			f, block := fs[i], blocks[i]
			before(i)
			t, calls := time.Now(), 0
			for {
				for range block {
					f()
				}
				calls += block
				if el := time.Since(t); el >= d/rounds {
					ns[i][r] = float64(el.Nanoseconds()) / float64(calls)
					break
				}
			}
		}
	}
	ts := make([]Timing, len(fs))
	for i, n := range ns {
		slices.Sort(n)
		ts[i] = Timing{Min: n[0], Median: (n[rounds/2-1] + n[rounds/2]) / 2}
	}
	return ts
}

// Result is one measurement: an implementation on a shape.
type Result struct {
	Shape    string  `json:"shape"`
	Kernel   string  `json:"kernel"`     // the rmsnorm kernel, "copy()", or a peer's name
	NsPerRow float64 `json:"ns_per_row"` // of the best round
	// NsPerRowMedian is the median round's ns per row.
	NsPerRowMedian float64 `json:"ns_per_row_median,omitempty"`
	GBps           float64 `json:"gb_per_s"`            // the bytes the call moves per second: x read plus y written (the backward: x and dy read, dx written)
	XCopy          float64 `json:"x_copy"`              // time over copy() of the same bytes, measured in the same process
	XF32           float64 `json:"x_float32,omitempty"` // 16-bit rows: time over Forward on the same rows in float32
	// XForward (backward) is the time over Norm.Apply on the same rows with the same kernel.
	XForward float64 `json:"x_forward,omitempty"`
	// XOneWorker (Norm.Workers > 1) is the time over the same call with one goroutine.
	XOneWorker float64 `json:"x_one_worker,omitempty"`
	// XRMSNorm (LayerNorm) is the time over RMSNorm (a Norm with the same weight, without Center
	// and Bias) in the same call on the same rows with the same kernel.
	XRMSNorm float64 `json:"x_rmsnorm,omitempty"`
}
