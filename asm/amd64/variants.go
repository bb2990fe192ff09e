package main

// weightMode is how a kernel applies the weight after x*inv.
type weightMode int

const (
	weighted   weightMode = iota // y = (x*inv)*w
	offset                       // y = (x*inv)*(1+w), 1+w rounded to float32 first (Gemma)
	unweighted                   // y = x*inv
)

// variant is one specialised kernel body. The Go side picks the function by name.
type variant struct {
	mode     weightMode
	residual bool // h = x + res; res = h; normalize h
}

var variants = []variant{
	{weighted, false},
	{offset, false},
	{unweighted, false},
	{weighted, true},
	{offset, true},
	{unweighted, true},
}

// name is the variant's part of the function name, e.g. "AddOffset".
func (v variant) name() string {
	s := ""
	if v.residual {
		s = "Add"
	}
	switch v.mode {
	case weighted:
		s += "Weighted"
	case offset:
		s += "Offset"
	case unweighted:
		s += "Unweighted"
	}
	return s
}

// formula is the doc-comment line for the variant.
func (v variant) formula() string {
	src := "x"
	s := ""
	if v.residual {
		s = "h = x + res and res = h per element, then "
		src = "h"
	}
	switch v.mode {
	case weighted:
		s += "y = (" + src + "*inv)*w"
	case offset:
		s += "y = (" + src + "*inv)*(1+w)"
	case unweighted:
		s += "y = " + src + "*inv"
	}
	return s + ", for each row."
}
