// Package spec holds what both kernel generators share: the variants every kernel comes in, their
// names and formulas, the argument list and the flag bits the Go side sets.
package spec

// Mode is how a kernel applies the weight after x*inv.
type Mode int

const (
	Weighted   Mode = iota // y = (x*inv)*w
	Offset                 // y = (x*inv)*(1+w), 1+w rounded to float32 first (Gemma)
	Unweighted             // y = x*inv
)

// Variant is one specialized kernel body. The Go side picks the function by name.
type Variant struct {
	Mode     Mode
	Residual bool // h = x + res; res = h; normalize h
}

// Variants lists every variant, in the order the generated files hold them.
var Variants = []Variant{
	{Weighted, false},
	{Offset, false},
	{Unweighted, false},
	{Weighted, true},
	{Offset, true},
	{Unweighted, true},
}

// Name is the variant's part of a function name, e.g. "AddOffset".
func (v Variant) Name() string {
	s := ""
	if v.Residual {
		s = "Add"
	}
	switch v.Mode {
	case Weighted:
		s += "Weighted"
	case Offset:
		s += "Offset"
	default:
		s += "Unweighted"
	}
	return s
}

// Formula is the doc-comment line for the variant.
func (v Variant) Formula() string {
	src, s := "x", ""
	if v.Residual {
		s, src = "h = x + res and res = h per element, then ", "h"
	}
	switch v.Mode {
	case Weighted:
		s += "y = (" + src + "*inv)*w"
	case Offset:
		s += "y = (" + src + "*inv)*(1+w)"
	default:
		s += "y = " + src + "*inv"
	}
	return s + ", for each row."
}

// Doc is the documentation of a kernel function.
func (v Variant) Doc(name string) []string {
	return []string{
		name + " normalizes `rows` rows of d floats whose starts are stride floats apart:",
		v.Formula(),
		"fd is float32(d), and rd is 1/d when flags has flagRD (d a power of two).",
		"It stops before the first row that needs the float64 path and returns that row's index, or rows.",
	}
}

// Signature is the Go signature of every kernel.
const Signature = "func(dst, x, w, res, inv *float32, d, rows, stride int, eps, fd, rd float32, flags int) int"

// Flag bits of the flags argument; flags.go in the package sets them.
const (
	FlagNT  = 1 // write dst with non-temporal stores (the batch is larger than the cache)
	FlagRD  = 2 // d is a power of two: ss/d is computed exactly as ss*rd
	FlagPF  = 4 // prefetch the next rows while scaling (they come from memory, or lie far apart)
	FlagNTA = 8 // with FlagPF: the batch is larger than the cache, prefetch it non-temporally
)

// Bounds of t = ss/d + eps outside which a row takes the float64 path.
const (
	TLowBits = 0x0d800000 // 2^-100
	TMaxBits = 0x7f7fffff // MaxFloat32
)

// GroupMax is the longest row, in floats, that the kernels normalize four at a time.
const GroupMax = 512
