package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gosimd/rmsnorm/internal/benchutil"
)

// dispatchMargin is how much faster another SIMD kernel must be than the one dispatch picks, on
// a shape of the table, for the summary to say that dispatch chose wrongly there: the margin of
// issue 25's goal (no SIMD kernel more than 5% faster than the dispatched one at any shape).
const dispatchMargin = 1.05

// dispatchGap is a shape of the table where a SIMD kernel beat the one dispatch picks by more
// than dispatchMargin in the best rounds.
type dispatchGap struct {
	Shape  string  `json:"shape"`
	Kernel string  `json:"kernel"`            // the faster kernel
	X      float64 `json:"x_time"`            // its best round's time over the dispatched kernel's
	XMed   float64 `json:"x_time_median"`     // the same of the median rounds
	Picked string  `json:"dispatched_kernel"` // the kernel dispatch picks on this CPU
}

// dispatchCheck compares, on every shape of the table, the kernel dispatch picks on this CPU
// (the first of rmsnorm.Kernels) with the other SIMD kernels the table timed, and returns the
// shapes where one of them was more than dispatchMargin faster (the fastest of them per shape),
// and whether there was anything to compare: false when the table has fewer than two SIMD
// kernels, or not the dispatched one.
func dispatchCheck(m machine, results []benchutil.Result) (gaps []dispatchGap, compared bool) {
	simd := m.simdKernels()
	if len(simd) == 0 {
		return nil, false
	}
	picked := simd[0]
	byShape := map[string]map[string]benchutil.Result{}
	var shapes []string
	for _, r := range results {
		if !slices.Contains(simd, r.Kernel) {
			continue // copy(), generic and the peers
		}
		if byShape[r.Shape] == nil {
			byShape[r.Shape] = map[string]benchutil.Result{}
			shapes = append(shapes, r.Shape)
		}
		byShape[r.Shape][r.Kernel] = r
	}
	for _, s := range shapes {
		p, ok := byShape[s][picked]
		if !ok || len(byShape[s]) < 2 {
			continue
		}
		compared = true
		best := dispatchGap{}
		for _, k := range simd { // in dispatch's order, so that ties name the better-ranked one
			r, ok := byShape[s][k]
			if !ok || k == picked {
				continue
			}
			x := r.NsPerRow / p.NsPerRow
			if x*dispatchMargin < 1 && (best.Kernel == "" || x < best.X) {
				best = dispatchGap{Shape: s, Kernel: k, X: x, XMed: r.NsPerRowMedian / p.NsPerRowMedian, Picked: picked}
			}
		}
		if best.Kernel != "" {
			gaps = append(gaps, best)
		}
	}
	return gaps, compared
}

// dispatchLines are the summary's lines on dispatch's choice, each without its indent; results
// are the table's lines, which say why nothing was compared, and calls names the call they timed
// when it is not the plain float32 Forward ("" when it is).
func dispatchLines(m machine, results []benchutil.Result, gaps []dispatchGap, compared bool, calls string) []string {
	table := "the table"
	if calls != "" {
		table = "the table (" + calls + ")"
	}
	simd := m.simdKernels()
	switch {
	case len(simd) == 0:
		return nil
	case len(simd) == 1:
		return []string{fmt.Sprintf("dispatch: %s is the only SIMD kernel this CPU runs: nothing to choose", simd[0])}
	case !compared && !slices.ContainsFunc(results, func(r benchutil.Result) bool { return r.Kernel == simd[0] }):
		return []string{fmt.Sprintf("dispatch: not checked: %s did not time %s, the kernel dispatch picks here (see -kernels)", table, simd[0])}
	case !compared:
		return []string{fmt.Sprintf("dispatch: not checked: %s timed %s beside no other SIMD kernel (see -kernels)", table, simd[0])}
	case len(gaps) == 0:
		return []string{fmt.Sprintf("dispatch: %s, the kernel dispatch picks here, was the fastest SIMD kernel at every shape of %s, or within %.0f%% of it",
			simd[0], table, 100*(dispatchMargin-1))}
	}
	lines := []string{fmt.Sprintf("dispatch: at shapes of %s another SIMD kernel was more than %.0f%% faster than %s, the kernel dispatch picks here:",
		table, 100*(dispatchMargin-1), simd[0])}
	for _, g := range gaps {
		lines = append(lines, fmt.Sprintf("  %s: %s took %s the time (medians %s)", g.Shape, g.Kernel, times(g.X), times(g.XMed)))
	}
	var ks []string // the faster kernels, in dispatch's order
	for _, k := range simd {
		if slices.ContainsFunc(gaps, func(g dispatchGap) bool { return g.Kernel == k }) {
			ks = append(ks, k)
		}
	}
	pick := "picks it"
	if len(ks) > 1 {
		pick = "picks one of them"
	}
	lines = append(lines, fmt.Sprintf("  a rerun that says the same is worth reporting, with the cpu and features lines; for calls of those shapes, RMSNORM_KERNEL=%s %s meanwhile",
		strings.Join(ks, " or RMSNORM_KERNEL="), pick))
	return lines
}
