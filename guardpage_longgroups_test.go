//go:build linux || darwin

package rmsnorm

import (
	"fmt"
	"math"
	"testing"
)

// TestGuardPagesLongGroups runs batches of rows longer than groupMax that the AVX-512 RMSNorm
// functions take four at a time with flagGroups (avx512LongGroups and f32Groups, forced on and
// off) under guard pages, every kernel against generic: float32 rows (Forward), 16-bit rows in and
// out (ForwardBF16, ForwardF16) and float32 rows into 16-bit ones (ApplyToBF16, ApplyToF16), whole
// groups and groups with a tail, each buffer at the end of its region and at its start.
func TestGuardPagesLongGroups(t *testing.T) {
	const maxRows = 9
	regions := make([]*guardedRegion, 3)
	for i := range regions {
		regions[i] = newGuardedRegion(t, maxRows*longGroupMax)
	}
	runs := 0
	bothLongGroups(func() {
		for _, k := range testKernels() {
			for _, d := range []int{groupMax + 1, 576, 700, longGroupMax} {
				for _, rows := range []int{4, 6, maxRows} {
					x32 := make([]float32, rows*d)
					fill(x32, classNormal, seedFor(d, rows, 71))
					w := normalRows(d, 1, d+71)
					want32 := make([]float32, rows*d)
					forwardRows(&forwardNames, formatF32, want32, x32, w, 1e-6, kernelGeneric)
					for _, atEnd := range []bool{true, false} {
						gw := regionSlice[float32](regions[2], d, atEnd)
						copy(gw, w)
						gx := regionSlice[float32](regions[0], rows*d, atEnd)
						copy(gx, x32)
						gd := regionSlice[float32](regions[1], rows*d, atEnd)
						ctx := fmt.Sprintf("%s float32 %dx%d long groups %v atEnd=%v", k, rows, d, avx512LongGroups, atEnd)
						if faults(func() { forwardRows(&forwardNames, formatF32, gd, gx, gw, 1e-6, k) }) {
							t.Fatalf("%s: the kernel touched a guard page", ctx)
						}
						for i := range gd {
							if math.Float32bits(gd[i]) != math.Float32bits(want32[i]) {
								t.Fatalf("%s: dst[%d] = %#x, generic gives %#x", ctx, i, math.Float32bits(gd[i]), math.Float32bits(want32[i]))
							}
						}
						runs++
					}
					for _, f := range []format{formatBF16, formatF16, formatToBF16, formatToF16} {
						ctx := fmt.Sprintf("%s %s %dx%d long groups %v", k, fname(f), rows, d, avx512LongGroups)
						for _, atEnd := range []bool{true, false} {
							gw := regionSlice[float32](regions[2], d, atEnd)
							copy(gw, w)
							gd := regionSlice[uint16](regions[1], rows*d, atEnd)
							want := make([]uint16, rows*d)
							ends := ends16(gd, 1, len(gd), len(gd))
							var call func()
							if f == formatBF16 || f == formatF16 {
								x := narrowAll(x32, f)
								forward16With(kernelGeneric, f, want, x, w, 1e-6)
								gx := regionSlice[uint16](regions[0], rows*d, atEnd)
								copy(gx, x)
								ends = append(ends, ends16(gx, 1, len(gx), len(gx))...)
								call = func() { forward16With(k, f, gd, gx, gw, 1e-6) }
							} else {
								n := Norm{Weight: w, Eps: 1e-6}
								applyKernel(kernelGeneric, &n, f, &rowsOf[uint16, float32]{Dst: want, X: x32})
								gx := regionSlice[float32](regions[0], rows*d, atEnd)
								copy(gx, x32)
								gn := Norm{Weight: gw, Eps: 1e-6}
								call = func() { applyKernel(k, &gn, f, &rowsOf[uint16, float32]{Dst: gd, X: gx}) }
							}
							faulted, excused := bochsFault(k, call, ends...)
							if excused {
								continue
							}
							if faulted {
								t.Fatalf("%s atEnd=%v: the kernel touched a guard page", ctx, atEnd)
							}
							check16(t, fmt.Sprintf("%s atEnd=%v", ctx, atEnd), f, gd, want)
							runs++
						}
					}
				}
			}
		}
	})
	t.Logf("%d calls under guard pages (kernels %v)", runs, testKernels())
}
