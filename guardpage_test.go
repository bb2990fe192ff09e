//go:build linux || darwin

package rmsnorm

import (
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Guard pages: every buffer sits flush against an inaccessible page, after its end or before its
// start, so a kernel that reads or writes even one float outside its slices faults. (Guard values
// around heap buffers, as in contract_test.go and variants_test.go, catch stray writes but not
// stray reads, and the allocator's size classes hide small over-reads from -race and -asan.)

// guardedRegion is an anonymous mapping with an inaccessible page at each end.
type guardedRegion struct {
	mem []byte
	ps  int
}

func newGuardedRegion(t testing.TB, floats int) *guardedRegion {
	t.Helper()
	ps := os.Getpagesize()
	size := (floats*4+ps-1)/ps*ps + 2*ps
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	if err := unix.Mprotect(mem[:ps], unix.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mprotect(mem[size-ps:], unix.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	return &guardedRegion{mem: mem, ps: ps}
}

// endGuard returns the address of the guard page after the region, where a slice placed against
// it (atEnd) ends.
func (g *guardedRegion) endGuard() uintptr { return uintptr(unsafe.Pointer(&g.mem[len(g.mem)-g.ps])) }

// slice returns n floats flush against the end guard (atEnd) or the start guard.
func (g *guardedRegion) slice(n int, atEnd bool) []float32 { return regionSlice[float32](g, n, atEnd) }

// regionSlice returns n elements of type T flush against the end guard (atEnd) or the start guard.
func regionSlice[T elem](g *guardedRegion, n int, atEnd bool) []T {
	size := int(unsafe.Sizeof(*new(T)))
	off := g.ps
	if atEnd {
		off = len(g.mem) - g.ps - size*n
	}
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&g.mem[off])), n)
}

// The guards work: one float past the end, or before the start, faults.
func TestGuardPagesCatchStrayAccess(t *testing.T) {
	g := newGuardedRegion(t, 64)
	for _, c := range []struct {
		name  string
		atEnd bool
		off   int // element index relative to the slice start
		write bool
	}{
		{"read past the end", true, 3, false},
		{"write past the end", true, 3, true},
		{"read before the start", false, -1, false},
		{"write before the start", false, -1, true},
	} {
		s := g.slice(3, c.atEnd)
		p := (*float32)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s)), 4*c.off))
		if !faults(func() {
			if c.write {
				*p = 1
			} else {
				sink = *p
			}
		}) {
			t.Fatalf("%s: no fault: the guard page does not work", c.name)
		}
	}
	// And inside the slice nothing faults.
	s := g.slice(3, true)
	if faults(func() { s[2] = s[0] + s[1] }) {
		t.Fatal("an access inside the slice faulted")
	}
}

var sink float32

// faults reports whether f faulted; SetPanicOnFault turns the fault into a recoverable panic.
func faults(f func()) bool {
	faulted, _, _ := faultAt(f)
	return faulted
}

// faultAt is faults, and for a fault on memory (onMemory) the address it touched, which
// SetPanicOnFault's panic value carries; any other panic of f counts as a fault without one.
func faultAt(f func()) (faulted bool, addr uintptr, onMemory bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			faulted = true
			if e, ok := r.(interface{ Addr() uintptr }); ok {
				addr, onMemory = e.Addr(), true
			}
		}
	}()
	f()
	return false, 0, false
}

// guardDims returns the row lengths of TestGuardPagesForward: 0 and those of the core matrix with
// -matrix=tiny, else 0..300 and lengths around the block sizes up to 65537 (whatever the matrix).
func guardDims() []int {
	if matrixSize() == "tiny" {
		return append([]int{0}, matrix().dims...)
	}
	var ds []int
	for d := 0; d <= 300; d++ {
		ds = append(ds, d)
	}
	return append(ds, 511, 512, 513, 4095, 4096, 4097, 65537)
}

func TestGuardPagesForward(t *testing.T) {
	const maxRows = 3
	maxFloats := 65537 * maxRows
	type role struct{ end, start *guardedRegion }
	newRole := func() role { return role{newGuardedRegion(t, maxFloats), newGuardedRegion(t, maxFloats)} }
	rx, rw, rd := newRole(), newRole(), newRole()
	runs := 0
	for _, k := range testKernels() {
		for _, d := range guardDims() {
			for rows := 1; rows <= maxRows; rows++ {
				r := seedFor(d, rows, 21)
				x := make([]float32, rows*d)
				fill(x, valueClasses[(d+rows)%len(valueClasses)], r) // the class cycles with d+rows
				w := make([]float32, d)
				fill(w, classNormal, r)
				want := make([]float32, len(x))
				forwardWith(kernelGeneric, want, x, w, 1e-6)
				for _, atEnd := range []bool{true, false} {
					for _, inPlace := range []bool{false, true} {
						gx := rx.start.slice(len(x), false)
						if atEnd {
							gx = rx.end.slice(len(x), true)
						}
						gw, gd := rw.start.slice(d, false), rd.start.slice(len(x), false)
						if atEnd {
							gw, gd = rw.end.slice(d, true), rd.end.slice(len(x), true)
						}
						copy(gx, x)
						copy(gw, w)
						if inPlace {
							gd = gx
						}
						var faulted bool
						withStreaming((d+rows)%2 == 0, func() {
							faulted = faults(func() { forwardWith(k, gd, gx, gw, 1e-6) })
						})
						if faulted {
							t.Fatalf("%s d=%d rows=%d atEnd=%v inPlace=%v: the kernel touched a guard page", k, d, rows, atEnd, inPlace)
						}
						if i := firstDiff(gd, want); i >= 0 {
							t.Fatalf("%s d=%d rows=%d atEnd=%v inPlace=%v: y[%d] = %v, generic gives %v", k, d, rows, atEnd, inPlace, i, gd[i], want[i])
						}
						runs++
					}
				}
			}
		}
	}
	t.Logf("%d runs of Forward under guard pages (kernels %v, %d lengths, 1..%d rows, both placements, in place and not)",
		runs, testKernels(), len(guardDims()), maxRows)
}

// The variants with every buffer against a guard: residual, Inv, strided rows, no weight, 1+w.
func TestGuardPagesVariants(t *testing.T) {
	const rows, gap = 3, 3
	maxFloats := (rows-1)*(4097+gap) + 4097
	regions := make([]*guardedRegion, 5)
	for i := range regions {
		regions[i] = newGuardedRegion(t, maxFloats)
	}
	runs := 0
	for _, k := range testKernels() {
		for _, d := range []int{1, 2, 3, 5, 8, 15, 16, 17, 63, 64, 65, 127, 128, 129, 300, 511, 512, 513, 4097} {
			stride := d + gap
			span := (rows-1)*stride + d
			r := seedFor(d, 22)
			xs := make([]float32, span)
			fill(xs, classNormal, r)
			res0 := make([]float32, span)
			fill(res0, classUniform, r)
			w := make([]float32, d)
			fill(w, classNormal, r)
			for _, mode := range []weightMode{weighted, offset, unweighted} {
				for _, atEnd := range []bool{true, false} {
					run := func(kk kernelID) (y, res, inv []float32) {
						gx := regions[0].slice(span, atEnd)
						gd := regions[1].slice(span, atEnd)
						gr := regions[2].slice(span, atEnd)
						gi := regions[3].slice(rows, atEnd)
						gw := regions[4].slice(d, atEnd)
						copy(gx, xs)
						copy(gr, res0)
						copy(gw, w)
						n := Norm{Weight: gw, Eps: 1e-6, UnitOffset: mode == offset}
						if mode == unweighted {
							n = Norm{Dim: d, Eps: 1e-6}
						}
						rr := Rows{Dst: gd, X: gx, N: rows, Stride: stride, Residual: gr, Inv: gi}
						if faults(func() { applyWith(kk, &n, &rr) }) {
							t.Fatalf("%s d=%d mode=%d atEnd=%v: the kernel touched a guard page", kk, d, mode, atEnd)
						}
						return append([]float32(nil), gd...), append([]float32(nil), gr...), append([]float32(nil), gi...)
					}
					wy, wr, wi := run(kernelGeneric)
					y, res, inv := run(k)
					if firstDiff(y, wy) >= 0 || firstDiff(res, wr) >= 0 || firstDiff(inv, wi) >= 0 {
						t.Fatalf("%s d=%d mode=%d atEnd=%v: differs from generic", k, d, mode, atEnd)
					}
					runs++
				}
			}
		}
	}
	t.Logf("%d runs of Norm.Apply (residual, Inv, Stride) under guard pages", runs)
}

// 16-bit storage with every buffer against a guard: ForwardBF16 and ForwardF16 at every length of
// guardDims, then every variant of ApplyBF16/ApplyF16 (residual, Inv, stride, weight forms,
// RoundNormalized), then the four conversions.
func TestGuardPages16(t *testing.T) {
	const rows, gap = 3, 3
	maxFloats := (rows-1)*(65537+gap) + 65537
	regions := make([]*guardedRegion, 5)
	for i := range regions {
		regions[i] = newGuardedRegion(t, maxFloats)
	}
	runs := 0
	for _, k := range testKernels() {
		for _, f := range formats16 {
			for _, d := range guardDims() {
				if d == 0 {
					continue
				}
				r := seedFor(d, 23, int(f))
				x32 := make([]float32, rows*d)
				fill(x32, valueClasses[d%len(valueClasses)], r)
				x := narrowAll(x32, f)
				w := normalRows(d, 1, d)
				want := make([]uint16, len(x))
				forward16With(kernelGeneric, f, want, x, w, 1e-6)
				for _, atEnd := range []bool{true, false} {
					for _, inPlace := range []bool{false, true} {
						gx, gd := regionSlice[uint16](regions[0], len(x), atEnd), regionSlice[uint16](regions[1], len(x), atEnd)
						gw := regionSlice[float32](regions[2], d, atEnd)
						copy(gx, x)
						copy(gw, w)
						if inPlace {
							gd = gx
						}
						ends := append(ends16(gx, 1, len(gx), len(gx)), ends16(gd, 1, len(gd), len(gd))...)
						if faulted, excused := bochsFault(k, func() { forward16With(k, f, gd, gx, gw, 1e-6) }, ends...); excused {
							continue
						} else if faulted {
							t.Fatalf("%s %s d=%d atEnd=%v inPlace=%v: the kernel touched a guard page", k, fname(f), d, atEnd, inPlace)
						}
						check16(t, fmt.Sprintf("%s %s d=%d atEnd=%v inPlace=%v", k, fname(f), d, atEnd, inPlace), f, gd, want)
						runs++
					}
				}
			}
			for _, d := range []int{1, 2, 3, 5, 8, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 120, 127, 128, 129, 300, 511, 512, 513, 4097} {
				stride := d + gap
				span := (rows-1)*stride + d
				r := seedFor(d, 24, int(f))
				xs := make([]float32, span)
				fill(xs, classNormal, r)
				res32 := make([]float32, span)
				fill(res32, classUniform, r)
				x, res0 := narrowAll(xs, f), narrowAll(res32, f)
				w := normalRows(d, 1, d+1)
				for _, mode := range []weightMode{weighted, offset, unweighted} {
					for _, rn := range []bool{false, true} {
						for _, atEnd := range []bool{true, false} {
							run := func(kk kernelID) (y, res []uint16, inv []float32, excused bool) {
								gx, gd := regionSlice[uint16](regions[0], span, atEnd), regionSlice[uint16](regions[1], span, atEnd)
								gr := regionSlice[uint16](regions[2], span, atEnd)
								gi, gw := regionSlice[float32](regions[3], rows, atEnd), regionSlice[float32](regions[4], d, atEnd)
								copy(gx, x)
								copy(gr, res0)
								copy(gw, w)
								n := Norm{Weight: gw, Eps: 1e-6, UnitOffset: mode == offset, RoundNormalized: rn}
								if mode == unweighted {
									n = Norm{Dim: d, Eps: 1e-6, RoundNormalized: rn}
								}
								ends := append(append(ends16(gx, rows, stride, d), ends16(gd, rows, stride, d)...), ends16(gr, rows, stride, d)...)
								if faulted, excused := bochsFault(kk, func() { applyRowsWith(kk, &n, f, gd, gx, gr, gi, rows, stride) }, ends...); excused {
									return nil, nil, nil, true
								} else if faulted {
									t.Fatalf("%s %s d=%d mode=%d rn=%v atEnd=%v: the kernel touched a guard page", kk, fname(f), d, mode, rn, atEnd)
								}
								return slices.Clone(gd), slices.Clone(gr), slices.Clone(gi), false
							}
							wy, wr, wi, _ := run(kernelGeneric)
							y, res, inv, excused := run(k)
							if excused || bochsChains(k, f, true, rn && mode != unweighted) {
								continue // the call ran under the guards; its values carry Bochs's rounding
							}
							ctx := fmt.Sprintf("%s %s d=%d mode=%d rn=%v atEnd=%v", k, fname(f), d, mode, rn, atEnd)
							check16(t, ctx+" y", f, y, wy)
							check16(t, ctx+" residual", f, res, wr)
							if firstDiff(inv, wi) >= 0 {
								t.Fatalf("%s: Inv differs from generic", ctx)
							}
							runs++
						}
					}
				}
			}
		}
		for n := 0; n <= 300; n++ {
			for op := convOp(0); op < numConvOps; op++ {
				for _, atEnd := range []bool{true, false} {
					wide, half := regionSlice[float32](regions[0], n, atEnd), regionSlice[uint16](regions[1], n, atEnd)
					for i := range wide {
						wide[i] = float32(i) - 7.5
					}
					for i := range half {
						half[i] = uint16(0x3c00 + i)
					}
					dst, src := unsafe.Pointer(unsafe.SliceData(half)), unsafe.Pointer(unsafe.SliceData(wide))
					if op == convWidenBF16 || op == convWidenF16 {
						dst, src = src, dst
					}
					if n == 0 {
						runs++
						continue
					}
					if faulted, excused := bochsFault(k, func() { convertWith(k, op, dst, src, n) }, ends16(half, 1, n, n)...); excused {
						continue
					} else if faulted {
						t.Fatalf("%s conversion %d n=%d atEnd=%v: the kernel touched a guard page", k, op, n, atEnd)
					}
					runs++
				}
			}
		}
	}
	t.Logf("%d runs of the 16-bit entry points under guard pages (kernels %v)", runs, testKernels())
}

// The backward pass with every buffer against a guard: X, DY, DX (or DX = DY), Inv, the weight
// and DW, one row and several with a stride, every weight form with and without DW, in place and
// not, streaming on and off.
func TestGuardPagesBackward(t *testing.T) {
	regions := make([]*guardedRegion, 6)
	for i := range regions {
		regions[i] = newGuardedRegion(t, 3*(4097+backwardGuardGap))
	}
	runs := 0
	eachBackwardGuardShape(func(k kernelID, d, rows, stride, span int) {
		r := seedFor(d, rows, 23)
		x := make([]float32, span)
		fill(x, valueClasses[(d+rows)%len(valueClasses)], r)
		dy := make([]float32, span)
		fill(dy, classNormal, r)
		w := make([]float32, d)
		fill(w, classNormal, r)
		// The weight form and whether DW is accumulated cycle with d and rows.
		form := []struct {
			mode   weightMode
			withDW bool
		}{{weighted, true}, {offset, true}, {unweighted, false}, {weighted, false}, {offset, false}}[(d+rows)%5]
		mode := form.mode
		for _, atEnd := range []bool{true, false} {
			for _, inPlace := range []bool{false, true} {
				run := func(kk kernelID) (dx, dw []float32) {
					gx, gdy, gdx := regions[0].slice(span, atEnd), regions[1].slice(span, atEnd), regions[2].slice(span, atEnd)
					gi, gw, gdw := regions[3].slice(rows, atEnd), regions[4].slice(d, atEnd), regions[5].slice(d, atEnd)
					copy(gx, x)
					copy(gdy, dy)
					copy(gw, w)
					clear(gdw)
					n := Norm{Weight: gw, Eps: 1e-6, UnitOffset: mode == offset}
					g := Grad{DX: gdx, X: gx, DY: gdy, N: rows, Stride: stride}
					if form.withDW {
						g.DW = gdw
					}
					if mode == unweighted {
						n = Norm{Dim: d, Eps: 1e-6}
					}
					if inPlace {
						g.DX = gdy
					}
					if rows > 1 { // Inv from the forward pass
						applyWith(kernelGeneric, &n, &Rows{Dst: gdx, X: gx, N: rows, Stride: stride, Inv: gi})
						g.Inv = gi
					}
					var faulted bool
					withStreaming((d+rows)%2 == 0, func() { faulted = faults(func() { backwardWith(kk, n, g) }) })
					if faulted {
						t.Fatalf("%s d=%d rows=%d mode=%d atEnd=%v inPlace=%v: the kernel touched a guard page", kk, d, rows, mode, atEnd, inPlace)
					}
					return slices.Clone(g.DX), slices.Clone(gdw)
				}
				wdx, wdw := run(kernelGeneric)
				dx, dw := run(k)
				if firstDiff(dx, wdx) >= 0 || firstDiff(dw, wdw) >= 0 {
					t.Fatalf("%s d=%d rows=%d mode=%d atEnd=%v inPlace=%v: differs from generic", k, d, rows, mode, atEnd, inPlace)
				}
				runs++
			}
		}
	})
	t.Logf("%d runs of Norm.Backward under guard pages", runs)
}

// backwardGuardGap is the gap between rows in the backward guard-page tests.
const backwardGuardGap = 3

// eachBackwardGuardShape calls f for every kernel and shape of the backward guard-page tests: the
// row lengths of guardDims up to 300, 513 and 4097; one row, and three backwardGuardGap apart.
func eachBackwardGuardShape(f func(k kernelID, d, rows, stride, span int)) {
	for _, k := range testKernels() {
		for _, d := range guardDims() {
			if d == 0 || (d > 300 && d != 4097 && d != 513) {
				continue
			}
			for _, rows := range []int{1, 3} {
				stride := d
				if rows > 1 {
					stride = d + backwardGuardGap
				}
				f(k, d, rows, stride, (rows-1)*stride+d)
			}
		}
	}
}

// TestGuardPagesPipe runs rows that the pipe takes with x, the weight and dst (and LayerNorm's
// bias) against guard pages (at the end of one, then at the start of one), so that the pipe's
// reads of the next row and its stores stay within the rows: float32 Forward, RMSNorm and
// LayerNorm (Center, weight, bias), streamed, pipe forced on, against generic.
func TestGuardPagesPipe(t *testing.T) {
	const maxRows = 4
	dims := []int{576, 1088, 4096}
	maxFloats := dims[len(dims)-1] * maxRows
	rx, rw, rd := newGuardedRegion(t, maxFloats), newGuardedRegion(t, maxFloats), newGuardedRegion(t, maxFloats)
	rb := newGuardedRegion(t, maxFloats)
	for _, k := range testKernels() {
		for _, d := range dims {
			for rows := 2; rows <= maxRows; rows++ {
				for _, layer := range []bool{false, true} {
					x := normalRows(d, rows, 31)
					w, b := normalRows(d, 1, 32), normalRows(d, 1, 33)
					forward := func(k kernelID, dst, x, w, b []float32) {
						if !layer {
							forwardWith(k, dst, x, w, 1e-6)
							return
						}
						n := Norm{Eps: 1e-6, Dim: d, Center: true, Weight: w, Bias: b}
						applyWith(k, &n, &Rows{Dst: dst, X: x})
					}
					want := make([]float32, len(x))
					forward(kernelGeneric, want, x, w, b)
					for _, atEnd := range []bool{true, false} {
						gx, gw, gd, gb := rx.slice(len(x), atEnd), rw.slice(d, atEnd), rd.slice(len(x), atEnd), rb.slice(d, atEnd)
						copy(gx, x)
						copy(gw, w)
						copy(gb, b)
						var faulted bool
						withStreaming(true, func() {
							pipeRows = true
							faulted = faults(func() { forward(k, gd, gx, gw, gb) })
						})
						if faulted {
							t.Fatalf("%s d=%d rows=%d layer=%v atEnd=%v: the kernel touched a guard page", k.name(), d, rows, layer, atEnd)
						}
						if i := firstDiff(gd, want); i >= 0 {
							t.Fatalf("%s d=%d rows=%d layer=%v atEnd=%v: y[%d] = %v, generic gives %v", k.name(), d, rows, layer, atEnd, i, gd[i], want[i])
						}
					}
				}
			}
		}
	}
}
