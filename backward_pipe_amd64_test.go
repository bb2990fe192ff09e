//go:build gc && !purego && !noasm

package rmsnorm

import (
	"slices"
	"testing"
)

// TestBackwardPipeRuns shows which kernels take the backward pipe for a job with flagPipe, and
// that the kernel's own checks send the rows the pipe cannot take to the loops without it. A pipe
// gives the bits of the loops without it, so this test makes them differ on purpose, with a job
// the package's checks would reject: dx row r is dy row r+1. Without the pipe, row r's dx pass
// overwrites dy row r+1 before that row's sums read it; the pipe reads row r+1 for its sums, in
// row r's dx loop, before it stores over it. So with Inv given (the sums of g*x alone decide dx)
// the results of rows 1 on differ exactly when the pipe ran: on avx2 (streamrule.BackwardPipe)
// for d a multiple of 64 with dx rows 32-byte aligned, and nowhere else; with dx out through
// non-temporal stores and through ordinary ones, and for jobs without DW, with DW and with DW
// fused, whose loops each have a pipe of their own. Each row is checked on its own: a loop that
// stopped passing its sums on would leave only its own next row as without the pipe.
func TestBackwardPipeRuns(t *testing.T) {
	const rows = 4
	for _, k := range testKernels() {
		for _, c := range []struct {
			name  string
			d     int
			shift int // elements dx starts past dy's row 1
			pipes bool
		}{
			{name: "rows of 1024", d: 1024, pipes: true},
			{name: "rows of 64", d: 64, pipes: true},
			{name: "rows of 1000, not a multiple of 64", d: 1000},
			{name: "dx 4 bytes past a 32-byte boundary", d: 1024, shift: 1},
		} {
			d := c.d
			x, w := normalRows(d, rows, 51), normalRows(d, 1, 52)
			dy0 := normalRows(d, rows+1, 53)
			inv := []float32{0.9, 1.1, 0.7, 1.3}
			// dw: no DW; a DW summed through P, a slot per block; or fused (flagFuse: the
			// block's last row adds P to DW). Each takes loops of its own (dxnone, dxset and
			// dxadd, their fused forms), each with its own pipe.
			run := func(flags uint32, dw int) []float32 {
				buf, _ := aligned32[float32]((rows+1)*d+c.shift, 0)
				copy(buf, dy0)
				dy, dx := buf[:rows*d], buf[d+c.shift:d+c.shift+rows*d]
				j := job{dst: ptr(dx), x: ptr(x), w: ptr(w), dy: ptr(dy), inv: ptr(inv), d: d, stride: d, dstStride: d,
					rows: rows, eps: 1e-6, flags: flags, mode: weighted, format: formatF32, v: backwardVariant[0][weighted]}
				if dw > 0 {
					j.dw, j.acc = ptr(make([]float32, d)), ptr(make([]float32, d))
				}
				if dw == 2 {
					j.flags |= flagFuse
				}
				j.runRange(k, 0, rows)
				return slices.Clone(buf)
			}
			// dx out with non-temporal stores, and with ordinary ones (the in-place calls' loop).
			for _, base := range []uint32{flagNT | flagPF, flagPF} {
				for dw := range 3 {
					plain, piped := run(base, dw), run(base|flagPipe, dw)
					want := c.pipes && k == kernelAVX2
					// Row r of dx (dy row r+1) comes from row r's sums: for row 0 no pipe formed
					// them, for the others the previous row's loop did, where the pipe runs,
					// from dy before that loop overwrote it.
					for r := range rows {
						at := d + c.shift + r*d
						got := firstDiff(piped[at:at+d], plain[at:at+d]) >= 0
						if got != (want && r > 0) {
							t.Errorf("%s %s flags %#x dw %d: dx row %d differs with flagPipe: %v, want %v",
								k, c.name, base, dw, r, got, want && r > 0)
						}
					}
				}
			}
		}
	}
}
