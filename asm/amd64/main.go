// Command amd64 generates rmsnorm_amd64.s and its Go stubs with Avo.
//
// Run it through `go generate ./...` at the repository root; the go:generate line in rmsnorm.go passes
// -out, -stubs and -pkg. Every kernel implements the numeric contract of the package doc bit for bit:
// 64 float32 partial sums (element i goes to partial i%64), squares rounded before they are added (no
// FMA anywhere), the fixed halving tree, inv = 1/sqrt(ss/d + eps) with IEEE scalar instructions, and
// y = (x*inv)*w rounded after each multiply.
//
// Each kernel has the Go signature
//
//	func(dst, x, w, res, inv *float32, d, rows, stride int, eps float32) int
//
// and runs the rows loop itself. It returns the index of the first row whose t = ss/d + eps lies
// outside [2^-100, MaxFloat32] (NaN included), having written nothing for that row except, in the
// residual variants, h = x + res into res; the Go side then recomputes that row in float64 and calls
// the kernel again for the rest. It returns rows when every row is done.
package main

import (
	. "github.com/mmcloughlin/avo/build"

	"github.com/gosimd/rmsnorm/asm/internal/spec"
)

func main() {
	ConstraintExpr("amd64,gc,!purego,!noasm")
	declareConstants()
	for _, s := range []*isa{avx512, avx2} {
		for _, v := range spec.Variants {
			kernel(s, v)
		}
	}
	Generate()
}
