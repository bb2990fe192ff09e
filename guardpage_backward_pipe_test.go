//go:build linux || darwin

package rmsnorm

import (
	"slices"
	"testing"
)

// TestGuardPagesBackwardPipe runs rows that the backward pipe takes with x, dy, dx, the weight, DW
// and Inv against guard pages (at the end of one, then at the start of one), so that the pipe's
// reads of the next row and its stores stay within the rows: streamed, the pipe forced on, every
// weight form, with Inv and without (inv recomputed), out of place and in place, against generic.
func TestGuardPagesBackwardPipe(t *testing.T) {
	const maxRows = 4
	dims := []int{576, 1088, 4096}
	maxFloats := dims[len(dims)-1] * maxRows
	regions := make([]*guardedRegion, 6)
	for i := range regions {
		regions[i] = newGuardedRegion(t, maxFloats)
	}
	runs := 0
	for _, k := range testKernels() {
		for _, d := range dims {
			for rows := 2; rows <= maxRows; rows++ {
				x, dy := normalRows(d, rows, 41), normalRows(d, rows, 42)
				w := normalRows(d, 1, 43)
				mode := []weightMode{weighted, offset, unweighted}[(d+rows)%3]
				n := Norm{Weight: w, Eps: 1e-6, UnitOffset: mode == offset}
				if mode == unweighted {
					n = Norm{Dim: d, Eps: 1e-6}
				}
				for _, inPlace := range []bool{false, true} {
					var want, wantDW []float32
					for _, kk := range []kernelID{kernelGeneric, k} {
						for _, atEnd := range []bool{true, false} {
							gx, gdy, gdx := regions[0].slice(len(x), atEnd), regions[1].slice(len(x), atEnd), regions[2].slice(len(x), atEnd)
							gw, gdw, gi := regions[3].slice(d, atEnd), regions[4].slice(d, atEnd), regions[5].slice(rows, atEnd)
							copy(gx, x)
							copy(gdy, dy)
							copy(gw, w)
							clear(gdw)
							if mode != unweighted {
								n.Weight = gw
							}
							applyWith(kernelGeneric, &n, &Rows{Dst: gdx, X: gx, Inv: gi})
							g := Grad{DX: gdx, X: gx, DY: gdy, Inv: gi}
							if rows == 3 {
								g.Inv = nil
							}
							if inPlace {
								g.DX = gdy
							}
							if mode != unweighted {
								g.DW = gdw
							}
							var faulted bool
							pipedBackward(func() { faulted = faults(func() { backwardWith(kk, n, g) }) })
							if faulted {
								t.Fatalf("%s d=%d rows=%d mode=%d atEnd=%v inPlace=%v: the kernel touched a guard page", kk, d, rows, mode, atEnd, inPlace)
							}
							if want == nil {
								want, wantDW = slices.Clone(g.DX), slices.Clone(gdw)
								continue
							}
							if i := firstDiff(g.DX, want); i >= 0 {
								t.Fatalf("%s d=%d rows=%d mode=%d atEnd=%v inPlace=%v: DX[%d] = %v, generic gives %v", kk, d, rows, mode, atEnd, inPlace, i, g.DX[i], want[i])
							}
							if i := firstDiff(gdw, wantDW); i >= 0 {
								t.Fatalf("%s d=%d rows=%d mode=%d atEnd=%v inPlace=%v: DW[%d] = %v, generic gives %v", kk, d, rows, mode, atEnd, inPlace, i, gdw[i], wantDW[i])
							}
							runs++
						}
					}
				}
			}
		}
	}
	t.Logf("%d runs under guard pages", runs)
}
