package main

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"
	"testing"
)

// TestInternalFlags keeps the NEON kernel's own bits of rFlags (the flag constants of this
// generator: flagRD, flagRS) apart from every bit the Go side may set in job.flags (spec's Flag
// constants), and from each other. Both sets are read from the source, so that a flag added on
// either side is checked without a change here. A shared bit would make a kernel read a job's
// flag as its own: with flagRD at bit 8, a job with FlagRows divided a row's sum by d the wrong
// way.
func TestInternalFlags(t *testing.T) {
	spec := flagConsts(t, []string{"../internal/spec/spec.go"}, "Flag")
	if len(spec) < 9 { // FlagNT to FlagRows when this test was written
		t.Fatalf("found only %v in spec.go", spec)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var gen []string
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			gen = append(gen, f)
		}
	}
	own := flagConsts(t, gen, "flag")
	if len(own) < 2 {
		t.Fatalf("found only %v in this generator", own)
	}
	var specBits uint64
	for _, v := range spec {
		specBits |= v
	}
	var ownBits uint64
	for name, v := range own {
		if v&specBits != 0 {
			t.Errorf("%s (%#x) is also a bit of job.flags (%#x)", name, v, specBits)
		}
		if v&ownBits != 0 {
			t.Errorf("%s (%#x) shares its bit with another of this generator's flags", name, v)
		}
		if v > 1<<31 {
			t.Errorf("%s (%#x) does not fit job.flags' 32 bits", name, v)
		}
		ownBits |= v
	}
}

// flagConsts returns the constants of files whose names start with prefix (followed by an upper
// case letter), by value; each must be a single bit written with its own value.
func flagConsts(t *testing.T, files []string, prefix string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	fset := token.NewFileSet()
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					rest, ok := strings.CutPrefix(n.Name, prefix)
					if !ok || rest == "" || rest[0] < 'A' || rest[0] > 'Z' {
						continue
					}
					if i >= len(vs.Values) {
						t.Fatalf("%s: %s has no value of its own (an implicit repeat), which this test cannot read", path, n.Name)
					}
					tv, err := types.Eval(fset, nil, token.NoPos, types.ExprString(vs.Values[i]))
					if err != nil {
						t.Fatalf("%s: %s: %v", path, n.Name, err)
					}
					v, ok := constant.Uint64Val(tv.Value)
					if !ok || v == 0 || v&(v-1) != 0 {
						t.Fatalf("%s: %s = %s is not a single bit", path, n.Name, tv.Value)
					}
					out[n.Name] = v
				}
			}
		}
	}
	return out
}
