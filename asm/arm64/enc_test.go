package main

import (
	"encoding/binary"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/arch/arm64/arm64asm"
)

// Every WORD in the generated rmsnorm_arm64.s must decode to exactly the instruction its comment
// names: a wrong field in enc.go would otherwise assemble silently into a different instruction.

var wordLine = regexp.MustCompile(`^\s*WORD \$0x([0-9a-f]{8}) // (.+)$`)

func TestWordsDecodeToTheirComments(t *testing.T) {
	src, err := os.ReadFile("../../rmsnorm_arm64.s")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	n := 0
	for i, line := range strings.Split(string(src), "\n") {
		if !strings.Contains(line, "WORD") {
			continue
		}
		m := wordLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("line %d: a WORD without the form 'WORD $0x........ // instruction': %q", i+1, line)
		}
		enc, _ := strconv.ParseUint(m[1], 16, 32)
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(enc))
		inst, err := arm64asm.Decode(b[:])
		if err != nil {
			t.Fatalf("line %d: %s does not decode: %v", i+1, m[1], err)
		}
		if got := arm64asm.GNUSyntax(inst); got != m[2] {
			t.Fatalf("line %d: WORD $0x%s decodes to %q, the comment says %q", i+1, m[1], got, m[2])
		}
		seen[strings.Fields(m[2])[0]] = true
		n++
	}
	for _, op := range []string{"fmul", "fadd", "fsub", "faddp", "fdiv", "fsqrt", "fcmge", "fcmeq", "shll", "fcvtl", "fcvtn", "shrn"} {
		if !seen[op] {
			t.Errorf("no %s among the %d WORDs checked", op, n)
		}
	}
	t.Logf("%d WORDs decoded and matched", n)
}

// The encoders against encodings taken from an independent assembler (llvm-mc), for registers
// that exercise every field.
func TestEncodersAgainstKnownEncodings(t *testing.T) {
	cases := []struct {
		got  func() (uint32, string)
		want uint32
	}{
		{func() (uint32, string) { return fmul4s(3, 5, 7) }, 0x6e27dca3},
		{func() (uint32, string) { return fadd4s(3, 5, 7) }, 0x4e27d4a3},
		{func() (uint32, string) { return fsub4s(3, 5, 7) }, 0x4ea7d4a3},
		{func() (uint32, string) { return fsub4s(31, 31, 31) }, 0x4ebfd7ff},
		{func() (uint32, string) { return faddp4s(3, 5, 7) }, 0x6e27d4a3},
		{func() (uint32, string) { return fdiv4s(3, 5, 7) }, 0x6e27fca3},
		{func() (uint32, string) { return fcmge4s(3, 5, 7) }, 0x6e27e4a3},
		{func() (uint32, string) { return fsqrt4s(3, 5) }, 0x6ea1f8a3},
		{func() (uint32, string) { return faddpScalar(3, 5) }, 0x7e30d8a3},
		{func() (uint32, string) { return fmul4s(31, 31, 31) }, 0x6e3fdfff},
		{func() (uint32, string) { return fcmeq4s(3, 5, 7) }, 0x4e27e4a3},
		{func() (uint32, string) { return shll16(3, 5) }, 0x2e6138a3},
		{func() (uint32, string) { return shll16(31, 31) }, 0x2e613bff},
		{func() (uint32, string) { return fcvtl(3, 5) }, 0x0e2178a3},
		{func() (uint32, string) { return fcvtn(3, 5) }, 0x0e2168a3},
		{func() (uint32, string) { return shrn16(3, 5) }, 0x0f1084a3},
		{func() (uint32, string) { return shrn16(31, 31) }, 0x0f1087ff},
	}
	for _, c := range cases {
		enc, text := c.got()
		if enc != c.want {
			t.Errorf("%s: encoded %#08x, llvm-mc gives %#08x", text, enc, c.want)
		}
	}
}
