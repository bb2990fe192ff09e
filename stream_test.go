package rmsnorm

import (
	"fmt"
	"math"
	"testing"
	"unsafe"

	"github.com/gosimd/rmsnorm/internal/streamrule"
)

// withStreaming runs f with the memory flags of rows from memory (non-temporal stores, prefetches,
// the generic kernel's touchRow) forced on or off, whatever the size. Forced on, it lets the
// kernels' pipe (flagPipe) take the rows that qualify, whatever their length (pipeAbove 0), on a
// pseudo-random half of the calls, and the backward's prefetches ahead (flagAhead, with
// flagNext), its prefetch of the next row alone (flagNext, whatever the row length), its pipe
// (backPipe, whatever the row length), the forward's prefetch of a residual job's next row of x
// (flagNext, whatever the row length) and the rows left to the hardware prefetchers (flagNT
// without flagPF, whatever the row length and size) each on a half drawn apart, whatever the CPU,
// so that the tests that stream run the kernels both ways (a bit that alternated would line up
// with loops that stream an even number of times per iteration).
func withStreaming(on bool, f func()) {
	saved, savedPipe, savedAbove, savedAhead := streamBytes, pipeRows, pipeAbove, aheadRows
	savedBack, savedBackAbove, savedNext, savedNextRes := backPipe, backPipeAbove, nextRows, nextResidual
	savedHardware := hardwareRows
	defer func() {
		streamBytes, pipeRows, pipeAbove, aheadRows = saved, savedPipe, savedAbove, savedAhead
		backPipe, backPipeAbove, nextRows, nextResidual = savedBack, savedBackAbove, savedNext, savedNextRes
		hardwareRows = savedHardware
	}()
	streamBytes = math.MaxInt
	if on {
		// Every row length the pipes take (TestPipeFlag and TestBackwardPipeFlag test the limits).
		streamBytes, pipeAbove, backPipeAbove = 0, 0, [2]int{}
		streamState = streamState*6364136223846793005 + 1442695040888963407
		pipeRows = streamState>>63 == 1
		aheadRows = streamState>>62&1 == 1
		backPipe = streamState>>61&1 == 1
		nextRows, nextResidual = [2]int{1, 0}, [2]int{1, 0}
		if streamState>>60&1 == 1 {
			nextRows = [2]int{0, math.MaxInt}
		}
		if streamState>>59&1 == 1 {
			nextResidual = [2]int{0, math.MaxInt}
		}
		hardwareRows = [2]streamrule.HardwareRows{}
		if streamState>>58&1 == 1 {
			hardwareRows = [2]streamrule.HardwareRows{allHardware, allHardware}
		}
	}
	f()
}

// streamState is the state of withStreaming's pseudo-random choice of the pipe and the prefetches.
var streamState uint64

// allHardware leaves every streamed call it may to the hardware prefetchers.
var allHardware = streamrule.HardwareRows{From: 1, Bytes: math.MaxInt, To16: true, Residual: 1, ResidualBytes: math.MaxInt}

// aligned32 returns n elements (float32, or uint16 for float16 rows) from a 32-byte boundary, the
// alignment the pipe needs for dst, with pre elements before them (which shift the start) and 32
// bytes after, all set to their type's guard (guardOf), and the window of them all, which starts
// at the boundary.
func aligned32[T elem](n, pre int) (s, window []T) {
	all := make([]T, n+pre+64)
	off := 0
	for uintptr(unsafe.Pointer(&all[off]))%32 != 0 {
		off++
	}
	window = all[off : off+pre+n+32/int(unsafe.Sizeof(all[0]))]
	for i := range window {
		window[i] = guardOf[T]()
	}
	return window[pre : pre+n : pre+n], window
}

// pipeShape is a layout of the pipe tests' rows: d, rows, the strides of x and dst (zero: the
// default, d and Stride) and pre, elements dst starts past a 32-byte boundary.
type pipeShape struct{ d, rows, stride, dstStride, pre int }

// strides returns the row strides of x and dst, the defaults resolved.
func (sh pipeShape) strides() (stride, dstStride int) {
	stride, dstStride = sh.stride, sh.dstStride
	if stride == 0 {
		stride = sh.d
	}
	if dstStride == 0 {
		dstStride = stride
	}
	return stride, dstStride
}

// input returns the rows of sh, Stride apart, and eps for them: with f64Row >= 0 that row is zeros
// and eps 0, so that its t = 0, below 2^-100, sends it to the float64 path.
func (sh pipeShape) input(f64Row int) (x []float32, eps float32) {
	stride, _ := sh.strides()
	x, eps = normalRows(stride, sh.rows, sh.d+sh.pre), 1e-6
	if f64Row >= 0 {
		clear(x[f64Row*stride : f64Row*stride+sh.d])
		eps = 0
	}
	return x, eps
}

func (sh pipeShape) String() string {
	return fmt.Sprintf("d=%d/rows=%d/stride=%d/dstStride=%d/pre=%d", sh.d, sh.rows, sh.stride, sh.dstStride, sh.pre)
}

// TestPipeFlag checks which streamed jobs setMemoryFlags sends through the pipe: float32 rows out
// of place without a residual, d a multiple of 64 above groupMax, dst and its stride aligned to
// 32 bytes, on a CPU that pipes (pipeRows), and no others; float32 rows into float16 alike when d
// is above streamrule.PipeMinTo16 too, and float16 rows into float16 whatever d is above
// groupMax; RMSNorm's rows only when d is above pipeAbove, LayerNorm's (Center) whatever it is.
func TestPipeFlag(t *testing.T) {
	saved, savedPipe, savedAbove := streamBytes, pipeRows, pipeAbove
	defer func() { streamBytes, pipeRows, pipeAbove = saved, savedPipe, savedAbove }()
	const rows = 4
	for _, c := range []struct {
		name                string
		d, dstStride, shift int
		inPlace, residual   bool
		small, noPipe       bool
		toF16               bool // ApplyToF16's rows: dst holds halves
		f16                 bool // ApplyF16's rows: x and dst hold halves
		above               int  // pipeAbove
		center              bool // LayerNorm's rows (flagCenter)
		want                bool
	}{
		{name: "d=4096", d: 4096, want: true},
		{name: "d=1088", d: 1088, want: true},
		{name: "d=576", d: 576, want: true},
		{name: "d=512 (groups)", d: 512},
		{name: "d=600", d: 600},
		{name: "d=4128, a multiple of 32 and not of 64", d: 4128},
		{name: "LayerNorm, d=4128", d: 4128, center: true},
		{name: "dst unaligned", d: 4096, shift: 1},
		{name: "DstStride not a multiple of 8", d: 4096, dstStride: 4100},
		{name: "DstStride a multiple of 8", d: 4096, dstStride: 4104, want: true},
		{name: "in place", d: 4096, inPlace: true},
		{name: "residual", d: 4096, residual: true},
		{name: "rows in cache", d: 4096, small: true},
		{name: "a CPU that does not pipe", d: 4096, noPipe: true},
		{name: "to float16, d=4096", d: 4096, toF16: true, want: true},
		{name: "to float16, d=2048", d: 2048, toF16: true},
		{name: "to float16, d=2112", d: 2112, toF16: true, want: true},
		{name: "to float16, DstStride a multiple of 8 only", d: 4096, dstStride: 4104, toF16: true},
		{name: "to float16, DstStride a multiple of 16", d: 4096, dstStride: 4112, toF16: true, want: true},
		{name: "to float16, residual", d: 4096, residual: true, toF16: true},
		{name: "RMSNorm, d=4096, above 4096", d: 4096, above: 4096},
		{name: "RMSNorm, d=4160, above 4096", d: 4160, above: 4096, want: true},
		{name: "LayerNorm, d=4096, above 4096", d: 4096, above: 4096, center: true, want: true},
		{name: "LayerNorm, d=576, above 4096", d: 576, above: 4096, center: true, want: true},
		{name: "LayerNorm, d=512 (groups)", d: 512, center: true},
		{name: "to float16, d=4096, above 4096", d: 4096, above: 4096, toF16: true},
		{name: "to float16, LayerNorm, d=4096, above 4096", d: 4096, above: 4096, toF16: true, center: true, want: true},
		{name: "to float16, LayerNorm, d=2048", d: 2048, toF16: true, center: true},
		{name: "float16, d=576", d: 576, f16: true, want: true},
		{name: "float16, d=2048", d: 2048, f16: true, want: true},
		{name: "float16, DstStride a multiple of 8 only", d: 4096, dstStride: 4104, f16: true},
		{name: "float16, DstStride a multiple of 16", d: 4096, dstStride: 4112, f16: true, want: true},
		{name: "float16, residual", d: 4096, residual: true, f16: true},
		{name: "float16, d=4096, above 4096", d: 4096, above: 4096, f16: true},
		{name: "float16, LayerNorm, d=576, above 4096", d: 576, above: 4096, f16: true, center: true, want: true},
	} {
		ds := c.dstStride
		if ds == 0 {
			ds = c.d
		}
		x := make([]float32, rows*c.d)
		dst, _ := aligned32[float32]((rows-1)*ds+c.d+c.shift, 0)
		dst = dst[c.shift:]
		j := job{dst: ptr(dst), x: ptr(x), d: c.d, stride: c.d, dstStride: ds, rows: rows, format: formatF32}
		if c.toF16 {
			j.format = formatToF16
		}
		if c.f16 {
			j.format = formatF16
		}
		if c.inPlace {
			j.dst = j.x
		}
		if c.residual {
			j.res = ptr(make([]float32, rows*c.d))
		}
		if c.center {
			j.flags |= flagCenter
		}
		streamBytes, pipeRows, pipeAbove = 0, !c.noPipe, c.above
		if c.small {
			streamBytes = math.MaxInt
		}
		j.setMemoryFlags()
		if got := j.flags&flagPipe != 0; got != c.want {
			t.Errorf("%s: flagPipe %v, want %v (flags %#x)", c.name, got, c.want, j.flags)
		}
	}
}

// TestPipe runs streamed float32 rows through the pipe (flagPipe) and without it, on every kernel,
// against generic: rows that can take it (d a multiple of 64 above groupMax, dst aligned) and rows
// that cannot, strides, DstStride, each weight form, Inv, and a row in the middle that takes the
// float64 path, which the pipe reaches from the row before it.
func TestPipe(t *testing.T) {
	var shapes []pipeShape
	for _, d := range []int{576, 640, 1024, 1088, 4096, 600, 512} {
		for _, rows := range []int{1, 2, 3, 7} {
			shapes = append(shapes,
				pipeShape{d, rows, 0, 0, 0},
				pipeShape{d, rows, d + 3, d + 8, 0}, // x strided, dst rows 32-byte apart
				pipeShape{d, rows, d + 8, d + 5, 0}, // dst rows not all aligned: no pipe
				pipeShape{d, rows, 0, 0, 1},         // dst not aligned: no pipe
				pipeShape{d, rows, d + 3, d + 8, 8}, // dst rows 32-byte aligned, the first 32 bytes past 64: avx512 pipes from the second
			)
		}
	}
	piped := map[kernelID]int{}
	for _, k := range testKernels() {
		for _, sh := range shapes {
			for _, form := range []string{"weighted", "offset", "noweight", "residual"} {
				for _, f64Row := range []int{-1, 1} {
					if f64Row >= sh.rows {
						continue
					}
					name := fmt.Sprintf("%s/%v/%s/f64row=%d", k.name(), sh, form, f64Row)
					stride, dstStride := sh.strides()
					x, eps := sh.input(f64Row)
					n := Norm{Eps: eps, Dim: sh.d}
					var res []float32 // with a residual, never piped: the same bits either way
					switch form {
					case "weighted":
						n.Weight = normalRows(sh.d, 1, 7)
					case "offset":
						n.Weight, n.UnitOffset = normalRows(sh.d, 1, 8), true
					case "residual":
						n.Weight, res = normalRows(sh.d, 1, 9), normalRows(stride, sh.rows, 10)[:(sh.rows-1)*stride+sh.d]
					}
					resFor := func() []float32 { return append([]float32(nil), res...) } // a fresh copy per call
					span := (sh.rows-1)*dstStride + sh.d
					want, wantAll := aligned32[float32](span, sh.pre)
					wantInv := make([]float32, sh.rows)
					wantRes := resFor()
					applyWith(kernelGeneric, &n, &Rows{Dst: want, X: x[:(sh.rows-1)*stride+sh.d], Residual: wantRes, N: sh.rows, Stride: stride, DstStride: dstStride, Inv: wantInv})
					for _, pipe := range []bool{false, true} {
						got, gotAll := aligned32[float32](span, sh.pre)
						gotInv := make([]float32, sh.rows)
						gotRes := resFor()
						r := Rows{Dst: got, X: x[:(sh.rows-1)*stride+sh.d], Residual: gotRes, N: sh.rows, Stride: stride, DstStride: dstStride, Inv: gotInv}
						if streamPiped(k, pipe, sh.rows > 1 && res == nil, sh.d, dstStride, got, func() { applyWith(k, &n, &r) }) {
							piped[k]++
						}
						samePiped(t, fmt.Sprintf("%s pipe=%v", name, pipe), gotAll, wantAll,
							pipeOut{"inv", gotInv, wantInv}, pipeOut{"residual", gotRes, wantRes})
					}
				}
			}
		}
	}
	requirePiped(t, formatF32, piped)
}

// streamPiped runs float32 rows into float32 rows (apply) streamed with the pipe on or off, and
// reports whether the call could take the pipe: on avx2 or avx512 with it on, a call that
// qualifies (eligible: more than one row, and whatever else the test's form needs) with dst where
// the pipe needs it (on avx512, aligned to 64 bytes).
func streamPiped(k kernelID, pipe, eligible bool, d, dstStride int, dst []float32, apply func()) bool {
	could := false
	withStreaming(true, func() {
		pipeRows = pipe
		if pipe && eligible && pipeKernel(k, formatF32) {
			j := job{dst: unsafe.Pointer(&dst[0]), d: d, dstStride: dstStride}
			could = j.pipes() && (k == kernelAVX2 || uintptr(j.dst)%64 == 0)
		}
		apply()
	})
	return could
}

// pipeKernel reports whether kernel k's functions for format f have the pipe: avx2's float32,
// float16-out and float16 ones, avx512's float32 ones (see pipes in the generator).
func pipeKernel(k kernelID, f format) bool {
	switch k {
	case kernelAVX2:
		return f == formatF32 || f == formatToF16 || f == formatF16
	case kernelAVX512, kernelAVX512BF16:
		return f == formatF32
	}
	return false
}

// requirePiped fails t when a kernel with the pipe for format f is among the kernels tested and
// none of its calls could take the pipe (piped counts them by kernel): the test would not cover it.
func requirePiped(t *testing.T, f format, piped map[kernelID]int) {
	t.Helper()
	for _, k := range testKernels() {
		if testing.Verbose() {
			t.Logf("%d calls on %s could take the pipe", piped[k], k)
		}
		if pipeKernel(k, f) && piped[k] == 0 {
			t.Fatalf("no call on %s could take the pipe: the test does not cover it", k)
		}
	}
}

// pipeOut is an output of a call besides dst, and generic's.
type pipeOut struct {
	name      string
	got, want []float32
}

// samePiped fails t unless a call gave generic's bits: in dst's buffer, guards included, and in
// each of outs.
func samePiped(t *testing.T, name string, gotAll, wantAll []float32, outs ...pipeOut) {
	t.Helper()
	if i := firstDiff(gotAll, wantAll); i >= 0 {
		t.Fatalf("%s: element %d of dst's buffer (guards included) = %#x, want %#x",
			name, i, math.Float32bits(gotAll[i]), math.Float32bits(wantAll[i]))
	}
	for _, o := range outs {
		if i := firstDiff(o.got, o.want); i >= 0 {
			t.Fatalf("%s: %s[%d] = %v, want %v", name, o.name, i, o.got[i], o.want[i])
		}
	}
}

// TestNextResidualFlag checks which forward jobs setMemoryFlags gives flagNext: streamed float32
// rows (into float32 or 16-bit rows) with a residual, out of place, of a length within
// nextResidual; no others.
func TestNextResidualFlag(t *testing.T) {
	saved, savedNext := streamBytes, nextResidual
	defer func() { streamBytes, nextResidual = saved, savedNext }()
	const rows = 4
	for _, c := range []struct {
		name              string
		d                 int
		f                 format
		residual, inPlace bool
		small             bool
		want              bool
	}{
		{name: "float32 rows of 4096 with a residual", d: 4096, f: formatF32, residual: true, want: true},
		{name: "rows of 64", d: 64, f: formatF32, residual: true, want: true},
		{name: "rows of 4097", d: 4097, f: formatF32, residual: true},
		{name: "into bfloat16", d: 1024, f: formatToBF16, residual: true, want: true},
		{name: "into float16", d: 1024, f: formatToF16, residual: true, want: true},
		{name: "bfloat16 rows", d: 1024, f: formatBF16, residual: true},
		{name: "float16 rows", d: 1024, f: formatF16, residual: true},
		{name: "no residual", d: 1024, f: formatF32},
		{name: "in place", d: 1024, f: formatF32, residual: true, inPlace: true},
		{name: "rows in cache", d: 1024, f: formatF32, residual: true, small: true},
	} {
		x, res := make([]float32, rows*c.d), make([]float32, rows*c.d)
		dst := ptr(make([]float32, rows*c.d))
		if c.inPlace {
			dst = ptr(x)
		}
		j := job{dst: dst, x: ptr(x), d: c.d, stride: c.d, dstStride: c.d, rows: rows, format: c.f}
		if c.residual {
			j.res = ptr(res)
		}
		streamBytes, nextResidual = 0, [2]int{1, 4096}
		if c.small {
			streamBytes = math.MaxInt
		}
		j.setMemoryFlags()
		if got := j.flags&flagNext != 0; got != c.want {
			t.Errorf("%s: flagNext %v, want %v (flags %#x)", c.name, got, c.want, j.flags)
		}
	}
}

// TestHardwareFlag checks which forward jobs setMemoryFlags leaves to the hardware prefetchers
// (flagNT without flagPF): streamed float32 rows out of place, not LayerNorm's, back to back, that
// their kernel's rule in hardwareRows takes by the row length and the bytes of x (the avx512
// kernel's [1], avx2's [0]; none for generic and neon), into float32, or into 16-bit rows where
// the rule says To16 (or, from the rule's Long, by the row length alone); with a residual,
// into float32 by the rule's Residual bounds, flagNext cleared with flagPF; every other
// streamed job keeps flagPF.
func TestHardwareFlag(t *testing.T) {
	saved, savedHardware, savedNextRes := streamBytes, hardwareRows, nextResidual
	defer func() { streamBytes, hardwareRows, nextResidual = saved, savedHardware, savedNextRes }()
	nextResidual = [2]int{1, math.MaxInt} // every residual row streamed out of place gets flagNext, unless left to the hardware
	const rows, d = 4, 8192
	xBytes := rows * d * 4
	for _, c := range []struct {
		name              string
		d                 int
		f                 format
		k                 kernelID
		residual, inPlace bool
		center, bias      bool
		small             bool
		stride            int // x's row stride; 0: d
		bytes             int // the rule's Bytes; 0: xBytes
		want              bool
	}{
		{name: "float32 rows", d: d, f: formatF32, k: kernelAVX512, want: true},
		{name: "the avx512 kernel with AVX512_BF16", d: d, f: formatF32, k: kernelAVX512BF16, want: true},
		{name: "the avx2 kernel's rule", d: 2 * d, f: formatF32, k: kernelAVX2, want: true},
		{name: "rows of the shortest length", d: d - 64, f: formatF32, k: kernelAVX512, want: true},
		{name: "rows shorter than the rule's", d: d - 65, f: formatF32, k: kernelAVX512},
		{name: "the avx2 kernel's rows shorter than its rule's", d: d, f: formatF32, k: kernelAVX2},
		{name: "x beyond the rule's bytes", d: d, f: formatF32, k: kernelAVX512, bytes: xBytes - 1},
		{name: "rows of the rule's Long, x beyond its bytes", d: d + 64, f: formatF32, k: kernelAVX512, bytes: xBytes - 1, want: true},
		{name: "rows shorter than the rule's Long, x beyond its bytes", d: d + 63, f: formatF32, k: kernelAVX512, bytes: xBytes - 1},
		{name: "the avx2 kernel's Long, x beyond its bytes", d: 3 * d, f: formatF32, k: kernelAVX2, want: true},
		{name: "the avx2 kernel's rows shorter than its Long, x beyond its bytes", d: 2*d + 64, f: formatF32, k: kernelAVX2},
		{name: "into bfloat16, rows of Long, x beyond the bytes", d: d + 64, f: formatToBF16, k: kernelAVX512, bytes: xBytes - 1, want: true},
		{name: "into float16, rows of Long, x beyond the bytes", d: d + 64, f: formatToF16, k: kernelAVX512, bytes: xBytes - 1, want: true},
		{name: "into float16, rows shorter than Long, x beyond the bytes", d: d + 63, f: formatToF16, k: kernelAVX512, bytes: xBytes - 1},
		{name: "into bfloat16 on a rule without To16, rows of its Long", d: 3 * d, f: formatToBF16, k: kernelAVX2},
		{name: "into bfloat16 with a residual, rows of Long, x beyond the bytes", d: d + 64, f: formatToBF16, k: kernelAVX512, residual: true, bytes: xBytes - 1},
		{name: "bfloat16 rows, rows of Long", d: d + 64, f: formatBF16, k: kernelAVX512, bytes: xBytes - 1},
		{name: "a residual, rows of Long, x beyond the bytes", d: d + 64, f: formatF32, k: kernelAVX512, residual: true, bytes: xBytes - 1},
		{name: "in place, rows of Long", d: d + 64, f: formatF32, k: kernelAVX512, inPlace: true},
		{name: "rows of Long a stride apart", d: d + 64, f: formatF32, k: kernelAVX512, stride: d + 128, bytes: xBytes - 1},
		{name: "LayerNorm (Center), rows of Long", d: d + 64, f: formatF32, k: kernelAVX512, center: true, bytes: xBytes - 1},
		{name: "a residual", d: d, f: formatF32, k: kernelAVX512, residual: true, want: true},
		{name: "a residual, rows of the rule's shortest", d: d - 128, f: formatF32, k: kernelAVX512, residual: true, want: true},
		{name: "a residual, rows shorter than the rule's", d: d - 129, f: formatF32, k: kernelAVX512, residual: true},
		{name: "a residual, the avx2 kernel's rule", d: 2 * d, f: formatF32, k: kernelAVX2, residual: true, want: true},
		{name: "a residual, x beyond the rule's bytes", d: d, f: formatF32, k: kernelAVX512, residual: true, bytes: xBytes - 1},
		{name: "a residual in place", d: d, f: formatF32, k: kernelAVX512, residual: true, inPlace: true},
		{name: "a residual, LayerNorm (Center)", d: d, f: formatF32, k: kernelAVX512, residual: true, center: true},
		{name: "a residual, rows a stride apart", d: d, f: formatF32, k: kernelAVX512, residual: true, stride: d + 64},
		{name: "bfloat16 rows with a residual", d: d, f: formatBF16, k: kernelAVX512, residual: true},
		{name: "in place", d: d, f: formatF32, k: kernelAVX512, inPlace: true},
		{name: "LayerNorm (Center)", d: d, f: formatF32, k: kernelAVX512, center: true},
		{name: "LayerNorm (a bias)", d: d, f: formatF32, k: kernelAVX512, bias: true},
		{name: "into bfloat16", d: d, f: formatToBF16, k: kernelAVX512, want: true},
		{name: "into float16", d: d, f: formatToF16, k: kernelAVX512, want: true},
		{name: "into bfloat16 on a rule without To16", d: 2 * d, f: formatToBF16, k: kernelAVX2},
		{name: "into float16 on a rule without To16", d: 2 * d, f: formatToF16, k: kernelAVX2},
		{name: "into bfloat16 with a residual", d: d, f: formatToBF16, k: kernelAVX512, residual: true},
		{name: "bfloat16 rows", d: d, f: formatBF16, k: kernelAVX512},
		{name: "float16 rows", d: d, f: formatF16, k: kernelAVX512},
		{name: "rows in cache", d: d, f: formatF32, k: kernelAVX512, small: true},
		{name: "rows a stride apart", d: d, f: formatF32, k: kernelAVX512, stride: d + 64},
		{name: "the generic kernel", d: 2 * d, f: formatF32, k: kernelGeneric},
		{name: "the neon kernel", d: 2 * d, f: formatF32, k: kernelNEON},
	} {
		stride := c.d
		if c.stride != 0 {
			stride = c.stride
		}
		x, res, bias := make([]float32, rows*stride), make([]float32, rows*stride), make([]float32, c.d)
		dst := ptr(make([]float32, rows*stride))
		if c.inPlace {
			dst = ptr(x)
		}
		j := job{dst: dst, x: ptr(x), d: c.d, stride: stride, dstStride: stride, rows: rows, format: c.f,
			fn: uint32(c.k) * numEntries}
		if c.residual {
			j.res = ptr(res)
		}
		if c.center {
			j.flags |= flagCenter
		}
		if c.bias {
			j.bias = ptr(bias)
		}
		bytes := xBytes
		if c.bytes != 0 {
			bytes = c.bytes
		}
		streamBytes = 0
		if c.small {
			streamBytes = math.MaxInt
		}
		// avx2's rule takes rows of 2d, so that its cases and those of the kernels without a rule
		// (2d too) tell the two apart; the residual's bounds differ from the others' (d - 128).
		// Long: d + 64 for avx512, 3d for avx2, whose Bytes (2*xBytes) rows longer than 2d exceed.
		wide := streamrule.HardwareRows{From: d - 64, Bytes: bytes, To16: true, Long: d + 64, Residual: d - 128, ResidualBytes: bytes}
		if c.residual {
			wide.Bytes = xBytes - 1 // a residual's call is bounded by ResidualBytes alone
		}
		hardwareRows = [2]streamrule.HardwareRows{{From: 2 * d, Bytes: xBytes * 2, Long: 3 * d, Residual: 2 * d, ResidualBytes: math.MaxInt}, wide}
		j.setMemoryFlags()
		if got := j.flags&(flagNT|flagPF) == flagNT; got != c.want {
			t.Errorf("%s: flagNT without flagPF %v, want %v (flags %#x)", c.name, got, c.want, j.flags)
		}
		// A residual's next row of x (flagNext) goes with flagPF: set on the rows streamed out of
		// place, cleared on those left to the hardware.
		if wantNext := c.residual && c.f.in() == formatF32 && !c.small && !c.inPlace && !c.want; c.residual && (j.flags&flagNext != 0) != wantNext {
			t.Errorf("%s: flagNext %v, want %v (flags %#x)", c.name, j.flags&flagNext != 0, wantNext, j.flags)
		}
		if !c.small && !c.want && j.flags&flagPF == 0 {
			t.Errorf("%s: flagPF left out (flags %#x)", c.name, j.flags)
		}
	}
}

// TestAheadFlag checks which backward jobs setBackwardMemoryFlags gives flagAhead and flagNext:
// flagAhead to those whose rows come from memory on a CPU that prefetches ahead (aheadRows), with
// or without DX; flagNext to those of them whose dx goes out with non-temporal stores (out of
// place), and on the other CPUs to those of a row length within nextRows; no others.
func TestAheadFlag(t *testing.T) {
	saved, savedAhead, savedNext := streamBytes, aheadRows, nextRows
	defer func() { streamBytes, aheadRows, nextRows = saved, savedAhead, savedNext }()
	const rows = 4
	for _, c := range []struct {
		name         string
		d            int
		dst          string // "apart", "inplace" or "none"
		small, ahead bool
		want, next   bool
	}{
		{name: "rows from memory", d: 256, dst: "apart", ahead: true, want: true, next: true},
		{name: "in place", d: 256, dst: "inplace", ahead: true, want: true},
		{name: "no DX", d: 256, dst: "none", ahead: true, want: true},
		{name: "rows in cache", d: 256, dst: "apart", ahead: true, small: true},
		{name: "a CPU that does not prefetch ahead", d: 256, dst: "apart"},
		{name: "rows of nextRows' shortest", d: 1024, dst: "apart", next: true},
		{name: "rows of nextRows' longest", d: 6144, dst: "apart", next: true},
		{name: "rows shorter than nextRows'", d: 1000, dst: "apart"},
		{name: "rows longer than nextRows'", d: 6145, dst: "apart"},
		{name: "rows of nextRows, in place", d: 4096, dst: "inplace"},
		{name: "rows of nextRows, no DX", d: 4096, dst: "none"},
		{name: "rows of nextRows, in cache", d: 4096, dst: "apart", small: true},
	} {
		x, dy := make([]float32, rows*c.d), make([]float32, rows*c.d)
		var dst []float32
		switch c.dst {
		case "apart":
			dst = make([]float32, rows*c.d)
		case "inplace":
			dst = dy
		}
		j := job{dst: ptr(dst), x: ptr(x), dy: ptr(dy), d: c.d, stride: c.d, dstStride: c.d, rows: rows}
		streamBytes, aheadRows, nextRows = 0, c.ahead, [2]int{1024, 6144}
		if c.small {
			streamBytes = math.MaxInt
		}
		j.setBackwardMemoryFlags()
		if got := j.flags&flagAhead != 0; got != c.want {
			t.Errorf("%s: flagAhead %v, want %v (flags %#x)", c.name, got, c.want, j.flags)
		}
		if got := j.flags&flagNext != 0; got != c.next {
			t.Errorf("%s: flagNext %v, want %v (flags %#x)", c.name, got, c.next, j.flags)
		}
		if got := j.flags&flagPF != 0; got != !c.small {
			t.Errorf("%s: flagPF %v, want %v (flags %#x)", c.name, got, !c.small, j.flags)
		}
	}
}
