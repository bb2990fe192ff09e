//go:build linux || darwin

package rmsnorm

import (
	"fmt"
	"testing"
)

// TestGuardPagesRow16 runs single binary16 and bfloat16 rows, which ForwardF16 and ForwardBF16
// give to the row functions (callRowF16, and callRowF16Buf for the lengths of f16Buffer;
// callRowBF16), and with RoundNormalized ApplyF16 and ApplyBF16 (callRowF16RN, callRowBF16RN),
// with x, dst and w flush against a guard page at either end, out of place and in place, for
// binary16 without RoundNormalized with the copy's rule off and on for every length it can take:
// the avx512 row functions widen x one iteration ahead and must stop at the row's last block. The
// rows come out with generic's bits.
func TestGuardPagesRow16(t *testing.T) {
	dims := []int{64, 128, 192, 1024, 1088, 4096, 4160, 8192}
	regions := make([]*guardedRegion, 3)
	for i := range regions {
		regions[i] = newGuardedRegion(t, 8192)
	}
	saved := f16Buffer
	defer func() { f16Buffer = saved }()
	for _, k := range testKernels() {
		for _, f := range []format{formatF16, formatBF16} {
			for _, rn := range []bool{false, true} {
				rules := [][2]int{span(1, 0), span(64, 4096)}
				if f == formatBF16 || rn {
					rules = [][2]int{f16Buffer} // binary16's without RoundNormalized alone
				}
				// ForwardF16 or ForwardBF16; with RoundNormalized ApplyF16 or ApplyBF16.
				run := func(k kernelID, dst, x []uint16, w []float32) {
					if !rn {
						forward16With(k, f, dst, x, w, 1e-6)
						return
					}
					applyKernel(k, &Norm{Weight: w, Eps: 1e-6, RoundNormalized: true}, f, &rowsOf[uint16, uint16]{Dst: dst, X: x})
				}
				for _, d := range dims {
					x := narrowAll(normalRows(d, 1, d), f)
					w := normalRows(d, 1, d+1)
					want := make([]uint16, d)
					run(kernelGeneric, want, x, w)
					for _, rule := range rules {
						for _, atEnd := range []bool{true, false} {
							for _, inPlace := range []bool{false, true} {
								gx, gd := regionSlice[uint16](regions[0], d, atEnd), regionSlice[uint16](regions[1], d, atEnd)
								gw := regionSlice[float32](regions[2], d, atEnd)
								copy(gx, x)
								copy(gw, w)
								if inPlace {
									gd = gx
								}
								name := fmt.Sprintf("%s %s rn=%v d=%d copy for rows %v atEnd=%v inPlace=%v", k, fname(f), rn, d, rule, atEnd, inPlace)
								f16Buffer = rule
								ends := append(ends16(gx, 1, d, d), ends16(gd, 1, d, d)...)
								faulted, excused := bochsFault(k, func() { run(k, gd, gx, gw) }, ends...)
								f16Buffer = saved
								if excused {
									continue
								} else if faulted {
									t.Fatalf("%s: the kernel touched a guard page", name)
								}
								check16(t, name, f, gd, want)
							}
						}
					}
				}
			}
		}
	}
}
