//go:build linux || darwin

package rmsnorm

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Which path a call takes. The entry points send the common calls down short paths (see Apply):
// forwardRows for a plain weight on rows back to back, packedRows for the other weight forms,
// residuals, 16-bit rows and LayerNorm's rows back to back, applyRows for the rest. A test cannot see the path of
// an ordinary call without a probe on it, so here the rows lie in an inaccessible page: validation
// only compares addresses and passes, the kernel faults on its first read, and the stack at the
// fault names the path that called it. This checks the routing, on every kernel; what each path
// costs (the zeroing of the job, the copies of a Rows) only BenchmarkOverhead shows.

// pathAtFault runs f, which must fault reading its rows, and returns which of forwardRows,
// packedRows and applyRows were on the stack when it did.
func pathAtFault(t *testing.T, name string, f func()) (path []string) {
	t.Helper()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		pcs := make([]uintptr, 64)
		frames := runtime.CallersFrames(pcs[:runtime.Callers(0, pcs)]) // the panicking stack, down to the fault
		r := recover()
		// A memory fault: with its address where the platform reports one; qemu-user for 32-bit
		// arm reports none, and the runtime then calls it a nil dereference.
		_, addr := r.(interface{ Addr() uintptr })
		err, isErr := r.(runtime.Error)
		if !addr && !(isErr && strings.Contains(err.Error(), "invalid memory address")) {
			t.Fatalf("%s: the call did not fault reading its rows (recovered %v)", name, r)
		}
		for {
			fr, more := frames.Next()
			for _, p := range []string{"forwardRows", "packedRows", "applyRows"} {
				if strings.Contains(fr.Function, "rmsnorm."+p+"[") {
					path = append(path, p)
				}
			}
			// A row function, <kernel>Row+kind (callRow+kind jumps to it, so that it is the frame
			// below its caller's): "row" for float32 rows, "rowF16" and "rowF16Buf" for binary16, "rowBF16" for bfloat16, and
			// "rowF16RN" and "rowBF16RN" with RoundNormalized.
			// (The avx512+bf16 kernel's functions, named by kernelNames as avx512, start with
			// avx512bf16.)
			for _, k := range append(kernelNames[:], "avx512bf16") {
				if kind, ok := strings.CutPrefix(fr.Function, "github.com/gosimd/rmsnorm."+k+"Row"); ok {
					path = append(path, "row"+kind)
					break
				}
			}
			if !more {
				return
			}
		}
	}()
	f()
	return nil
}

func TestShortPathTaken(t *testing.T) {
	const d = 64
	g := newGuardedRegion(t, 2*d)
	// x and x16: rows in the inaccessible page before the region (validation reads no element).
	x := unsafe.Slice((*float32)(unsafe.Pointer(&g.mem[0])), d)
	x16 := unsafe.Slice((*uint16)(unsafe.Pointer(&g.mem[0])), d)
	w, y, res, inv := ones(d), make([]float32, d), make([]float32, d), make([]float32, 1)
	y16, res16 := make([]uint16, d), make([]uint16, d)
	plain := Norm{Weight: w, Eps: 1e-6}
	one := Norm{Weight: w, Eps: 1e-6, Workers: 1}
	uo := Norm{Weight: w, Eps: 1e-6, UnitOffset: true}
	rn := Norm{Weight: w, Eps: 1e-6, RoundNormalized: true}
	unw := Norm{Dim: d, Eps: 1e-6}
	many := Norm{Weight: w, Eps: 1e-6, Workers: 4} // far below the threshold: Workers 0's paths (oneGoroutine)
	ln := Norm{Weight: w, Bias: w, Center: true, Eps: 1e-12}
	lnBias := Norm{Weight: w, Bias: w, Eps: 1e-12}
	lnCenter := Norm{Weight: w, Center: true, Eps: 1e-12}
	lnUnw := Norm{Dim: d, Bias: w, Center: true, Eps: 1e-12}
	lnMany := Norm{Weight: w, Bias: w, Center: true, Eps: 1e-12, Workers: 4}
	mean := make([]float32, 1)
	cases := []struct {
		name, path string
		f          func()
	}{
		{"Forward", "forwardRows", func() { Forward(y, x, w, 1e-6) }},
		{"ForwardBF16", "forwardRows", func() { ForwardBF16(y16, x16, w, 1e-6) }},
		{"Norm.Forward", "forwardRows", func() { plain.Forward(y, x) }},
		{"Norm.Forward Workers 1", "forwardRows", func() { one.Forward(y, x) }},
		{"Apply", "forwardRows", func() { plain.Apply(Rows{Dst: y, X: x}) }},
		{"Apply Workers 1", "forwardRows", func() { one.Apply(Rows{Dst: y, X: x}) }},
		{"Norm.Forward UnitOffset", "packedRows", func() { uo.Forward(y, x) }},
		{"Apply UnitOffset", "packedRows", func() { uo.Apply(Rows{Dst: y, X: x}) }},
		{"Apply Residual", "packedRows", func() { plain.Apply(Rows{Dst: y, X: x, Residual: res}) }},
		{"Apply Residual Workers 1", "packedRows", func() { one.Apply(Rows{Dst: y, X: x, Residual: res}) }},
		{"Apply UnitOffset Residual", "packedRows", func() { uo.Apply(Rows{Dst: y, X: x, Residual: res}) }},
		{"Norm.ForwardBF16", "forwardRows", func() { plain.ForwardBF16(y16, x16) }},
		{"Norm.ForwardF16 Workers 1", "forwardRows", func() { one.ForwardF16(y16, x16) }},
		{"Norm.ForwardBF16 Workers 1", "forwardRows", func() { one.ForwardBF16(y16, x16) }},
		{"ForwardF16", "forwardRows", func() { ForwardF16(y16, x16, w, 1e-6) }},
		{"Norm.ForwardF16", "forwardRows", func() { plain.ForwardF16(y16, x16) }},
		{"ApplyF16", "packedRows", func() { plain.ApplyF16(Rows16{Dst: y16, X: x16}) }},
		{"ApplyF16 LayerNorm bias only", "packedRows", func() { lnBias.ApplyF16(Rows16{Dst: y16, X: x16}) }},
		{"ApplyBF16 LayerNorm bias only", "packedRows", func() { lnBias.ApplyBF16(Rows16{Dst: y16, X: x16}) }},
		{"Norm.ForwardBF16 UnitOffset", "packedRows", func() { uo.ForwardBF16(y16, x16) }},
		{"Norm.ForwardF16 RoundNormalized", "packedRows", func() { rn.ForwardF16(y16, x16) }},
		{"Norm.ForwardBF16 RoundNormalized", "packedRows", func() { rn.ForwardBF16(y16, x16) }},
		{"ApplyBF16 RoundNormalized", "packedRows", func() { rn.ApplyBF16(Rows16{Dst: y16, X: x16}) }},
		{"ApplyF16 RoundNormalized", "packedRows", func() { rn.ApplyF16(Rows16{Dst: y16, X: x16}) }},
		{"ApplyBF16", "packedRows", func() { plain.ApplyBF16(Rows16{Dst: y16, X: x16}) }},
		{"ApplyF16 RoundNormalized Residual", "packedRows", func() { rn.ApplyF16(Rows16{Dst: y16, X: x16, Residual: res16}) }},
		// LayerNorm's calls of rows back to back: packedRows too, reached from the general-path
		// methods (packedLayer), since the entry points' own tests leave LayerNorm out so that the
		// RMSNorm calls pay nothing for it.
		{"Norm.Forward LayerNorm", "packedRows", func() { ln.Forward(y, x) }},
		{"Norm.Forward LayerNorm bias only", "packedRows", func() { lnBias.Forward(y, x) }},
		{"Norm.Forward LayerNorm Center only", "packedRows", func() { lnCenter.Forward(y, x) }},
		{"Apply LayerNorm Residual", "packedRows", func() { ln.Apply(Rows{Dst: y, X: x, Residual: res}) }},
		{"ApplyBF16 LayerNorm", "packedRows", func() { ln.ApplyBF16(Rows16{Dst: y16, X: x16}) }},
		{"ApplyToBF16 LayerNorm", "packedRows", func() { ln.ApplyToBF16(RowsTo16{Dst: y16, X: x}) }},
		{"Norm.ForwardF16 LayerNorm", "packedRows", func() { ln.ForwardF16(y16, x16) }},
		// The general path, for the probe to tell it apart.
		{"Apply LayerNorm Mean", "applyRows", func() { ln.Apply(Rows{Dst: y, X: x, Mean: mean}) }},
		{"Apply LayerNorm Inv", "applyRows", func() { ln.Apply(Rows{Dst: y, X: x, Inv: inv}) }},
		{"Apply LayerNorm N", "applyRows", func() { ln.Apply(Rows{Dst: y, X: x, N: 1}) }},
		{"Norm.Forward LayerNorm no weight", "applyRows", func() { lnUnw.Forward(y, x) }},
		{"Norm.Forward LayerNorm Workers 4", "packedRows", func() { lnMany.Forward(y, x) }},
		{"Apply Inv", "applyRows", func() { plain.Apply(Rows{Dst: y, X: x, Inv: inv}) }},
		{"Apply N", "applyRows", func() { plain.Apply(Rows{Dst: y, X: x, N: 1}) }},
		{"Apply no weight", "applyRows", func() { unw.Apply(Rows{Dst: y, X: x}) }},
		{"Norm.Forward Workers 4", "forwardRows", func() { many.Forward(y, x) }},
		{"Apply Workers 4", "forwardRows", func() { many.Apply(Rows{Dst: y, X: x}) }},
		{"Apply Residual Workers 4", "packedRows", func() { many.Apply(Rows{Dst: y, X: x, Residual: res}) }},
		{"ApplyBF16 Workers 4", "packedRows", func() { many.ApplyBF16(Rows16{Dst: y16, X: x16}) }},
		{"ApplyToBF16 LayerNorm Workers 4", "packedRows", func() { lnMany.ApplyToBF16(RowsTo16{Dst: y16, X: x}) }},
		{"Norm.ForwardBF16 no weight", "applyRows", func() { unw.ForwardBF16(y16, x16) }},
		{"Norm.ForwardF16 Workers 4", "forwardRows", func() { many.ForwardF16(y16, x16) }},
	}
	// The calls of one float32 row that forwardRows, or with a residual packedRows, gives to the
	// kernel's row function (callRow), on the kernels that have one: the fault is then in that
	// function.
	rowCalls := map[string]bool{"Forward": true, "Norm.Forward": true, "Norm.Forward Workers 1": true, "Apply": true, "Apply Workers 1": true,
		"Apply Residual": true, "Apply Residual Workers 1": true,
		"Norm.Forward Workers 4": true, "Apply Workers 4": true, "Apply Residual Workers 4": true}
	// The same for one binary16 row (callRowF16; of 64 elements, which f16Buffer never takes),
	// and one bfloat16 row (callRowBF16).
	rowF16Calls := map[string]bool{"ForwardF16": true, "Norm.ForwardF16": true, "Norm.ForwardF16 Workers 1": true, "ApplyF16": true,
		"Norm.ForwardF16 Workers 4": true}
	rowBF16Calls := map[string]bool{"ForwardBF16": true, "Norm.ForwardBF16": true, "Norm.ForwardBF16 Workers 1": true, "ApplyBF16": true,
		"ApplyBF16 Workers 4": true}
	// And one row of either with RoundNormalized (callRowF16RN, callRowBF16RN).
	rowF16RNCalls := map[string]bool{"Norm.ForwardF16 RoundNormalized": true, "ApplyF16 RoundNormalized": true}
	rowBF16RNCalls := map[string]bool{"Norm.ForwardBF16 RoundNormalized": true, "ApplyBF16 RoundNormalized": true}
	defer active.Store(active.Load())
	for _, k := range testKernels() {
		active.Store(uint32(k)) // SetKernel("avx512") would pick kernelAVX512BF16 where it stands for avx512
		for _, c := range cases {
			want := []string{c.path}
			switch {
			case rowCalls[c.name] && hasRowFunc(k):
				want = []string{"row", c.path}
			case rowF16Calls[c.name] && hasRowFunc(k):
				want = []string{"rowF16", c.path}
			case rowBF16Calls[c.name] && hasRowBF16(k):
				want = []string{"rowBF16", c.path}
			case rowF16RNCalls[c.name] && hasRowFunc(k):
				want = []string{"rowF16RN", c.path}
			case rowBF16RNCalls[c.name] && hasRowBF16(k):
				want = []string{"rowBF16RN", c.path}
			}
			if got := pathAtFault(t, c.name, c.f); !slices.Equal(got, want) {
				t.Errorf("%s %s: the kernel was called from %v, want %v", k, c.name, got, want)
			}
		}
		// A binary16 row of 2048 with the copy's rule on (as on Zen 5) goes to callRowF16Buf on
		// the kernels that have it, to callRowF16 on the others with a row function.
		{
			const d = 2048
			xl := unsafe.Slice((*uint16)(unsafe.Pointer(&g.mem[0])), d)
			wl, yl := ones(d), make([]uint16, d)
			want := []string{"forwardRows"}
			switch {
			case hasRowF16Buf(k):
				want = []string{"rowF16Buf", "forwardRows"}
			case hasRowFunc(k):
				want = []string{"rowF16", "forwardRows"}
			}
			saved := f16Buffer
			f16Buffer = span(2048, 4096)
			got := pathAtFault(t, "ForwardF16 1x2048", func() { ForwardF16(yl, xl, wl, 1e-6) })
			f16Buffer = saved
			if !slices.Equal(got, want) {
				t.Errorf("%s ForwardF16 1x2048 with the copy's rule on: the kernel was called from %v, want %v", k, got, want)
			}
		}
		// A row beyond the streaming threshold keeps the job, whose kernels stream it.
		var got []string
		withStreaming(true, func() { got = pathAtFault(t, "Forward streamed", func() { Forward(y, x, w, 1e-6) }) })
		if !slices.Equal(got, []string{"forwardRows"}) {
			t.Errorf("%s Forward of a streamed row: the kernel was called from %v, want [forwardRows]", k, got)
		}
		withStreaming(true, func() {
			got = pathAtFault(t, "Apply Residual streamed", func() { plain.Apply(Rows{Dst: y, X: x, Residual: res}) })
		})
		if !slices.Equal(got, []string{"packedRows"}) {
			t.Errorf("%s Apply with a residual of a streamed row: the kernel was called from %v, want [packedRows]", k, got)
		}
	}
}

// Where oneGoroutine's bound lies, on real calls of every entry point that asks it: with Workers
// 4, x one row short of half a share takes the short path Workers 0 takes (forwardRows or
// packedRows); x of half a share takes the general path, where runWorkers still keeps it whole
// when the call moves less than four times its x (out of place, without a residual: under two
// shares). With a residual (four times x) it would split there, and a fault in another goroutine
// cannot be caught, so that call is checked on the short side alone. x lies in an inaccessible
// mapping, so that the kernel faults on the calling goroutine at its first read.
func TestShortPathWorkersBound(t *testing.T) {
	const d = 64
	half := int(workerBytes.forward / 2)
	mem, err := unix.Mmap(-1, 0, half, unix.PROT_NONE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	w := ones(d)
	many := Norm{Weight: w, Eps: 1e-6, Workers: 4}
	uo := Norm{Weight: w, Eps: 1e-6, Workers: 4, UnitOffset: true}
	ln := Norm{Weight: w, Bias: w, Center: true, Eps: 1e-12, Workers: 4}
	y, res := make([]float32, half/4), make([]float32, half/4)
	y16 := make([]uint16, half/2)
	// Each call gets x of n elements of its x's type (4 or 2 bytes), in the inaccessible mapping.
	x32 := func(n int) []float32 { return unsafe.Slice((*float32)(unsafe.Pointer(&mem[0])), n) }
	x16 := func(n int) []uint16 { return unsafe.Slice((*uint16)(unsafe.Pointer(&mem[0])), n) }
	calls := []struct {
		name   string
		size   int // bytes of an element of x
		short  string
		f      func(n int)
		splits bool // at half a share on the general path: not probed there
	}{
		{"Norm.Forward", 4, "forwardRows", func(n int) { many.Forward(y[:n], x32(n)) }, false},
		{"Apply", 4, "forwardRows", func(n int) { many.Apply(Rows{Dst: y[:n], X: x32(n)}) }, false},
		{"Apply Residual", 4, "packedRows", func(n int) { many.Apply(Rows{Dst: y[:n], X: x32(n), Residual: res[:n]}) }, true},
		{"Norm.Forward UnitOffset", 4, "packedRows", func(n int) { uo.Forward(y[:n], x32(n)) }, false},
		{"Norm.Forward LayerNorm", 4, "packedRows", func(n int) { ln.Forward(y[:n], x32(n)) }, false},
		{"Norm.ForwardBF16", 2, "forwardRows", func(n int) { many.ForwardBF16(y16[:n], x16(n)) }, false},
		{"Norm.ForwardF16 UnitOffset", 2, "packedRows", func(n int) { uo.ForwardF16(y16[:n], x16(n)) }, false},
		{"ApplyBF16", 2, "packedRows", func(n int) { many.ApplyBF16(Rows16{Dst: y16[:n], X: x16(n)}) }, false},
		{"ApplyToBF16", 4, "packedRows", func(n int) { many.ApplyToBF16(RowsTo16{Dst: y16[:n], X: x32(n)}) }, false},
		{"ApplyToF16 LayerNorm", 4, "packedRows", func(n int) { ln.ApplyToF16(RowsTo16{Dst: y16[:n], X: x32(n)}) }, false},
	}
	defer active.Store(active.Load())
	for _, k := range testKernels() {
		active.Store(uint32(k))
		for _, c := range calls {
			rows := half / (c.size * d) // x of half a share
			for _, b := range []struct {
				rows int
				path string
			}{{rows - 1, c.short}, {rows, "applyRows"}} {
				if b.path == "applyRows" && c.splits {
					continue
				}
				name := fmt.Sprintf("%s Workers 4, x of %d bytes (half a share: %d)", c.name, b.rows*d*c.size, half)
				got := pathAtFault(t, name, func() { c.f(b.rows * d) })
				if len(got) == 0 || got[len(got)-1] != b.path {
					t.Errorf("%s %s: the kernel was called from %v, want %s", k, name, got, b.path)
				}
			}
		}
	}
}
