package rmsnorm

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// The validation sweep: every public entry point that validates its arguments, called on
// buffers placed in arenas (validation_arena_test.go), systematically (validation_cases_test.go):
// from valid calls of several layouts and sets of features, every length off by one (and 0, and
// nil) of every buffer, every N, Stride and DstStride from the edges of the rules to values whose
// span overflows, every Eps, Workers, Dim and flag at the edge, and every ordered pair of buffers
// at every offset where one can overlap the other. The verdict comes from the rules as the
// package documentation states them (validation_oracle_test.go): a call that breaks one must
// panic with a message starting "rmsnorm:" and leave every arena as it was; any other call must
// not panic, and writes only the rows of its outputs. The tests of validation_test.go and its
// siblings check the messages case by case; this one checks the rules over every combination.
// TestWorkersSplitValidation (validation_split_test.go) does the same for calls that split.

// sweepPlan is the size of a sweep.
type sweepPlan struct {
	layouts        []sweepLayout
	features       []sweepFeature // forward and Backward ones
	convertLengths []int          // the conversions' lengths
	fullGrid       bool           // N, Stride and DstStride: every value of the long lists, or of the short ones
	everyOffset    bool           // overlaps at every offset, or at and next to the edges
	extras         bool           // also the overlap sweep in place (Dst = X, DX = DY)
}

// sweepPlanFor returns the plan of a -matrix size:
//   - quick, the default (and -short): five layouts, every set of features, the short lists of
//     N, Stride and DstStride, overlaps at and next to the edges; about 150 000 calls, 0.3 s on
//     two cores;
//   - full: every layout and set of features, the long lists, overlaps at every offset, and in
//     place; about 3.2 million calls, 6 s;
//   - short: full with quick's overlaps; about 900 000 calls;
//   - tiny: three layouts and ten sets of features, as quick otherwise; about 40 000 calls.
func sweepPlanFor(size string) sweepPlan {
	// Between them, the core layouts and features take every path of the package's checks: rows
	// back to back with a plain weight (check.go: forwardRows), with a residual or UnitOffset
	// (packedRows), strided or with Inv or Workers (applyRows), LayerNorm, no weight, Backward's.
	core := []sweepLayout{sweepPacked, sweepStrided, sweepNoRows}
	coreFeatures := []sweepFeature{featurePlain, featureUnitRes, featureResInv, featureLayer, featureNoW, featureWorkers,
		backwardPlain, backwardLayer, backwardNoW, backwardDWAlone}
	switch size {
	case "quick":
		return sweepPlan{
			layouts:        slices.Concat(core, sweepStridedMore[4:5], sweepPackedMore[:1]),
			features:       slices.Concat(coreFeatures, featuresMore, backwardMore),
			convertLengths: []int{0, 1, 8, 9},
		}
	case "full", "short":
		return sweepPlan{
			layouts:        slices.Concat(core, sweepStridedMore, sweepPackedMore),
			features:       slices.Concat(coreFeatures, featuresMore, backwardMore),
			convertLengths: []int{0, 1, 7, 8, 9, 16, 33, 67},
			fullGrid:       true,
			everyOffset:    size == "full",
			extras:         true,
		}
	case "tiny":
		return sweepPlan{layouts: core, features: coreFeatures, convertLengths: []int{0, 1, 9}}
	}
	panic("-matrix must be quick, full, short or tiny, not " + size)
}

// sweepTally counts what a sweep ran: the cases of each entry point the rules call valid and
// invalid, and the cases that broke each rule.
type sweepTally struct {
	valid, invalid map[*entry]int
	broken         map[*rule]int
}

func newSweepTally() *sweepTally {
	return &sweepTally{valid: map[*entry]int{}, invalid: map[*entry]int{}, broken: map[*rule]int{}}
}

func (s *sweepTally) add(o *sweepTally) {
	for k, v := range o.valid {
		s.valid[k] += v
	}
	for k, v := range o.invalid {
		s.invalid[k] += v
	}
	for k, v := range o.broken {
		s.broken[k] += v
	}
}

// maxReported is how many failures a test reports one by one; it counts the rest.
const maxReported = 20

// failures reports what a test finds, up to maxReported of it, from any goroutine.
type failures struct {
	t *testing.T
	n atomic.Int64
}

func (f *failures) report(c *sweepCase, v verdict, what string) {
	if f.n.Add(1) > maxReported {
		return
	}
	says := "no rule is broken"
	if v.broken != nil {
		says = "it breaks the rule: " + v.broken.doc
	}
	f.t.Errorf("%s %s; %s\n\tcase: %s", c.e.name, what, says, c)
}

func (f *failures) done() {
	if n := f.n.Load(); n > maxReported {
		f.t.Errorf("and %d more failures", n-maxReported)
	}
}

// runCase runs c on the arenas and reports a failure; it returns the verdict.
func runCase(a *arenas, c *sweepCase, f *failures) verdict {
	v := rulesVerdict(c)
	a.prepare(c)
	value, panicked := a.call(c)
	if what := a.judge(c, v, value, panicked); what != "" {
		f.report(c, v, what)
	}
	return v
}

func TestValidationMatrix(t *testing.T) {
	plan := sweepPlanFor(matrixSize())
	bases := plan.bases()
	for i := range bases {
		if v := rulesVerdict(&bases[i]); v.broken != nil {
			t.Fatalf("test bug: a base case breaks the rule %q: %s", v.broken.doc, &bases[i])
		}
	}
	// The bases split over a goroutine per core, each with arenas of its own.
	fails := &failures{t: t}
	total := newSweepTally()
	var mu sync.Mutex
	var wg sync.WaitGroup
	parts := runtime.GOMAXPROCS(0)
	for part := range parts {
		wg.Go(func() {
			a, tally := new(arenas), newSweepTally()
			for i := part; i < len(bases); i += parts {
				plan.variants(bases[i], func(c *sweepCase) {
					v := runCase(a, c, fails)
					if v.broken == nil {
						tally.valid[c.e]++
					} else {
						tally.invalid[c.e]++
						tally.broken[v.broken]++
					}
				})
			}
			mu.Lock()
			total.add(tally)
			mu.Unlock()
		})
	}
	wg.Wait()
	fails.done()

	// The sweep reaches what it claims to: valid and invalid calls of every entry point, and a
	// call that breaks each rule.
	cases := 0
	for _, e := range sweepEntries {
		if total.valid[e] == 0 || total.invalid[e] == 0 {
			t.Errorf("%s: %d valid and %d invalid cases: the sweep misses one kind", e.name, total.valid[e], total.invalid[e])
		}
		cases += total.valid[e] + total.invalid[e]
	}
	var counts []string
	for _, r := range allRules {
		if total.broken[r] == 0 {
			t.Errorf("no case of the sweep breaks the rule %q", r.doc)
		}
		counts = append(counts, fmt.Sprintf("%7d %s", total.broken[r], r.doc))
	}
	slices.Sort(counts)
	t.Logf("kernel %s, -matrix=%s: %d cases from %d valid calls; invalid ones by the rule they break:\n%s",
		Kernel(), matrixSize(), cases, len(bases), strings.Join(counts, "\n"))
}

// The sweep's machinery sees what it must: the writes of a call, a panic, and every way an outcome
// can break the rules.
func TestValidationMatrixSelfCheck(t *testing.T) {
	apply := sweepEntries[slices.IndexFunc(sweepEntries, func(e *entry) bool { return e.name == "Norm.Apply" })]
	a := new(arenas)
	for _, l := range []sweepLayout{sweepPacked, sweepStrided} {
		valid, ok := baseCase(apply, l, featureResInv)
		if !ok {
			t.Fatal("test bug: no Norm.Apply case with a Residual and Inv")
		}
		v := rulesVerdict(&valid)
		if v.broken != nil {
			t.Fatalf("%s: the rules call the valid case invalid: %s", l.name, v.broken.doc)
		}
		// A valid call writes Dst, Residual and Inv: the arenas show it, and the judge finds
		// nothing wrong with it.
		a.prepare(&valid)
		value, panicked := a.call(&valid)
		if panicked {
			t.Fatalf("%s: the valid case panicked: %v", l.name, value)
		}
		if a.changed(&valid) == "" {
			t.Errorf("%s: the arenas do not show the writes of a valid call", l.name)
		}
		for _, b := range []arg{argDst, argRes, argInv} { // the first element of each output
			p := valid.bufs[b]
			if slices.Equal(a.mem[p.arena][p.off:p.off+4], a.before[p.arena][p.off:p.off+4]) {
				t.Errorf("%s: the arenas do not show the write of %s", l.name, argNames[b])
			}
		}
		if what := a.judge(&valid, v, value, panicked); what != "" {
			t.Errorf("%s: the valid call is judged wrong: %s", l.name, what)
		}
		// A write between the rows of Dst (or anywhere outside the outputs' rows) is found.
		if l.n > 0 {
			a.prepare(&valid)
			a.call(&valid)
			p := valid.bufs[argDst]
			a.mem[p.arena][p.off+4*v.d] ^= 1 // the first element after Dst's first row
			if what := a.judge(&valid, v, nil, false); what == "" {
				t.Errorf("%s: a write between the rows of Dst is not found", l.name)
			}
		}

		// A call that breaks a rule (Inv one short) panics, and the judge finds nothing wrong.
		short := valid
		short.bufs[argInv].len--
		sv := rulesVerdict(&short)
		if sv.broken != ruleInvLen {
			t.Fatalf("%s: Inv one short: the rules say %v, want %q", l.name, sv.broken, ruleInvLen.doc)
		}
		a.prepare(&short)
		value, panicked = a.call(&short)
		if !panicked {
			t.Fatalf("%s: Inv one short did not panic", l.name)
		}
		if what := a.judge(&short, sv, value, panicked); what != "" {
			t.Errorf("%s: the invalid call is judged wrong: %s", l.name, what)
		}
		// Every way the outcome of that call can be wrong is found.
		outcomes := []struct {
			name     string
			value    any
			panicked bool
			write    bool
		}{
			{"no panic", nil, false, false},
			{"a panic without the prefix", "rmsnorm Norm.Apply: ...", true, false},
			{"a panic with an error", errors.New("rmsnorm: ..."), true, false},
			{"a panic that names no rule", "rmsnorm: Norm.Apply: internal error: the fast check rejected a valid call", true, false},
			{"a runtime error", func() (r any) {
				defer func() { r = recover() }()
				var s []float32
				_ = s[len(s)+1]
				return nil
			}(), true, false},
			{"a write before the panic", "rmsnorm: Norm.Apply: ...", true, true},
		}
		for _, o := range outcomes {
			a.prepare(&short)
			if o.write {
				p := short.bufs[argInv]
				a.mem[p.arena][p.off+3] ^= 0x80
			}
			if what := a.judge(&short, sv, o.value, o.panicked); what == "" {
				t.Errorf("%s: %s is not found", l.name, o.name)
			}
		}
		// And a valid call that panics is.
		if what := a.judge(&valid, v, "rmsnorm: ...", true); what == "" {
			t.Errorf("%s: a panic of a valid call is not found", l.name)
		}
	}
}
