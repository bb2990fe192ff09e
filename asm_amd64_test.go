//go:build amd64 && gc && !purego && !noasm

package rmsnorm

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/cpuid/v2"
)

// The ISA audit: a kernel may use nothing that its dispatch predicate does not check. Avo writes
// the instruction-set extensions each function needs into a "// Requires:" line; these tests hold
// those lines equal to kernelFeatures, and check the register rules that Avo's lines cannot see.

// asmFunc is one TEXT block of rmsnorm_amd64.s.
type asmFunc struct {
	name     string
	requires []string
	lines    []string // instructions
}

func parseAsm(t *testing.T) []asmFunc {
	t.Helper()
	src, err := os.ReadFile("rmsnorm_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	var fns []asmFunc
	var requires []string
	for _, line := range strings.Split(string(src), "\n") {
		switch {
		case strings.HasPrefix(line, "// Requires: "):
			requires = strings.Split(strings.TrimPrefix(line, "// Requires: "), ", ")
		case strings.HasPrefix(line, "TEXT ·"):
			name := strings.TrimPrefix(line, "TEXT ·")
			name = name[:strings.Index(name, "(SB)")]
			fns = append(fns, asmFunc{name: name, requires: requires})
			requires = nil
		case strings.HasPrefix(line, "\t") && len(fns) > 0:
			if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "//") {
				fns[len(fns)-1].lines = append(fns[len(fns)-1].lines, l)
			}
		}
	}
	if len(fns) == 0 {
		t.Fatal("no functions in rmsnorm_amd64.s")
	}
	return fns
}

// avoISA maps the names in Avo's Requires lines to cpuid features. Avo files SFENCE under MMX+
// (AMD's MMX extensions); it belongs to SSE as well, which is what dispatch checks.
var avoISA = map[string]cpuid.FeatureID{
	"AVX":      cpuid.AVX,
	"AVX2":     cpuid.AVX2,
	"AVX512F":  cpuid.AVX512F,
	"AVX512BW": cpuid.AVX512BW,
	"MMX+":     cpuid.SSE,
	"F16C":     cpuid.F16C,
}

func kernelOf(fn string) kernelID {
	switch {
	case strings.HasPrefix(fn, "avx512"):
		return kernelAVX512
	case strings.HasPrefix(fn, "avx2"):
		return kernelAVX2
	}
	return kernelGeneric
}

// Each function may require only what its kernel's dispatch predicate checks, and together the
// functions of a kernel require all of it: the predicate asks for nothing the code does not use.
func TestAsmRequiresMatchDispatch(t *testing.T) {
	used := map[kernelID][]cpuid.FeatureID{}
	for _, fn := range parseAsm(t) {
		k := kernelOf(fn.name)
		want, ok := kernelFeatures[k]
		if !ok {
			// callKernel, the jump to a kernel's function, runs on every amd64 CPU.
			if len(fn.requires) > 0 {
				t.Errorf("%s belongs to no kernel with a dispatch predicate, but requires %v", fn.name, fn.requires)
			}
			continue
		}
		for _, r := range fn.requires {
			f, ok := avoISA[r]
			if !ok || !slices.Contains(want, f) {
				t.Errorf("%s requires %s, which dispatch does not check for %s", fn.name, r, k)
				continue
			}
			if !slices.Contains(used[k], f) {
				used[k] = append(used[k], f)
			}
		}
	}
	for k, want := range kernelFeatures {
		got := slices.Clone(used[k])
		slices.Sort(got)
		w := slices.Clone(want)
		slices.Sort(w)
		if !slices.Equal(got, w) {
			t.Errorf("the %s functions together require %v; dispatch checks %v", k, got, w)
		}
	}
}

var (
	highVec   = regexp.MustCompile(`\b[XY](1[6-9]|2[0-9]|3[01])\b`)
	avx512Reg = regexp.MustCompile(`\b(Z[0-9]+|K[0-7])\b`)
	ymmReg    = regexp.MustCompile(`\bY[0-9]+\b`)
	zmmReg    = regexp.MustCompile(`\bZ[0-9]+\b`)
	xmmReg    = regexp.MustCompile(`\bX[0-9]+\b`)
)

// avx512HalfOK are the instructions the AVX-512 kernel may give a YMM operand: the 512-bit forms
// that narrow sixteen float32 lanes into 16-bit lanes or widen them back (and join two such
// halves), which AVX-512F encodes for Y0-Y31 without AVX-512VL.
var avx512HalfOK = map[string]bool{"VPMOVDW": true, "VCVTPS2PH": true, "VCVTPH2PS": true, "VINSERTI64X4": true}

// avx512ScalarOK are the instructions the AVX-512 kernel may apply to XMM registers: scalar forms
// and the broadcast from a register, all of which AVX-512F encodes for X0-X31.
var avx512ScalarOK = map[string]bool{
	"VADDSS": true, "VSUBSS": true, "VMULSS": true, "VDIVSS": true, "VSQRTSS": true,
	"VMOVSS": true, "VUCOMISS": true, "VBROADCASTSS": true, "VCVTSI2SSQ": true,
}

func TestAsmRegisterRules(t *testing.T) {
	for _, fn := range parseAsm(t) {
		for _, l := range fn.lines {
			op := strings.Fields(l)[0]
			switch kernelOf(fn.name) {
			case kernelAVX2:
				// X16-X31, Y16-Y31, ZMM and mask registers would all need EVEX, that is AVX-512.
				if highVec.MatchString(l) || avx512Reg.MatchString(l) {
					t.Errorf("%s: %q needs AVX-512", fn.name, l)
				}
			case kernelAVX512:
				// XMM/YMM forms of EVEX instructions need AVX-512VL, and VEX-only instructions
				// cannot name X16-X31: vector work stays on ZMM, XMM only in scalar instructions.
				if ymmReg.MatchString(l) && !(avx512HalfOK[op] && zmmReg.MatchString(l)) {
					t.Errorf("%s: %q uses a YMM register", fn.name, l)
				}
				if xmmReg.MatchString(l) && !avx512ScalarOK[op] {
					t.Errorf("%s: %q uses an XMM register outside a scalar instruction", fn.name, l)
				}
			}
		}
	}
}
