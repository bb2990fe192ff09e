//go:build linux || darwin

package rmsnorm

import (
	"fmt"
	"slices"
	"testing"
)

// The LayerNorm backward pass under guard pages (guardpage_test.go): X, DY, DX (or DX = DY), Inv,
// Mean, the weight, DW and DB each flush against an inaccessible page, for rows with Center (the
// centered body of the Layer kernel functions) and without it but with DB (their RMSNorm body
// and the bias-gradient pass), every weight form with and without DW, one row and several a
// stride apart, in place and not, streaming on and off; and the results are the generic
// kernel's.
func TestLayerNormBackwardGuardPages(t *testing.T) {
	regions := make([]*guardedRegion, 8)
	for i := range regions {
		regions[i] = newGuardedRegion(t, 3*(4097+backwardGuardGap))
	}
	runs := 0
	eachBackwardGuardShape(func(k kernelID, d, rows, stride, span int) {
		r := seedFor(d, rows, 41)
		x, dy := make([]float32, span), make([]float32, span)
		fill(x, valueClasses[(d+rows)%len(valueClasses)], r)
		fill(dy, classNormal, r)
		w, bias := make([]float32, d), make([]float32, d)
		fill(w, classNormal, r)
		fill(bias, classNormal, r)
		form := []struct {
			mode   weightMode
			withDW bool
		}{{weighted, true}, {offset, true}, {unweighted, false}, {weighted, false}, {offset, false}}[(d+rows)%5]
		for _, lf := range []struct{ center, withDB bool }{{true, true}, {true, false}, {false, true}} {
			for _, atEnd := range []bool{true, false} {
				for _, inPlace := range []bool{false, true} {
					name := fmt.Sprintf("d=%d rows=%d mode=%d dw=%v center=%v db=%v atEnd=%v inPlace=%v",
						d, rows, form.mode, form.withDW, lf.center, lf.withDB, atEnd, inPlace)
					run := func(kk kernelID) (dx, dw, db []float32) {
						gx, gdy, gdx := regions[0].slice(span, atEnd), regions[1].slice(span, atEnd), regions[2].slice(span, atEnd)
						gi, gm := regions[3].slice(rows, atEnd), regions[4].slice(rows, atEnd)
						gw, gdw, gdb := regions[5].slice(d, atEnd), regions[6].slice(d, atEnd), regions[7].slice(d, atEnd)
						copy(gx, x)
						copy(gdy, dy)
						copy(gw, w)
						clear(gdw)
						clear(gdb)
						n := Norm{Weight: gw, Bias: bias, Center: lf.center, Eps: 1e-5, UnitOffset: form.mode == offset}
						if form.mode == unweighted {
							n.Weight, n.Dim = nil, d
						}
						g := Grad{DX: gdx, X: gx, DY: gdy, N: rows, Stride: stride}
						if form.withDW {
							g.DW = gdw
						}
						if lf.withDB {
							g.DB = gdb
						}
						if inPlace {
							g.DX = gdy
						}
						if rows > 1 { // Inv and Mean from the forward pass
							rs := Rows{Dst: gdx, X: gx, N: rows, Stride: stride, Inv: gi}
							if lf.center {
								rs.Mean = gm
								g.Mean = gm
							}
							applyWith(kernelGeneric, &n, &rs)
							g.Inv = gi
						}
						var faulted bool
						withStreaming((d+rows)%2 == 0, func() { faulted = faults(func() { backwardWith(kk, n, g) }) })
						if faulted {
							t.Fatalf("%s %s: the kernel touched a guard page", kk, name)
						}
						return slices.Clone(g.DX), slices.Clone(gdw), slices.Clone(gdb)
					}
					wdx, wdw, wdb := run(kernelGeneric)
					dx, dw, db := run(k)
					if firstDiff(dx, wdx) >= 0 || firstDiff(dw, wdw) >= 0 || firstDiff(db, wdb) >= 0 {
						t.Fatalf("%s %s: differs from generic", k, name)
					}
					runs++
				}
			}
		}
	})
	t.Logf("%d runs of the LayerNorm Norm.Backward under guard pages", runs)
}
