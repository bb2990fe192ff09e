package rmsnorm

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// ApplyToBF16 and ApplyToF16 (RowsTo16), float32 rows normalized into 16-bit ones in one pass,
// against what the package documentation says they compute, through the public methods on every
// kernel under test: the output is the 16-bit rounding of what Apply computes (Apply into a
// float32 buffer, then Float32ToBF16 or Float32ToF16); Residual and Inv are Apply's, bit for bit;
// with RoundNormalized and a weight, x*inv is rounded to the format before the weight, as
// ApplyBF16 and ApplyF16 do. (TestVariantsMatchGenericTo16 compares the kernels with generic.)

// applyTo16 calls the public method of format f: ApplyToBF16 or ApplyToF16.
func applyTo16(n Norm, f format, r RowsTo16) {
	if f == formatToBF16 {
		n.ApplyToBF16(r)
	} else {
		n.ApplyToF16(r)
	}
}

// float32To16 is the public conversion into the output format of f: Float32ToBF16 or
// Float32ToF16.
func float32To16(f format, dst []uint16, src []float32) {
	if f.out() == formatBF16 {
		Float32ToBF16(dst, src)
	} else {
		Float32ToF16(dst, src)
	}
}

// to16Layout is how the rows of one call lie: Rows.N, Stride and DstStride.
type to16Layout struct{ n, stride, dstStride int }

// to16Layouts are the layouts of TestApplyTo16Contract for rows rows of d: back to back (N = 0),
// strided x with dst at the same stride, strided x into dst back to back (the head-major layout),
// and x back to back into dst rows further apart.
func to16Layouts(d, rows int) []to16Layout {
	return []to16Layout{{0, 0, 0}, {rows, d + 3, 0}, {rows, d + 3, d}, {rows, d, d + 5}}
}

// resolve returns the stride and DstStride the layout gives rows of d, and the elements x and dst
// span.
func (l to16Layout) resolve(d, rows int) (stride, dstStride, span, dspan int) {
	stride, dstStride = l.stride, l.dstStride
	if stride == 0 {
		stride = d
	}
	if dstStride == 0 {
		dstStride = stride
	}
	return stride, dstStride, (rows-1)*stride + d, (rows-1)*dstStride + d
}

// ordinaryRow reports whether a row certainly takes the float32 path with eps (step 5 of the
// contract does not apply): its values are finite, and its float64 sum of squares and
// t = ss/d + eps lie far inside the float32 range and above 2^-100, so that the float32 ones do
// too.
func ordinaryRow(h []float32, eps float32) bool {
	var ss float64
	for _, v := range h {
		if math.IsInf(float64(v), 0) || v != v {
			return false
		}
		ss += float64(v) * float64(v)
	}
	t := ss/float64(len(h)) + float64(eps)
	return ss <= 1e37 && t >= 1e-28 && t <= 1e37
}

func TestApplyTo16Contract(t *testing.T) {
	defer active.Store(active.Load())
	checked := 0 // rows checked against the RoundNormalized formula
	for _, k := range testKernels() {
		active.Store(uint32(k)) // SetKernel("avx512") would pick kernelAVX512BF16 where it stands for avx512
		for _, f := range formatsTo16 {
			for _, d := range []int{1, 7, 64, 100, 513} {
				for _, rows := range []int{1, 5} {
					for ci, class := range valueClasses {
						lay := to16Layouts(d, rows)[(d+ci)%4]
						_, _, span, _ := lay.resolve(d, rows)
						r := seedFor(d, rows, ci, 40, int(f))
						x := make([]float32, span)
						fill(x, class, r)
						res := make([]float32, span)
						fill(res, valueClasses[(ci+3)%len(valueClasses)], r)
						w := make([]float32, d)
						fill(w, weightClasses[(d+ci)%len(weightClasses)], r)
						for _, mode := range []weightMode{weighted, offset, unweighted} {
							for _, rn := range []bool{false, true} {
								for opt := range 4 {
									n := normFor(mode, w, 1e-6)
									n.RoundNormalized = rn
									withRes, withInv := opt&1 != 0, opt&2 != 0
									ctx := fmt.Sprintf("%s %s d=%d rows=%d %s layout=%+v mode=%d rn=%v residual=%v inv=%v",
										k, fname(f), d, rows, class.name, lay, mode, rn, withRes, withInv)
									var rs []float32
									if withRes {
										rs = res
									}
									checked += checkTwoPass(t, ctx, n, f, d, rows, lay, x, rs, withInv)
								}
							}
						}
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no row was checked against the RoundNormalized formula")
	}
	t.Logf("%d rows checked against round16(round16(x*inv)*w')", checked)
}

// checkTwoPass runs the method of format f with Norm n on the rows of x (span elements of
// layout lay; the residual res when set; Inv when withInv) through the public API, and fails
// unless it gives what the package documentation says (see the top of this file). It returns how
// many rows it checked against the RoundNormalized formula (rows of the float32 path, with
// RoundNormalized and a weight).
func checkTwoPass(t *testing.T, ctx string, n Norm, f format, d, rows int, lay to16Layout, x, res []float32, withInv bool) (checked int) {
	t.Helper()
	stride, dstStride, span, dspan := lay.resolve(d, rows)
	// The two passes: Apply into float32 rows at Stride, then each row rounded into the 16-bit
	// rows at DstStride.
	ref := Rows{Dst: sentinels(span), X: slices.Clone(x), N: lay.n, Stride: lay.stride}
	got := RowsTo16{Dst: make([]uint16, dspan), X: slices.Clone(x), N: lay.n, Stride: lay.stride, DstStride: lay.dstStride}
	for i := range got.Dst {
		got.Dst[i] = guard16
	}
	if res != nil {
		ref.Residual, got.Residual = slices.Clone(res), slices.Clone(res)
	}
	if withInv {
		ref.Inv, got.Inv = sentinels(rows), sentinels(rows)
	}
	n.Apply(ref)
	applyTo16(n, f, got)

	if i := firstDiff(got.X, x); i >= 0 {
		t.Fatalf("%s: X[%d] changed", ctx, i)
	}
	if res != nil {
		if i := firstDiff(got.Residual, ref.Residual); i >= 0 {
			t.Fatalf("%s: Residual[%d] = %v, Apply gives %v", ctx, i, got.Residual[i], ref.Residual[i])
		}
	}
	if withInv {
		if i := firstDiff(got.Inv, ref.Inv); i >= 0 {
			t.Fatalf("%s: Inv[%d] = %v, Apply gives %v", ctx, i, got.Inv[i], ref.Inv[i])
		}
	}
	want := make([]uint16, dspan) // the elements between rows stay guard16
	for i := range want {
		want[i] = guard16
	}
	for row := range rows {
		float32To16(f, want[row*dstStride:row*dstStride+d], ref.Dst[row*stride:row*stride+d])
	}
	if !n.RoundNormalized || n.Weight == nil {
		if i := diff16(got.Dst, want, f); i >= 0 {
			t.Fatalf("%s: Dst[%d] = %#04x, Apply then the conversion give %#04x", ctx, i, got.Dst[i], want[i])
		}
		return 0
	}

	// RoundNormalized with a weight: n = round16(h*inv) first, then y = round16(n*w'), on the
	// rows of the float32 path, with the row's inv (Inv is Apply's, checked above).
	h := x
	if res != nil {
		h = ref.Residual
	}
	inv := make([]float32, rows)
	applyRowsWith(kernelGeneric, &Norm{Dim: d, Eps: n.Eps}, formatF32, sentinels(span), h, nil, inv, lay.n, lay.stride)
	for row := range rows {
		hr := h[row*stride : row*stride+d]
		if !ordinaryRow(hr, n.Eps) {
			continue
		}
		checked++
		for i, v := range hr {
			nv := f.round(v * inv[row])
			wi := n.Weight[i]
			if n.UnitOffset {
				wi = 1 + n.Weight[i]
			}
			if y, want := got.Dst[row*dstStride+i], f.narrow(nv*wi); !same16(y, want, f) {
				t.Fatalf("%s: row %d: y[%d] = %#04x, round16(round16(x*inv)*w') gives %#04x", ctx, row, i, y, want)
			}
		}
	}
	// The residual's h, normalized on its own, gives the same rows.
	if res != nil {
		again := RowsTo16{Dst: make([]uint16, dspan), X: h, N: lay.n, Stride: lay.stride, DstStride: lay.dstStride}
		for i := range again.Dst {
			again.Dst[i] = guard16
		}
		applyTo16(n, f, again)
		if i := diff16(got.Dst, again.Dst, f); i >= 0 {
			t.Fatalf("%s: Dst[%d] = %#04x, the same Norm on h without a residual gives %#04x", ctx, i, got.Dst[i], again.Dst[i])
		}
	}
	return checked
}

// With RoundNormalized, float32 rows whose values the 16-bit format holds exactly give what
// ApplyBF16 and ApplyF16 give on the same rows stored in 16 bits: the same roundings, on the
// float64 path too (the huge, wide and special classes send rows there).
func TestApplyTo16AsApply16(t *testing.T) {
	defer active.Store(active.Load())
	for _, k := range testKernels() {
		active.Store(uint32(k))
		for _, f := range formatsTo16 {
			for _, d := range []int{1, 5, 64, 129} {
				const rows = 3
				for ci, class := range valueClasses {
					r := seedFor(d, ci, 41, int(f))
					x32 := make([]float32, rows*d)
					fill(x32, class, r)
					x16 := narrowAll(x32, f.out())
					x := widenAll(x16, f.out()) // exactly the 16-bit values
					w := make([]float32, d)
					fill(w, classNormal, r)
					for _, mode := range []weightMode{weighted, offset, unweighted} {
						n := normFor(mode, w, 1e-6)
						n.RoundNormalized = true
						got, want := make([]uint16, len(x)), make([]uint16, len(x))
						gotInv, wantInv := sentinels(rows), sentinels(rows)
						applyTo16(n, f, RowsTo16{Dst: got, X: x, Inv: gotInv})
						r16 := Rows16{Dst: want, X: x16, Inv: wantInv}
						if f == formatToBF16 {
							n.ApplyBF16(r16)
						} else {
							n.ApplyF16(r16)
						}
						ctx := fmt.Sprintf("%s %s d=%d %s mode=%d", k, fname(f), d, class.name, mode)
						if i := diff16(got, want, f); i >= 0 {
							t.Fatalf("%s: y[%d] = %#04x, on the 16-bit rows %#04x", ctx, i, got[i], want[i])
						}
						if i := firstDiff(gotInv, wantInv); i >= 0 {
							t.Fatalf("%s: Inv[%d] = %v, on the 16-bit rows %v", ctx, i, gotInv[i], wantInv[i])
						}
					}
				}
			}
		}
	}
}
