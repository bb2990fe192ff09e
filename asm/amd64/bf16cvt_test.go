package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

// Every BYTE line in the generated rmsnorm_amd64.s must decode to exactly the instruction its
// comment names, in the Go syntax Avo printed it in: a wrong field in encodeCvt would otherwise
// assemble silently into a different instruction.

var byteLine = regexp.MustCompile(`^\t((?:BYTE \$0x[0-9a-f]{2}; )*BYTE \$0x[0-9a-f]{2}) // (.+)$`)

func TestBytesDecodeToTheirComments(t *testing.T) {
	src, err := os.ReadFile("../../rmsnorm_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i, line := range strings.Split(string(src), "\n") {
		if strings.Contains(line, cvtOp) && !strings.Contains(line, "BYTE") {
			t.Fatalf("line %d: %s left for the assembler, which does not know it: %q", i+1, cvtOp, line)
		}
		if !strings.Contains(line, "BYTE") {
			continue
		}
		m := byteLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("line %d: BYTEs without the form 'BYTE $0x..; ... // instruction': %q", i+1, line)
		}
		var b []byte
		for _, f := range strings.Split(m[1], "; ") {
			v, _ := strconv.ParseUint(strings.TrimPrefix(f, "BYTE $0x"), 16, 8)
			b = append(b, byte(v))
		}
		inst, err := x86asm.Decode(b, 64)
		if err != nil {
			t.Fatalf("line %d: % x does not decode: %v", i+1, b, err)
		}
		if inst.Len != len(b) {
			t.Fatalf("line %d: % x decodes to %d bytes of instruction, not %d", i+1, b, inst.Len, len(b))
		}
		if got := x86asm.GoSyntax(inst, 0, nil); got != m[2] {
			t.Fatalf("line %d: % x decodes to %q, the comment says %q", i+1, b, got, m[2])
		}
		n++
	}
	if n == 0 {
		t.Fatalf("no %s in rmsnorm_amd64.s", cvtOp)
	}
	t.Logf("%d instructions decoded and matched", n)
}

// The encoder against encodings taken from an independent assembler (llvm-mc, AT&T syntax, whose
// operand order is Go's), for registers that exercise every field.
func TestEncodeCvtAgainstKnownEncodings(t *testing.T) {
	cases := []struct {
		lo, hi, dst int
		want        string
	}{
		{3, 2, 1, "62 f2 6f 48 72 cb"},    // vcvtne2ps2bf16 %zmm3, %zmm2, %zmm1
		{31, 17, 8, "62 12 77 40 72 c7"},  // %zmm31, %zmm17, %zmm8
		{7, 30, 25, "62 62 0f 40 72 cf"},  // %zmm7, %zmm30, %zmm25
		{0, 0, 0, "62 f2 7f 48 72 c0"},    // %zmm0, %zmm0, %zmm0
		{15, 15, 15, "62 52 07 48 72 ff"}, // %zmm15, %zmm15, %zmm15
		{16, 16, 16, "62 a2 7f 40 72 c0"}, // %zmm16, %zmm16, %zmm16
	}
	for _, c := range cases {
		var got []string
		for _, b := range encodeCvt(c.lo, c.hi, c.dst) {
			got = append(got, strconv.FormatUint(uint64(b)|0x100, 16)[1:])
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("Z%d, Z%d, Z%d: encoded %s, llvm-mc gives %s", c.lo, c.hi, c.dst, g, c.want)
		}
	}
	line, ok := encodeLine("\t" + cvtOp + " Z3, Z2, Z1")
	if want := "\tBYTE $0x62; BYTE $0xf2; BYTE $0x6f; BYTE $0x48; BYTE $0x72; BYTE $0xcb // " + cvtOp + " Z3, Z2, Z1"; !ok || line != want {
		t.Errorf("encodeLine gives %q, %v; want %q", line, ok, want)
	}
	if line, ok := encodeLine("\tVPERMT2W Z3, Z2, Z1"); ok || line != "\tVPERMT2W Z3, Z2, Z1" {
		t.Errorf("encodeLine changed another instruction: %q", line)
	}
}
