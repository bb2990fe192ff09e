package rmsnorm

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// Shared test helpers: value generators, aligned and guarded buffers, bitwise comparison.

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

// normal is the class of normally distributed values.
var normal = valueClasses[0]

var valueClasses = []valueClass{
	{"normal", func(r *rand.Rand, i int) float32 { return normalValue(r) }},
	{"uniform", func(r *rand.Rand, i int) float32 { return float32(r.Float64()*2 - 1) }},
	{"positive", func(r *rand.Rand, i int) float32 { return float32(r.Float64() * 100) }},
	{"tiny", func(r *rand.Rand, i int) float32 { return normalValue(r) * 1e-22 }},
	{"huge", func(r *rand.Rand, i int) float32 { return normalValue(r) * 1e25 }},
	{"wide", func(r *rand.Rand, i int) float32 {
		return normalValue(r) * float32(math.Pow(10, float64(r.IntN(60)-30)))
	}},
	{"subnormal", func(r *rand.Rand, i int) float32 {
		return math.Float32frombits(uint32(r.IntN(1<<23)) | uint32(r.IntN(2))<<31)
	}},
	{"signedzero", func(r *rand.Rand, i int) float32 {
		if r.IntN(2) == 0 {
			return float32(math.Copysign(0, -1))
		}
		return 0
	}},
	{"special", func(r *rand.Rand, i int) float32 {
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
	}},
	{"maxfloat", func(r *rand.Rand, i int) float32 {
		if r.IntN(2) == 0 {
			return -math.MaxFloat32
		}
		return math.MaxFloat32
	}},
	{"spiky", func(r *rand.Rand, i int) float32 {
		if r.IntN(64) == 0 {
			return normalValue(r) * 1e18
		}
		return normalValue(r) * 1e-3
	}},
}

// fill sets s from class c.
func fill(s []float32, c valueClass, r *rand.Rand) {
	for i := range s {
		s[i] = c.gen(r, i)
	}
}

// guardValue marks memory a kernel must not touch: a NaN with a payload no kernel produces.
var guardValue = math.Float32frombits(0x7fa5a5a5)

const guardLen = 64 // floats of guard on each side of a buffer

// guarded is a float32 buffer of n elements whose first element sits off floats past a 64-byte
// boundary, with guard values on both sides.
type guarded struct {
	all  []float32
	lo   int // index of s[0] in all
	s    []float32
	name string
}

func newGuarded(name string, n, off int) *guarded {
	all := make([]float32, guardLen+16+n+guardLen+16)
	base := uintptr(unsafe.Pointer(&all[0]))
	skip := int((64-base%64)%64) / 4
	lo := guardLen + skip + off
	for i := range all {
		all[i] = guardValue
	}
	return &guarded{all: all, lo: lo, s: all[lo : lo+n : lo+n], name: name}
}

// check reports a write outside the buffer.
func (g *guarded) check(t *testing.T, ctx string) {
	t.Helper()
	for i, v := range g.all {
		if i >= g.lo && i < g.lo+len(g.s) {
			continue
		}
		if math.Float32bits(v) != math.Float32bits(guardValue) {
			t.Fatalf("%s: %s: element %d outside the slice (at %d relative to its start) was overwritten with %v",
				ctx, g.name, i, i-g.lo, v)
		}
	}
}

// seedFor makes reproducible sub-test seeds.
func seedFor(parts ...int) *rand.Rand {
	var h uint64 = 0x9e3779b97f4a7c15
	for _, p := range parts {
		h = (h ^ uint64(p)) * 0xbf58476d1ce4e5b9
	}
	return rand.New(rand.NewPCG(h, h>>7|1))
}
