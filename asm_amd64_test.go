//go:build amd64 && gc && !purego && !noasm

package rmsnorm

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
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
	lines    []string // instructions (those written as BYTEs by their comment), one space between fields
}

// asmSource returns the text of the generated rmsnorm_amd64.s.
func asmSource(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("rmsnorm_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

func parseAsm(t *testing.T) []asmFunc {
	t.Helper()
	var fns []asmFunc
	var requires []string
	for _, line := range strings.Split(asmSource(t), "\n") {
		switch {
		case strings.HasPrefix(line, "// Requires: "):
			requires = strings.Split(strings.TrimPrefix(line, "// Requires: "), ", ")
		case strings.HasPrefix(line, "TEXT ·"):
			name := strings.TrimPrefix(line, "TEXT ·")
			name = name[:strings.Index(name, "(SB)")]
			fns = append(fns, asmFunc{name: name, requires: requires})
			requires = nil
		case strings.HasPrefix(line, "\t") && len(fns) > 0:
			l := strings.TrimSpace(line)
			if b, instr, ok := strings.Cut(l, " // "); ok && strings.HasPrefix(b, "BYTE ") {
				l = instr // an instruction the assembler does not know, as bytes (asm/amd64/bf16cvt.go)
			}
			if l != "" && !strings.HasPrefix(l, "//") {
				// Avo pads operands into columns; one space apart, lines compare as written.
				l = strings.Join(strings.Fields(l), " ")
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
// (AMD's MMX extensions); it belongs to SSE as well, which is what dispatch checks. STMXCSR and
// LDMXCSR (the avx512bf16 functions: asm/amd64/bf16flags.go) are SSE's.
var avoISA = map[string]cpuid.FeatureID{
	"AVX":        cpuid.AVX,
	"AVX2":       cpuid.AVX2,
	"AVX512F":    cpuid.AVX512F,
	"AVX512BW":   cpuid.AVX512BW,
	"AVX512DQ":   cpuid.AVX512DQ,
	"AVX512BF16": cpuid.AVX512BF16,
	"MMX+":       cpuid.SSE,
	"SSE":        cpuid.SSE,
	"F16C":       cpuid.F16C,
}

// kernelOf returns the register rules a function follows (TestAsmRegisterRules): those of
// kernelAVX512 for every AVX-512 function, the avx512bf16 ones included, or of kernelAVX2.
func kernelOf(fn string) kernelID {
	switch {
	case strings.HasPrefix(fn, "avx512"):
		return kernelAVX512
	case strings.HasPrefix(fn, "avx2"):
		return kernelAVX2
	}
	return kernelGeneric
}

var (
	convCase = regexp.MustCompile(`case uint\((kernel\w+)\)\*numConvOps \+ uint\(conv\w+\):\s+(\w+)\(dst, src, n\)`)
)

// asmTable returns the n entries of the table name<> of rmsnorm_amd64.s (DATA lines of function
// addresses, 8 bytes each), in their order.
func asmTable(t *testing.T, name string, n int) []string {
	t.Helper()
	s := asmSource(t)
	line := regexp.MustCompile(`^DATA ` + name + `<>\+(\d+)\(SB\)/8, \$·(\w+)\(SB\)$`)
	table := make([]string, n)
	found := 0
	for _, l := range strings.Split(s, "\n") {
		if m := line.FindStringSubmatch(l); m != nil {
			off, _ := strconv.Atoi(m[1])
			if off%8 != 0 || off/8 >= n || table[off/8] != "" {
				t.Fatalf("the table %s<> has an entry at +%d, for %d entries", name, off, n)
			}
			table[off/8] = m[2]
			found++
		}
	}
	if found != n {
		t.Fatalf("the table %s<> has %d entries, want %d", name, found, n)
	}
	return table
}

// kernelTable returns the table callKernel jumps through (rmsnorm_amd64.s): for each kernel, the
// function of each entry (variant).
func kernelTable(t *testing.T) [][numEntries]string {
	t.Helper()
	flat := asmTable(t, "kernels", len(kernelNames)*numEntries)
	table := make([][numEntries]string, len(kernelNames))
	for i, fn := range flat {
		table[i/numEntries][i%numEntries] = fn
	}
	return table
}

// The core-matrix tests leave out kernelAVX512 where it repeats kernelAVX512BF16 (repeats): on
// rows of every format but bfloat16 out, float32 and the backward, the two run the same functions.
// And each kernel runs a function of its own for bfloat16 out, so that where repeats is false the
// two runs do differ.
func TestAsmSharedFunctions(t *testing.T) {
	table := kernelTable(t)
	a, b := table[kernelAVX512], table[kernelAVX512BF16]
	saved := slices.Contains(testKernels(), kernelAVX512BF16)
	for v := range variant(numEntries) {
		f := formatF32 // the backward entries
		if v < numVariants {
			f = variantFormat(t, v)
		}
		same := a[v] == b[v]
		if out := f.out() == formatBF16; same == out {
			t.Errorf("entry %d (%s rows): avx512 runs %s, avx512+bf16 %s", v, fname(f), a[v], b[v])
		}
		if saved && repeats(kernelAVX512, f) != same {
			t.Errorf("entry %d (%s rows): repeats(avx512) = %v, but the two kernels' functions same = %v", v, fname(f), repeats(kernelAVX512, f), same)
		}
	}
}

// variantFormat returns the storage format of forward variant v, from forwardVariant and
// layerVariant.
func variantFormat(t *testing.T, v variant) format {
	t.Helper()
	for f := range forwardVariant {
		for _, byWeight := range [][3][2]variant{forwardVariant[f], layerVariant[f]} {
			for _, pair := range byWeight {
				if slices.Contains(pair[:], v) {
					return format(f)
				}
			}
		}
	}
	t.Fatalf("variant %d is in neither forwardVariant nor layerVariant", v)
	return 0
}

// rowTable returns the table callRow+kind jumps through (rmsnorm_amd64.s), rows+kind<> for kind
// of spec.RowKinds ("" for callRow's, rows<>): each kernel's row function of that kind, noRow for
// a kernel without one.
func rowTable(t *testing.T, kind string) []string {
	t.Helper()
	return asmTable(t, "rows"+kind, len(kernelNames))
}

// rowKinds are spec.RowKinds, which the tests below go through.
var rowKinds = []string{"", "F16", "F16Buf", "BF16", "F16RN", "BF16RN"}

// The kernels that have row functions are those whose table rows hold their own one-row path:
// avx512 (and kernelAVX512BF16, which runs its float32 and float16 functions) and avx2, for
// float32 rows (callRow) and binary16 rows (callRowF16); avx512 alone for binary16 rows through a
// float32 copy (callRowF16Buf); and for bfloat16 rows (callRowBF16) the two AVX-512 kernels, each
// its own; the same for the rows of RoundNormalized (callRowF16RN as callRowF16, callRowBF16RN as
// callRowBF16); the others have noRow.
func TestRowTable(t *testing.T) {
	var kinds []string // the callRow+kind jumps rmsnorm_amd64.s defines
	for _, fn := range parseAsm(t) {
		if kind, ok := strings.CutPrefix(fn.name, "callRow"); ok {
			kinds = append(kinds, kind)
		}
	}
	if slices.Sort(kinds); !slices.Equal(kinds, slices.Sorted(slices.Values(rowKinds))) {
		t.Errorf("rmsnorm_amd64.s has callRow+kind for the kinds %q; rowKinds are %q", kinds, rowKinds)
	}
	for _, kind := range rowKinds {
		want := map[kernelID]string{kernelGeneric: "noRow", kernelNEON: "noRow", kernelAVX2: "avx2Row" + kind,
			kernelAVX512: "avx512Row" + kind, kernelAVX512BF16: "avx512Row" + kind}
		switch kind {
		case "F16Buf":
			want[kernelAVX2] = "noRow"
		case "BF16", "BF16RN":
			want[kernelAVX2], want[kernelAVX512BF16] = "noRow", "avx512bf16Row"+kind
		}
		for k, fn := range rowTable(t, kind) {
			if fn != want[kernelID(k)] {
				t.Errorf("callRow%s jumps to %s for %s (%d), want %s", kind, fn, kernelID(k), k, want[kernelID(k)])
			}
		}
	}
}

// kernelFuncs returns, for each kernel, the functions it runs: its row of the table callKernel
// jumps through (rmsnorm_amd64.s), its row functions (the tables of callRow+kind) and the conversions
// convertAsm calls for it (rmsnorm_amd64.go).
func kernelFuncs(t *testing.T) map[kernelID][]string {
	t.Helper()
	fns := map[kernelID][]string{}
	add := func(k kernelID, fn string) {
		if !slices.Contains(fns[k], fn) {
			fns[k] = append(fns[k], fn)
		}
	}
	for k, row := range kernelTable(t) {
		for _, fn := range row {
			add(kernelID(k), fn)
		}
	}
	for _, kind := range rowKinds {
		for k, fn := range rowTable(t, kind) {
			if fn != "noRow" {
				add(kernelID(k), fn)
			}
		}
	}
	g, err := os.ReadFile("rmsnorm_amd64.go")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]kernelID{"kernelAVX512": kernelAVX512, "kernelAVX2": kernelAVX2, "kernelAVX512BF16": kernelAVX512BF16}
	n := 0
	for _, m := range convCase.FindAllStringSubmatch(string(g), -1) {
		k, ok := ids[m[1]]
		if !ok {
			t.Fatalf("convertAsm has a case for %s", m[1])
		}
		add(k, m[2])
		n++
	}
	if n != 3*numConvOps {
		t.Fatalf("convertAsm has %d cases, want %d for each of 3 kernels", n, numConvOps)
	}
	return fns
}

// Each function may require only what the dispatch predicate of every kernel that runs it checks
// (the functions of its row of the table, and its conversions), and together the functions a
// kernel runs require all of it: the predicate asks for nothing the code does not use. Every
// function but the jumps (callKernel, callRow) and noRow is run by some kernel.
func TestAsmRequiresMatchDispatch(t *testing.T) {
	requires := map[string][]string{}
	for _, fn := range parseAsm(t) {
		requires[fn.name] = fn.requires
		// callKernel and callRow+kind, the jumps to a kernel's functions, and noRow run on every
		// amd64 CPU.
		if (fn.name == "callKernel" || strings.HasPrefix(fn.name, "callRow") || fn.name == "noRow") && len(fn.requires) > 0 {
			t.Errorf("%s requires %v", fn.name, fn.requires)
		}
	}
	runs := kernelFuncs(t)
	ran := map[string]bool{"callKernel": true, "noRow": true}
	for _, kind := range rowKinds {
		ran["callRow"+kind] = true
	}
	for k := range kernelNames {
		k := kernelID(k)
		want, ok := kernelFeatures[k]
		var used []cpuid.FeatureID
		for _, fn := range runs[k] {
			ran[fn] = true
			rs, asm := requires[fn]
			switch {
			case !asm && strings.HasPrefix(fn, "runGeneric"):
				continue // Go
			case !asm:
				t.Fatalf("%s runs %s, which rmsnorm_amd64.s does not define", k, fn)
			case !ok:
				t.Errorf("%s, which has no dispatch predicate, runs %s", k, fn)
				continue
			}
			for _, r := range rs {
				f, ok := avoISA[r]
				if !ok || !slices.Contains(want, f) {
					t.Errorf("%s runs %s, which requires %s, which dispatch does not check for %s", k, fn, r, k)
					continue
				}
				if !slices.Contains(used, f) {
					used = append(used, f)
				}
			}
		}
		if !ok {
			continue
		}
		slices.Sort(used)
		w := slices.Clone(want)
		slices.Sort(w)
		if !slices.Equal(used, w) {
			t.Errorf("the functions %s runs together require %v; dispatch checks %v", k, used, w)
		}
	}
	for fn := range requires {
		if !ran[fn] {
			t.Errorf("no kernel runs %s", fn)
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

// flagTesters returns the functions of rmsnorm_amd64.s that test flag in the job's flags.
func flagTesters(t *testing.T, flag int) []string {
	t.Helper()
	test := fmt.Sprintf("TESTL $0x%08x, job_flags+0(AX)", flag)
	var got []string
	for _, fn := range parseAsm(t) {
		for _, l := range fn.lines {
			if l == test {
				got = append(got, fn.name)
				break
			}
		}
	}
	slices.Sort(got)
	return got
}

// TestAsmPipe holds the functions that test flagPipe to those pipeKernel names: the float32
// forward functions of avx2 and avx512 (RMSNorm's and LayerNorm's) and avx2's ApplyToF16 and
// ApplyF16 ones; and to avx2's two RMSNorm backward functions (streamrule.BackwardPipe).
// The pipe gives the bits of the loops without it, so no other test notices a function that
// lost it, or one that tests the flag without having it.
func TestAsmPipe(t *testing.T) {
	var want []string
	for _, k := range []kernelID{kernelAVX2, kernelAVX512} {
		for f, suffix := range map[format]string{formatF32: "", formatToF16: "ToF16", formatBF16: "BF16", formatToBF16: "ToBF16", formatF16: "F16"} {
			if pipeKernel(k, f) {
				want = append(want, k.name()+"Forward"+suffix, k.name()+"ForwardLayer"+suffix)
			}
		}
	}
	want = append(want, "avx2Backward", "avx2BackwardUnweighted")
	slices.Sort(want)
	if got := flagTesters(t, flagPipe); len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("the functions that test flagPipe are %q, want %q", got, want)
	}
}

// TestAsmNextResidualRow checks the address the forward functions prefetch under flagNext: the
// register that SETNE's mask keeps must have been copied from the job's x (the register the
// prologue loads job_res into and then exchanges, so that it holds x), and a prefetch must read
// through it. A prefetch of the wrong row changes no bit, so no other test would notice.
func TestAsmNextResidualRow(t *testing.T) {
	n := 0
	for _, fn := range parseAsm(t) {
		if strings.Contains(fn.name, "Backward") {
			continue
		}
		x := "" // the register that holds the job's x after the prologue
		for i, l := range fn.lines {
			if r, ok := strings.CutPrefix(l, "MOVQ job_res+0(AX), "); ok && x == "" {
				x = r
			}
			if !strings.HasPrefix(l, "SETNE ") {
				continue
			}
			n++
			// XORL m, m; TESTL flag; SETNE m; NEGQ m; ANDQ m, p, with p = x + offset before it.
			var p, src string
			if i+2 < len(fn.lines) {
				if a, ok := strings.CutPrefix(fn.lines[i+2], "ANDQ "); ok {
					_, p, _ = strings.Cut(a, ", ")
				}
			}
			for k := i - 1; k >= 0 && k >= i-6; k-- {
				if a, ok := strings.CutPrefix(fn.lines[k], "MOVQ "); ok {
					if from, to, _ := strings.Cut(a, ", "); to == p {
						src = from
						break
					}
				}
			}
			if p == "" || x == "" || src != x {
				t.Errorf("%s: the row flagNext prefetches starts from %q (kept in %q); the job's x is in %q", fn.name, src, p, x)
				continue
			}
			used := false
			for _, a := range fn.lines[i:] {
				if strings.HasPrefix(a, "PREFETCHT0 ") && strings.Contains(a, "("+p+")") {
					used = true
					break
				}
			}
			if !used {
				t.Errorf("%s: no prefetch reads through %s", fn.name, p)
			}
		}
	}
	if n == 0 {
		t.Fatal("no forward function masks its flagNext row with SETNE")
	}
}

// TestAsmAhead holds the functions that test flagAhead to the float32 backward functions of avx2
// and avx512, and those that test flagNext to the same and to the forward functions of float32
// rows in (into float32 or 16-bit rows, RMSNorm's and LayerNorm's: their scale pass prefetches a
// residual job's next row of x under it): prefetches, which like the pipe change no bit, so that
// no other test notices a function that lost the test, or one that gained it.
func TestAsmAhead(t *testing.T) {
	var ahead, next []string
	for _, k := range []kernelID{kernelAVX2, kernelAVX512} {
		for _, fn := range []string{"Backward", "BackwardUnweighted", "BackwardLayer", "BackwardLayerUnweighted"} {
			ahead = append(ahead, k.name()+fn)
		}
		for _, fn := range []string{"Forward", "ForwardToBF16", "ForwardToF16", "ForwardLayer", "ForwardLayerToBF16", "ForwardLayerToF16"} {
			next = append(next, k.name()+fn)
		}
	}
	next = append(next, "avx512bf16ForwardToBF16", "avx512bf16ForwardLayerToBF16")
	next = append(next, ahead...)
	slices.Sort(ahead)
	slices.Sort(next)
	for _, f := range []struct {
		name string
		bit  int
		want []string
	}{{"flagAhead", flagAhead, ahead}, {"flagNext", flagNext, next}} {
		if got := flagTesters(t, f.bit); !slices.Equal(got, f.want) {
			t.Errorf("the functions that test %s are %q, want %q", f.name, got, f.want)
		}
	}
}

// TestAsmGroups holds the functions that test flagGroups to the AVX-512 forward functions
// (avx512's and avx512bf16's, RMSNorm's and LayerNorm's, every format). The groups give the bits
// of the rows alone, so no other test notices a function that lost the test, or one that gained
// it.
func TestAsmGroups(t *testing.T) {
	want := []string{"avx512Forward", "avx512ForwardLayer"}
	for _, suffix := range []string{"BF16", "F16", "ToBF16", "ToF16"} {
		want = append(want, "avx512Forward"+suffix, "avx512ForwardLayer"+suffix)
		if strings.Contains(suffix, "BF16") {
			want = append(want, "avx512bf16Forward"+suffix, "avx512bf16ForwardLayer"+suffix)
		}
	}
	slices.Sort(want)
	if got := flagTesters(t, flagGroups); !slices.Equal(got, want) {
		t.Errorf("the functions that test flagGroups are %q, want %q", got, want)
	}
}

// TestAsmRows holds the functions that compare the job's flags with flagRows (the one-row path's
// loop over every row in cache) and with flagRows|flagNT|flagPF (its streamed loop) to the
// float32 forward functions of avx2 and avx512 (RMSNorm's), the ones with that path. The loops
// give the bits of the groups, so no other test notices a function that lost one.
func TestAsmRows(t *testing.T) {
	want := []string{kernelAVX2.name() + "Forward", kernelAVX512.name() + "Forward"}
	slices.Sort(want)
	for _, flags := range []uint32{flagRows, flagRows | flagNT | flagPF} {
		cmp := regexp.MustCompile(fmt.Sprintf(`^CMPL\s+[A-Z0-9]+, \$0x%08x$`, flags))
		var got []string
		for _, fn := range parseAsm(t) {
			if slices.ContainsFunc(fn.lines, cmp.MatchString) {
				got = append(got, fn.name)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("the functions that compare their flags with %#x are %q, want %q", flags, got, want)
		}
	}
}

// TestAsmHardware holds the functions with non-temporal scale loops that do not prefetch, which a
// row takes when flagPF is clear (a test of flagPF and a branch to them: the rows left to the
// hardware prefetchers, flagNT without flagPF; see leftToHardware) to RMSNorm's float32 forward
// functions into float32 and 16-bit rows, the ones the Go side may give that combination; and
// that every function of float32 rows in has a non-temporal loop per weight form that prefetches.
// A prefetch cannot change the bits, so no other test notices a function whose loops lost the
// choice, or a loop that prefetches where it should not (or the other way round).
func TestAsmHardware(t *testing.T) {
	var want []string
	for _, k := range []string{"avx2", "avx512"} {
		want = append(want, k+"Forward", k+"ForwardToBF16", k+"ForwardToF16")
	}
	want = append(want, "avx512bf16ForwardToBF16")
	slices.Sort(want)
	// The non-temporal loops of float32 rows, one per weight form, each starting at its bound
	// check: those chosen with flagPF (from scalentgo; in every function with a loop for each
	// form) prefetch, and in the functions with loops chosen without it (from scalenthw, which a
	// test of flagPF branches to, to scaletail) those store and do not prefetch.
	choice := regexp.MustCompile(fmt.Sprintf(`\tTESTL\s+\$0x%08x, \w+\n\tJZ\s+scalenthw\n`, flagPF))
	bound := regexp.MustCompile(`\tJG\s+scaletail\n`)
	loops := func(seg string) []string { return bound.Split(seg, -1)[1:] }
	var hardware []string
	for _, fn := range strings.Split(asmSource(t), "\nTEXT ·")[1:] {
		name, _, _ := strings.Cut(fn, "(SB)")
		_, rest, ok := strings.Cut(fn, "\nscalentgo:\n")
		if !ok {
			continue
		}
		rest, _, _ = strings.Cut(rest, "\nscaletail:\n")
		with, without, hw := strings.Cut(rest, "\nscalenthw:\n")
		if hw {
			hardware = append(hardware, name)
			if !choice.MatchString(with) {
				t.Errorf("%s: its non-temporal loops without the prefetch are not chosen by flagPF", name)
			}
		}
		if !strings.Contains(with, "\nscalentloopoffset:\n") {
			continue // 16-bit rows in: one non-temporal loop for every form
		}
		for i, l := range loops(with) {
			if !strings.Contains(l, "PREFETCHT0") {
				t.Errorf("%s: non-temporal loop %d chosen with flagPF does not prefetch", name, i)
			}
		}
		if n := len(loops(with)); n != 3 {
			t.Errorf("%s: %d non-temporal loops chosen with flagPF, want one per weight form", name, n)
		}
		if !hw {
			continue
		}
		for i, l := range loops(without) {
			if strings.Contains(l, "PREFETCH") || !strings.Contains(l, "VMOVNT") {
				t.Errorf("%s: non-temporal loop %d chosen without flagPF prefetches or has no non-temporal store", name, i)
			}
		}
		if n := len(loops(without)); n != 3 {
			t.Errorf("%s: %d non-temporal loops chosen without flagPF, want one per weight form", name, n)
		}
	}
	slices.Sort(hardware)
	if !slices.Equal(hardware, want) {
		t.Errorf("the functions with non-temporal loops without the prefetch are %q, want %q", hardware, want)
	}
}

// TestAsmNonTemporalFenced holds every non-temporal store to an SFENCE before the function
// returns, on every path: non-temporal stores are weakly ordered, so without the fence another
// goroutine (a worker's caller, the next call's reader) could see the rows before the stores
// reach them. A walk of each function's control flow from each VMOVNT* to every RET it can reach
// without passing an SFENCE. One branch is taken as the kernels use it: the epilogue's JZ past its
// fence (the instruction before the JZ's target is the SFENCE) right after a test of flagNT in
// the job's flags, which a function that stored non-temporally never takes, since the kernels
// choose their non-temporal loops under flagNT alone.
func TestAsmNonTemporalFenced(t *testing.T) {
	jump := regexp.MustCompile(`^(J[A-Z]+) (\w+)$`)
	register := regexp.MustCompile(`^[A-Z][A-Z0-9]*$`)
	ntTest := fmt.Sprintf("TESTL $0x%08x, job_flags+0(", flagNT)
	stores := 0
	for _, fn := range strings.Split(asmSource(t), "\nTEXT ·")[1:] {
		name, _, _ := strings.Cut(fn, "(SB)")
		var ins []string
		at := map[string]int{} // label -> index of the instruction after it
		for _, line := range strings.Split(fn, "\n")[1:] {
			l := strings.TrimSpace(line)
			if b, instr, ok := strings.Cut(l, " // "); ok && strings.HasPrefix(b, "BYTE ") {
				l = instr
			} else if ok {
				l = b // an instruction with a comment
			}
			switch {
			case l == "" || strings.HasPrefix(l, "//"):
			case !strings.HasPrefix(line, "\t"): // a label (maybe with a comment), or DATA and GLOBL
				if label, _, _ := strings.Cut(l, " //"); strings.HasSuffix(label, ":") {
					at[strings.TrimSuffix(label, ":")] = len(ins)
				}
			default:
				ins = append(ins, strings.Join(strings.Fields(l), " "))
			}
		}
		// exit: the function leaves, by RET or by a jump through a register (callKernel's into a
		// kernel, which fences its own stores).
		exit := func(i int) bool {
			m := jump.FindStringSubmatch(ins[i])
			return ins[i] == "RET" || m != nil && m[1] == "JMP" && register.MatchString(m[2])
		}
		succ := func(i int) []int {
			l := ins[i]
			if exit(i) {
				return nil
			}
			m := jump.FindStringSubmatch(l)
			if m == nil {
				if strings.HasPrefix(l, "J") || strings.HasPrefix(l, "CALL") {
					t.Fatalf("%s: %q: a jump this test does not follow", name, l)
				}
				return []int{i + 1}
			}
			to, ok := at[m[2]]
			if !ok {
				t.Fatalf("%s: %q jumps to a label the function does not have", name, l)
			}
			switch {
			case m[1] == "JMP":
				return []int{to}
			case m[1] == "JZ" && i > 0 && strings.HasPrefix(ins[i-1], ntTest) && to > 0 && ins[to-1] == "SFENCE":
				return []int{i + 1} // flagNT is set: no jump past the fence
			}
			return []int{i + 1, to}
		}
		// unfenced[i]: an exit is reachable from instruction i without an SFENCE on the way.
		pred := make([][]int, len(ins)+1)
		for i := range ins {
			for _, s := range succ(i) {
				pred[s] = append(pred[s], i)
			}
		}
		unfenced := make([]bool, len(ins)+1)
		var work []int
		for i := range ins {
			if exit(i) {
				unfenced[i] = true
				work = append(work, i)
			}
		}
		for len(work) > 0 {
			i := work[len(work)-1]
			work = work[:len(work)-1]
			for _, p := range pred[i] {
				if !unfenced[p] && ins[p] != "SFENCE" {
					unfenced[p] = true
					work = append(work, p)
				}
			}
		}
		for i, l := range ins {
			if strings.HasPrefix(l, "VMOVNT") {
				stores++
				if unfenced[i] {
					t.Errorf("%s: %q (instruction %d) can reach a RET without an SFENCE", name, l, i)
				}
			}
		}
	}
	if stores == 0 {
		t.Fatal("no non-temporal stores in rmsnorm_amd64.s")
	}
	t.Logf("%d non-temporal stores, each fenced before every return", stores)
}
