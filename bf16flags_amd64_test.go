//go:build amd64 && gc && !purego && !noasm

package rmsnorm

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"

	"github.com/gosimd/rmsnorm/internal/mxcsr"
)

// flagsCases are the calls of the tests below: rows of 1024, which take the loops that read
// MXCSR's flags with any weight form; rows of 384 with RoundNormalized, which take them alone
// only so (rnFlagsAbove); and nine rows of 128, two groups of four and a row alone, which take
// them in groups (checked once per group: groupFlags) and not alone.
var flagsCases = []struct {
	d, rows int
	rn      bool
}{{1024, 3, false}, {384, 3, true}, {128, 9, false}}

// The loops that read MXCSR's flags (asm/amd64/bf16flags.go) with the invalid and denormal flags
// already set on the thread when the call comes, as earlier arithmetic (C code in the same
// process, or Go code on a subnormal) leaves them: every kernel gives generic's bits, and the
// avx512+bf16 kernel leaves the two flags cleared after ordinary rows. (Whether
// it cleared them on the way in or redid the first row and cleared them then, the outputs and the
// flags after the call are the same: only the time tells, which tests do not measure.)
func TestBF16FlagsSetBefore(t *testing.T) {
	logBF16Paths(t)
	old := lockMXCSR(t)
	type lane struct {
		name string
		set  func(x, w, b []float32, p int)
	}
	lanes := []lane{
		{"none", func(x, w, b []float32, p int) {}},
		{"subnormal y", func(x, w, b []float32, p int) { x[p], w[p], b[p] = 0x1p-60*0x1p-50, 0x1p-18, 0 }},
		{"quiet NaN weight", func(x, w, b []float32, p int) { w[p] = math.Float32frombits(0xffc00000) }},
		{"quiet NaN bias", func(x, w, b []float32, p int) { b[p] = math.Float32frombits(0x7fc12345) }},
	}
	calls := 0
	for _, c := range flagsCases {
		d, rows := c.d, c.rows
		for _, ln := range lanes {
			for _, f := range []format{formatBF16, formatToBF16} {
				for _, bias := range []bool{false, true} {
					x, _, w, b := normalInputs(seedFor(d, int(f)), rows, d)
					ln.set(x[d:2*d], w, b, 100)
					n := Norm{Weight: w, Eps: 1e-6, RoundNormalized: c.rn}
					if bias {
						n.Bias = b
					}
					want, _ := flaggedCall(kernelGeneric, &n, f, x, nil, false, false)
					x16 := narrowAll(x, formatBF16)
					for _, k := range simdKernels() {
						dst := make([]uint16, rows*d)
						ctx := fmt.Sprintf("%s d=%d rn=%v %s bias=%v %s", k, d, c.rn, applyNamesOf[f].fn, bias, ln.name)
						mxcsr.Set(mxcsr.Default | mxcsr.Invalid | mxcsr.Denormal)
						bf16Out(k, &n, f, dst, x, x16, 0, 0, 0)
						after := mxcsr.Get()
						mxcsr.Set(old)
						check16Exact(t, ctx, dst, want)
						if k == kernelAVX512BF16 && ln.name == "none" && after&(mxcsr.Invalid|mxcsr.Denormal) != 0 {
							t.Errorf("%s: MXCSR %#x after a call on ordinary rows of %d entered with the invalid and denormal flags set: not cleared", ctx, after, d)
						}
						calls++
					}
				}
			}
		}
	}
	t.Logf("%d calls on kernels %v", calls, simdKernels())
}

// lockMXCSR locks the test's goroutine to its thread, whose MXCSR the test sets (MXCSR is the
// thread's), and returns the register's value, which it puts back, unlocking the goroutine, when
// the test ends.
func lockMXCSR(t *testing.T) uint32 {
	runtime.LockOSThread()
	old := mxcsr.Get()
	t.Cleanup(func() {
		mxcsr.Set(old)
		runtime.UnlockOSThread()
	})
	return old
}

// With the invalid and denormal exceptions unmasked on the thread (C code's feenableexcept), the
// avx512+bf16 kernel keeps its classified loops, which narrow NaN and subnormal lanes without a
// trap, rather than the loops whose VMAXPS would trap on them. (The avx2 functions of bfloat16
// rows trap on a subnormal output lane with the denormal exception unmasked, as they always did:
// their check of the rounded lanes compares it. The package, like Go code, assumes Go's MXCSR;
// this test holds the new loops to what the kernel did before them.)
func TestBF16ExceptionsUnmasked(t *testing.T) {
	if !slices.Contains(testKernels(), kernelAVX512BF16) {
		t.Logf("no avx512+bf16 under test: nothing to run (%v)", testKernels())
		return
	}
	old := lockMXCSR(t)
	calls := 0
	for _, c := range flagsCases {
		d, rows := c.d, c.rows
		for _, lane := range []string{"subnormal y", "quiet NaN weight"} {
			x, _, w, _ := normalInputs(seedFor(d, 7), rows, d)
			if lane == "subnormal y" {
				x[d+100], w[100] = 0x1p-110, 0x1p-18 // y about 2^-128 from normal operands
			} else {
				w[100] = math.Float32frombits(0xffc00000)
			}
			n := Norm{Weight: w, Eps: 1e-6, RoundNormalized: c.rn}
			for _, f := range []format{formatBF16, formatToBF16} {
				want, _ := flaggedCall(kernelGeneric, &n, f, x, nil, false, false)
				x16 := narrowAll(x, formatBF16)
				for _, m := range []uint32{mxcsr.InvalidMask, mxcsr.DenormalMask} {
					dst := make([]uint16, rows*d)
					mxcsr.Set(mxcsr.Default &^ m)
					bf16Out(kernelAVX512BF16, &n, f, dst, x, x16, 0, 0, 0)
					mxcsr.Set(old)
					check16Exact(t, fmt.Sprintf("d=%d rn=%v %s %s MXCSR %#x", d, c.rn, lane, applyNamesOf[f].fn, mxcsr.Default&^m), dst, want)
					calls++
				}
			}
		}
	}
	t.Logf("%d calls, each with an exception unmasked", calls)
}

// The bfloat16 row functions of the avx512+bf16 kernel (callRowBF16 and callRowBF16RN: one row in
// cache) under the MXCSR states of the two tests above: with the invalid and denormal flags set
// when the call comes, a row of more than 512 (256 with RoundNormalized; out of place the loop
// that reads them, in place the function clears them too, as the job's functions do for such a
// call) leaves them cleared and
// every row, ordinary or with a lane of rowBF16Lanes, comes out with generic's bits; with either
// exception unmasked, the rows with those lanes come out right, without a trap (the classified
// loop: a VMAXPS on such a lane would trap), but for the subnormal x*inv with the denormal one
// unmasked, whose multiply traps in every kernel (as in TestBF16ExceptionsUnmasked, the package
// assumes Go's MXCSR).
func TestRowBF16MXCSR(t *testing.T) {
	if !slices.Contains(testKernels(), kernelAVX512BF16) {
		t.Logf("no avx512+bf16 under test: nothing to run (%v)", testKernels())
		return
	}
	old := lockMXCSR(t)
	const big = 0x1p50
	lanes := append([]struct {
		name string
		set  func(x, w []float32, p int)
	}{{"none", func(x, w []float32, p int) {}}}, rowBF16Lanes...)
	calls := 0
	for _, d := range []int{128, 384, 1024, 4096} {
		for _, rn := range []bool{false, true} {
			// The rows that clear the flags: longer than 512, or 256 with RoundNormalized.
			clears := d > groupMax || rn && d > 256
			for _, ln := range lanes {
				x32, _, w, _ := normalInputs(seedFor(d, 83), 1, d)
				for i := range x32 {
					x32[i] *= big
				}
				ln.set(x32, w, d/2+5)
				x := narrowAll(x32, formatBF16)
				n := Norm{Weight: w, Eps: 1e-6, RoundNormalized: rn}
				want := make([]uint16, d)
				applyKernel(kernelGeneric, &n, formatBF16, &rowsOf[uint16, uint16]{Dst: want, X: x})
				for _, inPlace := range []bool{false, true} {
					states := []uint32{mxcsr.Default | mxcsr.Invalid | mxcsr.Denormal, mxcsr.Default &^ mxcsr.InvalidMask, mxcsr.Default &^ mxcsr.DenormalMask}
					if ln.name == "subnormal x*inv" {
						// Its (x*inv)*w multiplies a subnormal, which traps in every kernel with the
						// denormal exception unmasked: the flags alone then.
						states = states[:2]
					}
					for _, state := range states {
						got := make([]uint16, d)
						src := x
						if inPlace {
							copy(got, x)
							src = got
						}
						mxcsr.Set(state)
						ret := rowCallBF16(rn)(ptr(got), ptr(src), nil, ptr(w), d, 1e-6, kernelAVX512BF16)
						after := mxcsr.Get()
						mxcsr.Set(old)
						ctx := fmt.Sprintf("d=%d rn=%v %s inplace=%v MXCSR %#x", d, rn, ln.name, inPlace, state)
						if ret != rowDone {
							t.Fatalf("%s: the row function returned %d, want rowDone", ctx, ret)
						}
						check16Exact(t, ctx, got, want)
						if state&(mxcsr.InvalidMask|mxcsr.DenormalMask) == mxcsr.InvalidMask|mxcsr.DenormalMask &&
							clears && ln.name == "none" && after&(mxcsr.Invalid|mxcsr.Denormal) != 0 {
							t.Errorf("%s: MXCSR %#x after an ordinary row entered with the invalid and denormal flags set: not cleared", ctx, after)
						}
						calls++
					}
				}
			}
		}
	}
	t.Logf("%d calls", calls)
}
