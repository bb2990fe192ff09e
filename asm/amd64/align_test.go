package main

import (
	"strings"
	"testing"
)

// TestAlignLoops checks that alignLoops aligns the heads of the forward functions' loops, leaves
// the backward functions alone, and refuses a label right before an alignment.
func TestAlignLoops(t *testing.T) {
	const fwd = "\nTEXT ·avx512Forward(SB), NOSPLIT, $0-32\n\tXORQ AX, AX\nscalentloop:\n\tINCQ AX\n"
	got, err := alignLoops([]byte(fwd))
	if err != nil || !strings.Contains(string(got), "\tXORQ AX, AX\n\tPCALIGN $32\nscalentloop:\n") {
		t.Errorf("forward function: %q, %v; want its loop head aligned", got, err)
	}
	const back = "\nTEXT ·avx512Backward(SB), NOSPLIT, $0-32\n\tXORQ AX, AX\nsumloop:\n\tINCQ AX\n"
	if got, err := alignLoops([]byte(back)); err != nil || string(got) != back {
		t.Errorf("backward function: %q, %v; want it unchanged", got, err)
	}
	for _, between := range []string{"", "\t// a comment\n", "\n"} {
		label := "\nTEXT ·avx512Forward(SB), NOSPLIT, $0-32\n\tJZ skip\n\tNOP\nskip:\n" + between + "scalentloop:\n\tINCQ AX\n"
		if _, err := alignLoops([]byte(label)); err == nil || !strings.Contains(err.Error(), "skip:") {
			t.Errorf("a label right before a loop head (%q between): error %v, want one naming the label", between, err)
		}
	}
}
