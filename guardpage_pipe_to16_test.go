//go:build linux || darwin

package rmsnorm

import "testing"

// TestGuardPagesPipeTo16 is TestGuardPagesPipe for ApplyToF16 and ApplyF16 (float32 or float16
// rows into float16 ones), RMSNorm and LayerNorm: streamed rows long enough for the pipe, x, the
// weight and dst against a guard page at their end and at their start, give generic's bits
// without touching the guard pages (the pipe reads the next row while it writes this one, and a
// row's halves are written two vectors at a time).
func TestGuardPagesPipeTo16(t *testing.T) {
	guardPagesPipe16[float32](t, formatToF16)
	guardPagesPipe16[uint16](t, formatF16)
}

// guardPagesPipe16 runs TestGuardPagesPipeTo16's calls in format f, rows of T into float16 rows.
func guardPagesPipe16[T elem](t *testing.T, f format) {
	t.Helper()
	const maxRows = 4
	dims := []int{576, 1024, 2112, 4096} // float16 rows pipe from 576 on, float32 rows into float16 above 2048
	maxFloats := dims[len(dims)-1] * maxRows
	rx, rw, rd := newGuardedRegion(t, maxFloats), newGuardedRegion(t, maxFloats), newGuardedRegion(t, maxFloats)
	for _, k := range testKernels() {
		for _, d := range dims {
			for rows := 2; rows <= maxRows; rows++ {
				for _, layer := range []bool{false, true} {
					x := rowsIn[T](f, normalRows(d, rows, 34))
					n := Norm{Eps: 1e-6, Weight: normalRows(d, 1, 35)}
					if layer {
						n.Center, n.Bias = true, normalRows(d, 1, 36)
					}
					want := make([]uint16, len(x))
					applyKernel(kernelGeneric, &n, f, &rowsOf[uint16, T]{Dst: want, X: x})
					for _, atEnd := range []bool{true, false} {
						gx, gw, gd := regionSlice[T](rx, len(x), atEnd), rw.slice(d, atEnd), regionSlice[uint16](rd, len(x), atEnd)
						copy(gx, x)
						copy(gw, n.Weight)
						gn := Norm{Eps: n.Eps, Weight: gw, Center: n.Center, Bias: n.Bias}
						var faulted, excused bool
						ends := append(ends16(gx, 1, len(gx), len(gx)), ends16(gd, 1, len(gd), len(gd))...)
						withStreaming(true, func() {
							pipeRows = true
							faulted, excused = bochsFault(k, func() {
								applyKernel(k, &gn, f, &rowsOf[uint16, T]{Dst: gd, X: gx})
							}, ends...)
						})
						if excused {
							continue
						}
						if faulted {
							t.Fatalf("%s %s d=%d rows=%d layer=%v atEnd=%v: the kernel touched a guard page", k.name(), fnameAll(f), d, rows, layer, atEnd)
						}
						for i := range want {
							if gd[i] != want[i] && !bochsF16(gd[i], want[i], f) {
								t.Fatalf("%s %s d=%d rows=%d layer=%v atEnd=%v: y[%d] = %#04x, generic gives %#04x", k.name(), fnameAll(f), d, rows, layer, atEnd, i, gd[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}
