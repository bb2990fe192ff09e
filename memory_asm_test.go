//go:build (amd64 || arm64) && gc && !purego && !noasm

package rmsnorm

import (
	"testing"

	"github.com/gosimd/rmsnorm/internal/streamrule"
)

// The variables of memory_asm.go as the package set them at init, before any test could change
// them (package variables are initialized after those they read).
var (
	initAheadRows    = aheadRows
	initNextRows     = nextRows
	initNextResidual = nextResidual
	initBackPipe     = backPipe
	initF32Groups    = f32Groups
	initHardwareRows = hardwareRows
)

// TestHostRules holds the machine-dependent variables of memory_asm.go to what streamrule decides
// for this machine, so that the rules measured and documented there are the ones that run: the
// tests set the variables by hand and would not notice one that stopped following its rule.
func TestHostRules(t *testing.T) {
	c := streamrule.Host()
	if want := streamrule.Ahead(c); initAheadRows != want {
		t.Errorf("aheadRows = %v, streamrule.Ahead says %v", initAheadRows, want)
	}
	if lo, hi := streamrule.Next(c); initNextRows != span(lo, hi) {
		t.Errorf("nextRows = %v, streamrule.Next says %d, %d", initNextRows, lo, hi)
	}
	if lo, hi := streamrule.NextResidual(c); initNextResidual != span(lo, hi) {
		t.Errorf("nextResidual = %v, streamrule.NextResidual says %d, %d", initNextResidual, lo, hi)
	}
	if want := streamrule.BackwardPipe(c); initBackPipe != want {
		t.Errorf("backPipe = %v, streamrule.BackwardPipe says %v", initBackPipe, want)
	}
	if want := streamrule.GroupsF32(c); initF32Groups != want {
		t.Errorf("f32Groups = %+v, streamrule.GroupsF32 says %+v", initF32Groups, want)
	}
	for i, wide := range []bool{false, true} {
		if want := streamrule.Hardware(c, wide); initHardwareRows[i] != want {
			t.Errorf("hardwareRows[%d] = %+v, streamrule.Hardware(wide %v) says %+v", i, initHardwareRows[i], wide, want)
		}
	}
}
