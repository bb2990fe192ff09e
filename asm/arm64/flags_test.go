package main

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"testing"
)

// TestInternalFlags keeps the NEON kernel's own bits of rFlags (flagRD, flagRS) apart from every
// bit the Go side may set in job.flags (spec's Flag constants, read from its source so that a new
// flag is checked without a change here). A shared bit would make a kernel read a job's flag as
// its own: with flagRD at bit 8, a job with FlagRows divided a row's sum by d the wrong way.
func TestInternalFlags(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "../internal/spec/spec.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var spec uint64
	var names []string
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if len(n.Name) < 5 || n.Name[:4] != "Flag" || i >= len(vs.Values) {
					continue
				}
				tv, err := types.Eval(fset, nil, token.NoPos, types.ExprString(vs.Values[i]))
				if err != nil {
					t.Fatalf("spec.%s: %v", n.Name, err)
				}
				v, ok := constant.Uint64Val(tv.Value)
				if !ok || v == 0 || v&(v-1) != 0 {
					t.Fatalf("spec.%s = %s is not a single bit", n.Name, tv.Value)
				}
				spec |= v
				names = append(names, n.Name)
			}
		}
	}
	if len(names) < 9 { // FlagNT to FlagRows when this test was written
		t.Fatalf("found only %v in spec.go", names)
	}
	for name, bit := range map[string]uint64{"flagRD": flagRD, "flagRS": flagRS} {
		if bit&spec != 0 {
			t.Errorf("%s (%#x) is also a bit of job.flags (%v: %#x)", name, bit, names, spec)
		}
		if bit > 1<<31 {
			t.Errorf("%s (%#x) does not fit job.flags' 32 bits", name, bit)
		}
	}
	if flagRD == flagRS {
		t.Errorf("flagRD and flagRS are the same bit")
	}
}
