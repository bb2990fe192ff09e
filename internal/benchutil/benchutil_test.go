package benchutil

import (
	"testing"
	"time"
)

// TimeEach runs every function, each only after its own prep (the kernel it times is the one its
// prep picked), in rounds that alternate between them, and times each.
func TestTimeEachInterleaves(t *testing.T) {
	const n = 3
	picked := -1
	var calls [n]int
	var order []int // the function of each run of calls, in order, repeats merged
	fs, prep := make([]func(), n), make([]func(), n)
	for i := range n {
		fs[i] = func() {
			if picked != i {
				t.Fatalf("function %d ran with function %d's prep", i, picked)
			}
			calls[i]++
			if len(order) == 0 || order[len(order)-1] != i {
				order = append(order, i)
			}
			time.Sleep(time.Microsecond)
		}
		prep[i] = func() { picked = i }
	}
	ts := TimeEach(10*time.Millisecond, fs, prep)
	if len(ts) != n {
		t.Fatalf("%d timings for %d functions", len(ts), n)
	}
	for i, tm := range ts {
		if calls[i] < rounds || tm.Min <= 0 || tm.Median < tm.Min {
			t.Errorf("function %d: %d calls, timing %+v", i, calls[i], tm)
		}
	}
	// Each function's warm-up and block search, then the rounds: n runs per round.
	if len(order) != n+n*rounds {
		t.Errorf("the calls ran in %d stretches, want %d (one per function, then one per function and round): %v", len(order), n+n*rounds, order)
	}
	// Round r starts with function r%n.
	for r := range rounds {
		if got := order[n+n*r]; got != r%n {
			t.Errorf("round %d started with function %d, want %d", r, got, r%n)
		}
	}
}
