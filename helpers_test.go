package rmsnorm

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// Shared test helpers: calls with an explicit kernel, value classes and seeds, bitwise
// comparison, buffers with guard values around them. The kernels under test and the core matrix
// are in kernel_test.go; withStreaming is in stream_test.go.

// forwardWith is Forward with an explicit kernel instead of the active one.
func forwardWith(k kernelID, dst, x, w []float32, eps float32) {
	forwardRows(&forwardNames, formatF32, dst, x, w, eps, k)
}

// applyNamesOf names the arguments of each format's Apply method in its panics.
var applyNamesOf = [...]*names{formatF32: &applyNames, formatBF16: &applyBF16Names, formatF16: &applyF16Names,
	formatToBF16: &applyToBF16Names, formatToF16: &applyToF16Names}

// applyKernel is the Apply method of format f (Apply, ApplyBF16, ApplyF16, ApplyToBF16 or
// ApplyToF16) on the rows r describes, with an explicit kernel instead of the active one.
func applyKernel[D, T elem](k kernelID, n *Norm, f format, r *rowsOf[D, T]) {
	if !applyRows(n, r, f, k) {
		panic(explainApply(n, applyNamesOf[f], r))
	}
}

// applyRowsWith is Norm.Apply (or ApplyBF16, ApplyF16 for format f) with an explicit kernel.
func applyRowsWith[T elem](k kernelID, n *Norm, f format, dst, x, res []T, inv []float32, rows, stride int) {
	applyKernel(k, n, f, &rowsOf[T, T]{Dst: dst, X: x, Residual: res, Inv: inv, N: rows, Stride: stride})
}

// applyWith is n.Apply(*r) with an explicit kernel instead of the active one.
func applyWith(k kernelID, n *Norm, r *Rows) {
	applyKernel(k, n, formatF32, (*rowsOf[float32, float32])(r))
}

// sameBits reports whether a and b are the same float32, treating every NaN as equal to every
// other NaN (the contract leaves NaN payloads open).
func sameBits(a, b float32) bool {
	if a != a || b != b {
		return a != a && b != b
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

// firstDiff returns the first index where got and want differ bitwise, or -1.
func firstDiff(got, want []float32) int {
	for i := range want {
		if !sameBits(got[i], want[i]) {
			return i
		}
	}
	return -1
}

// valueClass produces test values of one kind.
type valueClass struct {
	name string
	gen  func(r *rand.Rand, i int) float32
}

func normalValue(r *rand.Rand) float32 { return float32(r.NormFloat64()) }

// The value classes. A test names the class it draws from; tests that cycle through all of them
// index valueClasses.
var (
	classNormal   = valueClass{"normal", func(r *rand.Rand, i int) float32 { return normalValue(r) }}
	classUniform  = valueClass{"uniform", func(r *rand.Rand, i int) float32 { return float32(r.Float64()*2 - 1) }}
	classPositive = valueClass{"positive", func(r *rand.Rand, i int) float32 { return float32(r.Float64() * 100) }}
	// classTiny's squares underflow float32: with eps below 2^-100 the rows take the float64 path.
	classTiny = valueClass{"tiny", func(r *rand.Rand, i int) float32 { return normalValue(r) * 1e-22 }}
	// classHuge's squares overflow float32: the rows take the float64 path.
	classHuge = valueClass{"huge", func(r *rand.Rand, i int) float32 { return normalValue(r) * 1e25 }}
	// classWide spans 60 decades, 1e-30 to 1e29 times a normal value: in most rows of more than
	// a few elements some square overflows, and the row takes the float64 path.
	classWide = valueClass{"wide", func(r *rand.Rand, i int) float32 {
		return normalValue(r) * wideScales[r.IntN(60)]
	}}
	classSubnormal = valueClass{"subnormal", func(r *rand.Rand, i int) float32 {
		return math.Float32frombits(uint32(r.IntN(1<<23)) | uint32(r.IntN(2))<<31)
	}}
	classSignedZero = valueClass{"signedzero", func(r *rand.Rand, i int) float32 {
		if r.IntN(2) == 0 {
			return float32(math.Copysign(0, -1))
		}
		return 0
	}}
	// classSpecial mixes ±Inf, NaN, ±MaxFloat32, -0 and the smallest subnormal into normal values.
	classSpecial = valueClass{"special", func(r *rand.Rand, i int) float32 {
		switch r.IntN(12) {
		case 0:
			return float32(math.Inf(1))
		case 1:
			return float32(math.Inf(-1))
		case 2:
			return float32(math.NaN())
		case 3:
			return math.MaxFloat32
		case 4:
			return -math.MaxFloat32
		case 5:
			return float32(math.Copysign(0, -1))
		case 6:
			return math.SmallestNonzeroFloat32
		}
		return normalValue(r)
	}}
	classMaxFloat = valueClass{"maxfloat", func(r *rand.Rand, i int) float32 {
		if r.IntN(2) == 0 {
			return -math.MaxFloat32
		}
		return math.MaxFloat32
	}}
	// classSpiky is small values with a large one in about 64.
	classSpiky = valueClass{"spiky", func(r *rand.Rand, i int) float32 {
		if r.IntN(64) == 0 {
			return normalValue(r) * 1e18
		}
		return normalValue(r) * 1e-3
	}}
)

// wideScales[k] is float32(10^(k-30)), classWide's scales, computed once: math.Pow per element
// was a noticeable part of the matrix tests' time.
var wideScales = func() (s [60]float32) {
	for k := range s {
		s[k] = float32(math.Pow(10, float64(k-30)))
	}
	return s
}()

// valueClasses lists every class. The order is part of the tests' data: the core matrix seeds
// with a class's index, and tests that cycle through the classes pick them by index.
var valueClasses = []valueClass{
	classNormal, classUniform, classPositive, classTiny, classHuge, classWide,
	classSubnormal, classSignedZero, classSpecial, classMaxFloat, classSpiky,
}

// normal is classNormal, under the name bench_test.go uses.
var normal = classNormal

// fill sets s from class c.
func fill(s []float32, c valueClass, r *rand.Rand) {
	for i := range s {
		s[i] = c.gen(r, i)
	}
}

// normalInputs returns rows rows of d elements for x and for the residual, a weight and a bias,
// all of classNormal drawn from r in that order.
func normalInputs(r *rand.Rand, rows, d int) (x, res, w, b []float32) {
	x, res = make([]float32, rows*d), make([]float32, rows*d)
	w, b = make([]float32, d), make([]float32, d)
	for _, s := range [][]float32{x, res, w, b} {
		fill(s, classNormal, r)
	}
	return x, res, w, b
}

// seedFor makes reproducible sub-test seeds.
func seedFor(parts ...int) *rand.Rand {
	var h uint64 = 0x9e3779b97f4a7c15
	for _, p := range parts {
		h = (h ^ uint64(p)) * 0xbf58476d1ce4e5b9
	}
	return rand.New(rand.NewPCG(h, h>>7|1))
}

// normalRows returns rows rows of d normal values, drawn from seedFor(d, rows, seed).
func normalRows(d, rows, seed int) []float32 {
	x := make([]float32, rows*d)
	fill(x, classNormal, seedFor(d, rows, seed))
	return x
}

// ones returns d ones: the weight that changes nothing.
func ones(d int) []float32 {
	w := make([]float32, d)
	for i := range w {
		w[i] = 1
	}
	return w
}

// guardValue marks memory a kernel must not touch: a NaN with a payload no kernel produces.
var guardValue = math.Float32frombits(0x7fa5a5a5)

// guard16 marks 16-bit memory a kernel must not touch: a signalling NaN in binary16, which no
// arithmetic returns, and a finite bfloat16 (about 2e37) that a stray write would have to hit
// exactly.
const guard16 = 0x7da5

const guardLen = 64 // elements of guard on each side of a buffer

// guardOf returns the guard of elements of type T.
func guardOf[T elem]() T {
	var g T
	switch p := any(&g).(type) {
	case *float32:
		*p = guardValue
	case *uint16:
		*p = guard16
	}
	return g
}

// bitsOf returns the bits of an element.
func bitsOf[T elem](v T) uint32 {
	switch x := any(v).(type) {
	case float32:
		return math.Float32bits(x)
	case uint16:
		return uint32(x)
	}
	panic("unreachable")
}

// sameElem reports whether a and b, stored in format f, are the same value, treating every NaN
// as equal to every other NaN (the contract leaves NaN payloads open).
func sameElem[T elem](a, b T, f format) bool {
	switch x := any(a).(type) {
	case float32:
		return sameBits(x, any(b).(float32))
	case uint16:
		return same16(x, any(b).(uint16), f)
	}
	panic("unreachable")
}

// same16 is sameElem for 16-bit values of format f: a the result under test, b the reference
// (under -bochs, bochsF16 tells Bochs's float16 rounding from a wrong result).
func same16(a, b uint16, f format) bool {
	if a == b {
		return true
	}
	fa, fb := f.widen(a), f.widen(b)
	return fa != fa && fb != fb || bochsF16(a, b, f)
}

// guarded is a buffer of n elements whose first element sits off elements past a 64-byte
// boundary, with guard values on both sides.
type guarded[T elem] struct {
	all  []T
	lo   int // index of s[0] in all
	s    []T
	name string
}

func newGuarded[T elem](name string, n, off int) *guarded[T] {
	all := make([]T, guardLen+32+n+guardLen+32)
	size := int(unsafe.Sizeof(all[0]))
	base := uintptr(unsafe.Pointer(&all[0]))
	skip := int((64-base%64)%64) / size
	lo := guardLen + skip + off
	all[0] = guardOf[T]()
	for k := 1; k < len(all); k *= 2 { // guards everywhere, by copies of what is filled
		copy(all[k:], all[:k])
	}
	return &guarded[T]{all: all, lo: lo, s: all[lo : lo+n : lo+n], name: name}
}

// check reports a write outside the buffer.
func (g *guarded[T]) check(t *testing.T, ctx string) {
	if i := g.clobbered(); i >= 0 {
		t.Helper() // here only: see compareGuarded
		t.Fatalf("%s: %s: element %d outside the slice (at %d relative to its start) was overwritten with %#x",
			ctx, g.name, i, i-g.lo, bitsOf(g.all[i]))
	}
}

// clobbered returns the index in g.all of the first element outside the slice that is not a
// guard, or -1.
func (g *guarded[T]) clobbered() int {
	// Both sides at once against a run of guards; element by element only to find a difference.
	pat := guardRun[T]()
	left, right := g.all[:g.lo], g.all[g.lo+len(g.s):]
	if len(left) <= len(pat) && len(right) <= len(pat) &&
		bytes.Equal(asBytes(left), asBytes(pat[:len(left)])) && bytes.Equal(asBytes(right), asBytes(pat[:len(right)])) {
		return -1
	}
	guard := bitsOf(guardOf[T]())
	for i, v := range g.all {
		if (i < g.lo || i >= g.lo+len(g.s)) && bitsOf(v) != guard {
			return i
		}
	}
	return -1
}

// guardRuns hold guard values, more than a guarded buffer has on either side.
var (
	guardRun32 = slices.Repeat([]float32{guardValue}, 4*guardLen)
	guardRun16 = slices.Repeat([]uint16{guard16}, 4*guardLen)
)

// guardRun returns guardRun32 or guardRun16, by T.
func guardRun[T elem]() []T {
	var s []T
	switch p := any(&s).(type) {
	case *[]float32:
		*p = guardRun32
	case *[]uint16:
		*p = guardRun16
	}
	return s
}

// asBytes returns the memory of s.
func asBytes[T elem](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// callGeneric runs the benchmark loop on the generic kernel's entry: the fallback of callDirect
// (direct_*_test.go) for BenchmarkOverhead.
func callGeneric(b *testing.B, k kernelID, j *job) {
	if k != kernelGeneric {
		b.Fatalf("no direct call for kernel %s, variant %d", k, j.v)
	}
	for b.Loop() {
		runGeneric(j, 0, j.rows)
	}
}
