package benchutil

import (
	"slices"
	"testing"
	"time"
)

// TimeEach runs every function, each only after its own prep (the kernel it times is the one its
// prep picked), in rounds that alternate between them in orders that change, and times each.
func TestTimeEachInterleaves(t *testing.T) {
	const n = 3
	picked := -1
	var calls [n]int
	var preps []int // the function each prep ran for, in order
	fs, prep := make([]func(), n), make([]func(), n)
	for i := range n {
		fs[i] = func() {
			if picked != i {
				t.Fatalf("function %d ran with function %d's prep", i, picked)
			}
			calls[i]++
			time.Sleep(time.Microsecond)
		}
		prep[i] = func() { picked = i; preps = append(preps, i) }
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
	// A prep before each function's warm-up, in order, then before each function in each round.
	if len(preps) != n+n*rounds || !slices.Equal(preps[:n], []int{0, 1, 2}) {
		t.Fatalf("the preps ran for %v, want 0 1 2, then each function once per round", preps)
	}
	follows := map[[2]int]bool{} // (a, b): b ran right after a within a round
	for r := range rounds {
		round := preps[n+n*r : n+n*(r+1)]
		if s := slices.Sorted(slices.Values(round)); !slices.Equal(s, []int{0, 1, 2}) {
			t.Fatalf("round %d ran %v", r, round)
		}
		for k := 1; k < n; k++ {
			follows[[2]int{round[k-1], round[k]}] = true
		}
	}
	// The order changes from round to round: some function follows more than one other.
	varied := false
	for b := range n {
		preds := 0
		for a := range n {
			if follows[[2]int{a, b}] {
				preds++
			}
		}
		varied = varied || preds > 1
	}
	if !varied {
		t.Errorf("each function followed the same one in every round: %v", preps[n:])
	}
}

// ParseShapes takes ROWSxD with both >= 1 and nothing else, each shape once, and refuses shapes
// too large to allocate.
func TestParseShapes(t *testing.T) {
	got, err := ParseShapes("1x128,2048x4096,1x128,32768x128")
	if want := []Shape{{1, 128}, {2048, 4096}, {32768, 128}}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("ParseShapes: %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"", "1x128abc", "2x256x9", "x128", "1x", "0x128", "1x0", "-1x128", "1 x128", "1X128",
		"4611686018427387904x2", "536870913x1", "1x536870913", "65536x8193"} {
		if s, err := ParseShapes(bad); err == nil {
			t.Errorf("ParseShapes(%q) = %v, want an error", bad, s)
		}
	}
	if _, err := ParseShapes("65536x8192"); err != nil { // MaxElems exactly
		t.Errorf("ParseShapes(65536x8192): %v", err)
	}
}
