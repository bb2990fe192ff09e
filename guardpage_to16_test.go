//go:build linux || darwin

package rmsnorm

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Guard pages (see guardpage_test.go) for ApplyToBF16 and ApplyToF16, every buffer against one;
// and for DstStride in every form: rows of x and dst each in pages of their own between
// inaccessible pages, so that a kernel that reads or writes one element past a row, or before it,
// faults, and the memory around the rows keeps a pattern that shows any other write.

// ApplyToBF16 and ApplyToF16 with every buffer against a guard: rows back to back at every length
// of guardDims, then strided rows with residual, Inv, every weight form and RoundNormalized.
func TestGuardPagesTo16(t *testing.T) {
	const rows, gap = 3, 3
	maxFloats := (rows-1)*(65537+gap) + 65537
	regions := make([]*guardedRegion, 5)
	for i := range regions {
		regions[i] = newGuardedRegion(t, maxFloats)
	}
	runs := 0
	for _, k := range testKernels() {
		for _, f := range formatsTo16 {
			for _, d := range guardDims() {
				if d == 0 {
					continue
				}
				r := seedFor(d, 25, int(f))
				x := make([]float32, rows*d)
				fill(x, valueClasses[d%len(valueClasses)], r)
				w := normalRows(d, 1, d)
				want := make([]uint16, len(x))
				applyKernel(kernelGeneric, &Norm{Weight: w, Eps: 1e-6}, f, &rowsOf[uint16, float32]{Dst: want, X: x})
				for _, atEnd := range []bool{true, false} {
					gx, gd := regionSlice[float32](regions[0], len(x), atEnd), regionSlice[uint16](regions[1], len(x), atEnd)
					gw := regionSlice[float32](regions[2], d, atEnd)
					copy(gx, x)
					copy(gw, w)
					n := Norm{Weight: gw, Eps: 1e-6}
					call := func() { applyKernel(k, &n, f, &rowsOf[uint16, float32]{Dst: gd, X: gx}) }
					if faulted, excused := bochsFault(k, call, ends16(gd, 1, len(gd), len(gd))...); excused {
						continue
					} else if faulted {
						t.Fatalf("%s %s d=%d atEnd=%v: the kernel touched a guard page", k, fname(f), d, atEnd)
					}
					check16(t, fmt.Sprintf("%s %s d=%d atEnd=%v", k, fname(f), d, atEnd), f, gd, want)
					runs++
				}
			}
			for _, d := range []int{1, 2, 3, 5, 8, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 120, 127, 128, 129, 300, 511, 512, 513, 4097} {
				stride := d + gap
				span := (rows-1)*stride + d
				r := seedFor(d, 26, int(f))
				x := make([]float32, span)
				fill(x, classNormal, r)
				res0 := make([]float32, span)
				fill(res0, classUniform, r)
				w := normalRows(d, 1, d+1)
				for _, mode := range []weightMode{weighted, offset, unweighted} {
					for _, rn := range []bool{false, true} {
						for _, atEnd := range []bool{true, false} {
							// dst rows back to back under the strided x: the head-major layout.
							run := func(kk kernelID) (y []uint16, res, inv []float32, excused bool) {
								gx, gd := regionSlice[float32](regions[0], span, atEnd), regionSlice[uint16](regions[1], rows*d, atEnd)
								gr := regionSlice[float32](regions[2], span, atEnd)
								gi, gw := regionSlice[float32](regions[3], rows, atEnd), regionSlice[float32](regions[4], d, atEnd)
								copy(gx, x)
								copy(gr, res0)
								copy(gw, w)
								n := normFor(mode, gw, 1e-6)
								n.RoundNormalized = rn
								rr := rowsOf[uint16, float32]{Dst: gd, X: gx, N: rows, Stride: stride, DstStride: d, Residual: gr, Inv: gi}
								if faulted, excused := bochsFault(kk, func() { applyKernel(kk, &n, f, &rr) }, ends16(gd, rows, d, d)...); excused {
									return nil, nil, nil, true
								} else if faulted {
									t.Fatalf("%s %s d=%d mode=%d rn=%v atEnd=%v: the kernel touched a guard page", kk, fname(f), d, mode, rn, atEnd)
								}
								return slices.Clone(gd), slices.Clone(gr), slices.Clone(gi), false
							}
							wy, wr, wi, _ := run(kernelGeneric)
							y, res, inv, excused := run(k)
							if excused || bochsChains(k, f, false, rn && mode != unweighted) {
								continue // the call ran under the guards; its values carry Bochs's rounding
							}
							ctx := fmt.Sprintf("%s %s d=%d mode=%d rn=%v atEnd=%v", k, fname(f), d, mode, rn, atEnd)
							check16(t, ctx+" y", f, y, wy)
							if firstDiff(res, wr) >= 0 || firstDiff(inv, wi) >= 0 {
								t.Fatalf("%s: Residual or Inv differs from generic", ctx)
							}
							runs++
						}
					}
				}
			}
		}
	}
	t.Logf("%d runs of ApplyToBF16 and ApplyToF16 under guard pages (kernels %v)", runs, testKernels())
}

// stripedRegion holds rows rows, each in pages of its own with an inaccessible page before and
// after them, flush against the one after (atEnd) or the one before. The rest of the accessible
// memory holds stripeByte.
type stripedRegion struct {
	mem       []byte
	ps        int
	rowPages  int // accessible pages of each row
	rows      int
	rowBytes  int
	firstByte int // offset in mem of row 0
}

const stripeByte = 0xa5

// newStripedRegion maps a striped region for rows of rowBytes, extra pages more than they need
// each (so that two regions for the same rows can have different strides), unmapped when the
// test ends.
func newStripedRegion(t testing.TB, rows, rowBytes, extra int, atEnd bool) *stripedRegion {
	t.Helper()
	ps := os.Getpagesize()
	rp := (rowBytes+ps-1)/ps + extra
	s := &stripedRegion{ps: ps, rowPages: rp, rows: rows, rowBytes: rowBytes}
	mem, err := unix.Mmap(-1, 0, ps+rows*(rp+1)*ps, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	s.mem = mem
	for i := range mem {
		mem[i] = stripeByte
	}
	guard := func(page int) {
		if err := unix.Mprotect(mem[page*ps:(page+1)*ps], unix.PROT_NONE); err != nil {
			t.Fatal(err)
		}
	}
	guard(0)
	for r := range rows {
		guard(1 + r*(rp+1) + rp)
	}
	s.firstByte = ps
	if atEnd {
		s.firstByte += rp*ps - rowBytes
	}
	return s
}

// stripedRegions maps each striped region once and hands it out again: a run that passes leaves
// the memory outside the rows as it found it.
type stripedRegions struct {
	t testing.TB
	m map[stripedKey]*stripedRegion
}

// stripedKey is a region's role (X, Residual or Dst) and shape.
type stripedKey struct {
	role                  string
	rows, rowBytes, extra int
	atEnd                 bool
}

func (rs *stripedRegions) get(role string, rows, rowBytes, extra int, atEnd bool) *stripedRegion {
	k := stripedKey{role, rows, rowBytes, extra, atEnd}
	if rs.m == nil {
		rs.m = map[stripedKey]*stripedRegion{}
	}
	if rs.m[k] == nil {
		rs.m[k] = newStripedRegion(rs.t, rows, rowBytes, extra, atEnd)
	}
	return rs.m[k]
}

// stride returns the distance between the rows' starts in bytes.
func (s *stripedRegion) stride() int { return (s.rowPages + 1) * s.ps }

// stripedSlice returns the rows of s as elements of T, d a row: (rows-1)*stride + d elements,
// the stride returned. Only the rows may be accessed: between them lie inaccessible pages.
func stripedSlice[T elem](s *stripedRegion, d int) ([]T, int) {
	size := int(unsafe.Sizeof(*new(T)))
	if d*size != s.rowBytes {
		panic("stripedSlice: rows of another length than the region's")
	}
	stride := s.stride() / size
	return unsafe.Slice((*T)(unsafe.Pointer(&s.mem[s.firstByte])), (s.rows-1)*stride+d), stride
}

// check fails if a byte of the accessible memory outside the rows no longer holds stripeByte.
func (s *stripedRegion) check(t *testing.T, ctx, name string) {
	t.Helper()
	stripes := bytes.Repeat([]byte{stripeByte}, s.rowPages*s.ps)
	for r := range s.rows {
		lo := s.ps + r*s.stride() // the row's first accessible byte
		row := s.firstByte + r*s.stride()
		before, after := s.mem[lo:row], s.mem[row+s.rowBytes:lo+s.rowPages*s.ps]
		if !bytes.Equal(before, stripes[:len(before)]) || !bytes.Equal(after, stripes[:len(after)]) {
			t.Fatalf("%s: %s: memory around row %d, outside the rows, was written", ctx, name, r)
		}
	}
}

// packRows copies the rows of d, stride apart, of s back to back.
func packRows[T elem](s []T, d, rows, stride int) []T {
	out := make([]T, 0, rows*d)
	for r := range rows {
		out = append(out, s[r*stride:r*stride+d]...)
	}
	return out
}

// stripedRun runs the Apply method of format f with kernel k on rows of x (and res) in a striped
// region and dst in another, with extra pages xExtra and dExtra (so Stride and DstStride
// differ), and returns dst, the residual and Inv packed back to back. It fails on a fault and on
// a write outside the rows; on a fault that bochsFault excuses (under -bochs) it checks the
// stripes and X, and returns excused instead of the results.
func stripedRun[D, T elem](t *testing.T, regions *stripedRegions, ctx string, k kernelID, f format, n Norm, d, rows int, x, res []T, inv []float32,
	xExtra, dExtra int, atEnd bool) (y []D, h []T, excused bool) {
	t.Helper()
	var zd D
	var zt T
	xs := regions.get("X", rows, d*int(unsafe.Sizeof(zt)), xExtra, atEnd)
	ds := regions.get("Dst", rows, d*int(unsafe.Sizeof(zd)), dExtra, atEnd)
	gx, stride := stripedSlice[T](xs, d)
	gd, dstStride := stripedSlice[D](ds, d)
	for r := range rows {
		copy(gx[r*stride:r*stride+d], x[r*d:(r+1)*d])
	}
	rr := rowsOf[D, T]{Dst: gd, X: gx, N: rows, Stride: stride, DstStride: dstStride, Inv: inv}
	ends := append(ends16(gx, rows, stride, d), ends16(gd, rows, dstStride, d)...)
	var rs *stripedRegion
	if res != nil {
		rs = regions.get("Residual", rows, d*int(unsafe.Sizeof(zt)), xExtra, atEnd)
		gr, _ := stripedSlice[T](rs, d)
		for r := range rows {
			copy(gr[r*stride:r*stride+d], res[r*d:(r+1)*d])
		}
		rr.Residual = gr
		ends = append(ends, ends16(gr, rows, stride, d)...)
	}
	ctx = fmt.Sprintf("%s %s %s Stride=%d DstStride=%d", ctx, k, fname(f), stride, dstStride)
	faulted, excused := bochsFault(k, func() { applyKernel(k, &n, f, &rr) }, ends...)
	if faulted && !excused {
		t.Fatalf("%s: the kernel touched a guard page between or around the rows", ctx)
	}
	xs.check(t, ctx, "X")
	ds.check(t, ctx, "Dst")
	if rs != nil {
		rs.check(t, ctx, "Residual")
		h = packRows(rr.Residual, d, rows, stride)
	}
	if i := slices.Compare(packRows(gx, d, rows, stride), x); i != 0 {
		t.Fatalf("%s: X changed", ctx)
	}
	if excused {
		return nil, nil, true
	}
	return packRows(gd, d, rows, dstStride), h, false
}

// checkStriped runs stripedRun with the generic kernel and with kernel k and compares dst, the
// residual and Inv.
func checkStriped[D, T elem](t *testing.T, regions *stripedRegions, ctx string, k kernelID, f format, n Norm, d, rows int, x, res []T, xExtra, dExtra int, atEnd bool) {
	t.Helper()
	wantInv, gotInv := sentinels(rows), sentinels(rows)
	wy, wh, _ := stripedRun[D](t, regions, ctx, kernelGeneric, f, n, d, rows, x, res, wantInv, xExtra, dExtra, atEnd)
	y, h, excused := stripedRun[D](t, regions, ctx, k, f, n, d, rows, x, res, gotInv, xExtra, dExtra, atEnd)
	if excused || bochsChains(k, f, res != nil, n.RoundNormalized && n.Weight != nil) {
		return // the call ran under the guards; its values carry Bochs's rounding
	}
	ctx = fmt.Sprintf("%s %s %s", ctx, k, fname(f))
	for i := range wy {
		if !sameElem(y[i], wy[i], f) {
			t.Fatalf("%s: y[%d] = %#x, generic gives %#x", ctx, i, bitsOf(y[i]), bitsOf(wy[i]))
		}
	}
	for i := range wh {
		if !sameElem(h[i], wh[i], f) {
			t.Fatalf("%s: Residual[%d] = %#x, generic gives %#x", ctx, i, bitsOf(h[i]), bitsOf(wh[i]))
		}
	}
	if i := firstDiff(gotInv, wantInv); i >= 0 {
		t.Fatalf("%s: Inv[%d] = %v, generic gives %v", ctx, i, gotInv[i], wantInv[i])
	}
}

// DstStride in every form: the rows of x, the residual and dst each between inaccessible pages,
// dst rows further apart than those of x and closer, on every kernel under test against generic,
// for every weight form, with and without a residual, with and without RoundNormalized.
func TestGuardPagesDstStride(t *testing.T) {
	const rows = 3
	runs := 0
	regions := &stripedRegions{t: t}
	for _, d := range []int{1, 2, 3, 5, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 300, 511, 512, 513, 1024, 4097} {
		r := seedFor(d, 27)
		x := make([]float32, rows*d)
		fill(x, classNormal, r)
		res := make([]float32, rows*d)
		fill(res, classUniform, r)
		w := normalRows(d, 1, d+2)
		for _, k := range testKernels() {
			for mi, mode := range []weightMode{weighted, offset, unweighted} {
				n := normFor(mode, w, 1e-6)
				n.RoundNormalized = mi != 1
				for _, atEnd := range []bool{true, false} {
					for _, extra := range [][2]int{{0, 1}, {1, 0}} {
						var rs []float32 // the residual on every other run
						if (d+mi)%2 == 0 {
							rs = res
						}
						ctx := fmt.Sprintf("d=%d mode=%d rn=%v atEnd=%v extra pages x, dst=%v residual=%v", d, mode, n.RoundNormalized, atEnd, extra, rs != nil)
						checkStriped[float32](t, regions, ctx, k, formatF32, n, d, rows, x, rs, extra[0], extra[1], atEnd)
						for _, f := range formatsTo16 {
							checkStriped[uint16](t, regions, ctx, k, f, n, d, rows, x, rs, extra[0], extra[1], atEnd)
						}
						for _, f := range formats16 {
							var rs16 []uint16
							if rs != nil {
								rs16 = narrowAll(rs, f)
							}
							checkStriped[uint16](t, regions, ctx, k, f, n, d, rows, narrowAll(x, f), rs16, extra[0], extra[1], atEnd)
						}
						runs += 5
					}
				}
			}
		}
	}
	t.Logf("%d runs with rows between guard pages (kernels %v)", runs, testKernels())
}
