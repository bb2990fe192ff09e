package rmsnorm

import (
	"bytes"
	"fmt"
	"strings"
	"unsafe"
)

// One case of the validation sweep (validation_matrix_test.go): the buffers of one call placed
// inside plain backing arrays, arenas; the call, through a public entry point; and the judge,
// which holds the outcome to the verdict of the rules (validation_oracle_test.go). A buffer
// another one overlaps sits in the same arena, at a byte offset of its own; every other buffer
// has an arena of its own, so that it shares no memory with the rest.

// arg names the buffers a call can take.
type arg int

const (
	argX    arg = iota // X, x, or a conversion's src
	argDst             // Dst, dst, or Backward's DX
	argRes             // Residual
	argInv             // Inv
	argMean            // Mean
	argW               // Weight, or w of the Forward functions
	argBias            // Bias
	argDY              // DY
	argDW              // DW
	argDB              // DB
)

const numArgs = int(argDB) + 1

var argNames = [numArgs]string{"X", "Dst", "Residual", "Inv", "Mean", "Weight", "Bias", "DY", "DW", "DB"}

// entryKind is the signature of an entry point, which says what a call of it can take.
type entryKind int

const (
	kindForward     entryKind = iota // Forward, ForwardBF16, ForwardF16: (dst, x, w, eps)
	kindNormForward                  // Norm.Forward, Norm.ForwardBF16, Norm.ForwardF16: (dst, x)
	kindApply                        // Norm.Apply, ApplyBF16, ApplyF16 (Rows, Rows16), ApplyToBF16, ApplyToF16 (RowsTo16)
	kindBackward                     // Norm.Backward (Grad)
	kindConvert                      // BF16ToFloat32, F16ToFloat32, Float32ToBF16, Float32ToF16: (dst, src)
)

// entry is a public entry point: x16 and dst16 say whether X (and Residual) and Dst hold 16-bit
// elements; call calls it on the buffers of c, views of its arenas.
type entry struct {
	name       string
	kind       entryKind
	x16, dst16 bool
	call       func(c *sweepCase, v *views)
}

// sweepEntries are the public entry points that validate their arguments.
var sweepEntries = []*entry{
	{"Forward", kindForward, false, false, func(c *sweepCase, v *views) { Forward(v.f[argDst], v.f[argX], v.f[argW], c.eps) }},
	{"ForwardBF16", kindForward, true, true, func(c *sweepCase, v *views) { ForwardBF16(v.h[argDst], v.h[argX], v.f[argW], c.eps) }},
	{"ForwardF16", kindForward, true, true, func(c *sweepCase, v *views) { ForwardF16(v.h[argDst], v.h[argX], v.f[argW], c.eps) }},
	{"Norm.Forward", kindNormForward, false, false, func(c *sweepCase, v *views) { c.norm(v).Forward(v.f[argDst], v.f[argX]) }},
	{"Norm.ForwardBF16", kindNormForward, true, true, func(c *sweepCase, v *views) { c.norm(v).ForwardBF16(v.h[argDst], v.h[argX]) }},
	{"Norm.ForwardF16", kindNormForward, true, true, func(c *sweepCase, v *views) { c.norm(v).ForwardF16(v.h[argDst], v.h[argX]) }},
	{"Norm.Apply", kindApply, false, false, func(c *sweepCase, v *views) {
		c.norm(v).Apply(Rows{Dst: v.f[argDst], X: v.f[argX], N: c.n, Stride: c.stride, DstStride: c.dstStride,
			Residual: v.f[argRes], Inv: v.f[argInv], Mean: v.f[argMean]})
	}},
	{"Norm.ApplyBF16", kindApply, true, true, func(c *sweepCase, v *views) { c.norm(v).ApplyBF16(c.rows16(v)) }},
	{"Norm.ApplyF16", kindApply, true, true, func(c *sweepCase, v *views) { c.norm(v).ApplyF16(c.rows16(v)) }},
	{"Norm.ApplyToBF16", kindApply, false, true, func(c *sweepCase, v *views) { c.norm(v).ApplyToBF16(c.rowsTo16(v)) }},
	{"Norm.ApplyToF16", kindApply, false, true, func(c *sweepCase, v *views) { c.norm(v).ApplyToF16(c.rowsTo16(v)) }},
	{"Norm.Backward", kindBackward, false, false, func(c *sweepCase, v *views) {
		c.norm(v).Backward(Grad{DX: v.f[argDst], X: v.f[argX], DY: v.f[argDY], N: c.n, Stride: c.stride,
			Inv: v.f[argInv], Mean: v.f[argMean], DW: v.f[argDW], DB: v.f[argDB]})
	}},
	{"BF16ToFloat32", kindConvert, true, false, func(c *sweepCase, v *views) { BF16ToFloat32(v.f[argDst], v.h[argX]) }},
	{"F16ToFloat32", kindConvert, true, false, func(c *sweepCase, v *views) { F16ToFloat32(v.f[argDst], v.h[argX]) }},
	{"Float32ToBF16", kindConvert, false, true, func(c *sweepCase, v *views) { Float32ToBF16(v.h[argDst], v.f[argX]) }},
	{"Float32ToF16", kindConvert, false, true, func(c *sweepCase, v *views) { Float32ToF16(v.h[argDst], v.f[argX]) }},
}

// takes reports whether the entry point has buffer a among its arguments.
func (e *entry) takes(a arg) bool {
	switch e.kind {
	case kindForward, kindConvert:
		return a == argX || a == argDst || (a == argW && e.kind == kindForward)
	case kindNormForward:
		return a == argX || a == argDst || a == argW || a == argBias
	case kindApply:
		return a <= argBias
	}
	return a != argRes // Backward
}

// writes reports whether the entry point writes buffer a.
func (e *entry) writes(a arg) bool {
	if e.kind == kindBackward {
		return a == argDst || a == argDW || a == argDB
	}
	return a == argDst || a == argRes || a == argInv || a == argMean
}

// size returns the bytes of one element of buffer a.
func (e *entry) size(a arg) int {
	if (a == argX || a == argRes) && e.x16 || a == argDst && e.dst16 {
		return 2
	}
	return 4
}

// argName is the name the entry point's documentation gives buffer a.
func (e *entry) argName(a arg) string {
	switch {
	case e.kind == kindBackward && a == argDst:
		return "DX"
	case e.kind == kindConvert:
		return map[arg]string{argX: "src", argDst: "dst"}[a]
	case e.kind == kindForward || e.kind == kindNormForward:
		if n := map[arg]string{argX: "x", argDst: "dst", argW: "w"}[a]; n != "" {
			if a == argW && e.kind == kindNormForward {
				return "Weight"
			}
			return n
		}
	}
	return argNames[a]
}

// sweepCase is one call: an entry point, the Norm's fields (its Weight and Bias are buffers), the
// layout, and where each buffer lies.
type sweepCase struct {
	e                                   *entry
	dim, workers                        int
	eps                                 float32 // Norm.Eps, or Forward's eps
	unitOffset, center, roundNormalized bool
	n, stride, dstStride                int // Rows.N, Stride and DstStride (Grad: N and Stride)
	bufs                                [numArgs]placed
	arenaBytes                          int // the size of every arena of the case
	// What the case is, for messages: the layout and features of the valid case it varies, and
	// what it changed.
	layout, features, change string
}

// placed is where a buffer lies: in arena arena, from byte off, len elements; nil unless set (and
// then of len 0, as a nil slice is).
type placed struct {
	set        bool
	len        int
	arena, off int
}

// norm returns the Norm of the case, its Weight and Bias from the arenas.
func (c *sweepCase) norm(v *views) Norm {
	return Norm{Weight: v.f[argW], Dim: c.dim, Eps: c.eps, UnitOffset: c.unitOffset, RoundNormalized: c.roundNormalized,
		Center: c.center, Bias: v.f[argBias], Workers: c.workers}
}

func (c *sweepCase) rows16(v *views) Rows16 {
	return Rows16{Dst: v.h[argDst], X: v.h[argX], N: c.n, Stride: c.stride, DstStride: c.dstStride,
		Residual: v.h[argRes], Inv: v.f[argInv], Mean: v.f[argMean]}
}

func (c *sweepCase) rowsTo16(v *views) RowsTo16 {
	return RowsTo16{Dst: v.h[argDst], X: v.f[argX], N: c.n, Stride: c.stride, DstStride: c.dstStride,
		Residual: v.f[argRes], Inv: v.f[argInv], Mean: v.f[argMean]}
}

// String describes the case: what it is, the Norm and the layout, and where each buffer lies
// (buffers in the same arena overlap where their bytes do).
func (c *sweepCase) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %s, %s: %s", c.layout, c.features, c.change, c.e.name)
	if c.e.kind != kindForward && c.e.kind != kindConvert {
		fmt.Fprintf(&b, " of Norm{Dim: %d, Eps: %g, UnitOffset: %v, RoundNormalized: %v, Center: %v, Workers: %d}",
			c.dim, c.eps, c.unitOffset, c.roundNormalized, c.center, c.workers)
	} else if c.e.kind == kindForward {
		fmt.Fprintf(&b, " with eps %g", c.eps)
	}
	if c.e.kind == kindApply || c.e.kind == kindBackward {
		fmt.Fprintf(&b, ", N %d, Stride %d", c.n, c.stride)
		if c.e.kind == kindApply {
			fmt.Fprintf(&b, ", DstStride %d", c.dstStride)
		}
	}
	for a, p := range c.bufs {
		if p.set {
			fmt.Fprintf(&b, "; %s: %d elements, bytes [%d, %d) of arena %d", c.e.argName(arg(a)), p.len, p.off,
				p.off+p.len*c.e.size(arg(a)), p.arena)
		}
	}
	return b.String()
}

// arenas are the backing arrays of one goroutine of the sweep, reused from case to case: mem holds
// the buffers the call gets, before what mem held before the call.
type arenas struct {
	mem, before [numArgs][]byte
	fill        []byte // see pattern
}

// grow makes arena i hold at least bytes, in float32 backing arrays: every buffer, 16-bit or
// float32, is then aligned to its element.
func (a *arenas) grow(i, bytes int) {
	if len(a.mem[i]) < bytes {
		a.mem[i] = asBytes(make([]float32, (bytes+3)/4))
		a.before[i] = asBytes(make([]float32, (bytes+3)/4))
	}
}

// pattern returns what an arena holds before the outputs are marked: inputs of small finite
// float32 values, never all zero.
func (a *arenas) pattern(bytes int) []byte {
	if len(a.fill) < bytes {
		p := make([]float32, (bytes+3)/4)
		for i := range p {
			p[i] = 0.25 * float32(i%7+1)
		}
		a.fill = asBytes(p)
	}
	return a.fill[:bytes]
}

// used reports whether arena i holds a buffer of c.
func (c *sweepCase) used(i int) bool {
	for _, p := range c.bufs {
		if p.set && p.arena == i {
			return true
		}
	}
	return false
}

// prepare fills the arenas of c: the pattern, and guard values (guardValue, guard16) over every
// buffer the call writes, so that a write shows even where it stores what the pattern held.
func (a *arenas) prepare(c *sweepCase) {
	pattern := a.pattern(c.arenaBytes)
	for i := range numArgs {
		if c.used(i) {
			a.grow(i, c.arenaBytes)
			copy(a.before[i], pattern)
		}
	}
	for i, p := range c.bufs {
		if !p.set || p.len == 0 || !c.e.writes(arg(i)) {
			continue
		}
		img := a.before[p.arena][p.off:]
		if c.e.size(arg(i)) == 2 {
			fillWith(unsafe.Slice((*uint16)(unsafe.Pointer(&img[0])), p.len), guard16)
		} else {
			fillWith(unsafe.Slice((*float32)(unsafe.Pointer(&img[0])), p.len), guardValue)
		}
	}
	for i := range numArgs {
		if c.used(i) {
			copy(a.mem[i][:c.arenaBytes], a.before[i][:c.arenaBytes])
		}
	}
}

func fillWith[T elem](s []T, v T) {
	for i := range s {
		s[i] = v
	}
}

// views are the buffers of a case as slices of the arenas: f of the float32 ones, h of the 16-bit
// ones; nil where the case has none.
type views struct {
	f [numArgs][]float32
	h [numArgs][]uint16
}

func (a *arenas) views(c *sweepCase) *views {
	v := new(views)
	for i, p := range c.bufs {
		if !p.set {
			if p.len != 0 {
				panic(fmt.Sprintf("test bug: %s is nil with a length of %d", argNames[i], p.len))
			}
			continue
		}
		size := c.e.size(arg(i))
		if p.off < 0 || p.off%size != 0 || p.off >= c.arenaBytes || p.off+p.len*size > c.arenaBytes {
			panic(fmt.Sprintf("test bug: %s: %d elements at byte %d of an arena of %d", argNames[i], p.len, p.off, c.arenaBytes))
		}
		ptr := unsafe.Pointer(&a.mem[p.arena][p.off])
		if size == 2 {
			v.h[i] = unsafe.Slice((*uint16)(ptr), p.len) // not nil, even of length 0
		} else {
			v.f[i] = unsafe.Slice((*float32)(ptr), p.len)
		}
	}
	return v
}

// call makes the call of c on the prepared arenas and returns the value it panicked with, if it did.
func (a *arenas) call(c *sweepCase) (value any, panicked bool) {
	v := a.views(c)
	defer func() {
		if value = recover(); value != nil {
			panicked = true
		}
	}()
	c.e.call(c, v)
	return nil, false
}

// judge returns what is wrong with the outcome of the call of c, "" if nothing, given the rules'
// verdict: a call that breaks a rule panics with a string starting "rmsnorm:" before it writes
// anything; any other call does not panic, and writes only the rows of its outputs (the elements
// between rows and after the last one are neither read nor written; Inv[r] and Mean[r] are written
// for row r only).
func (a *arenas) judge(c *sweepCase, v verdict, value any, panicked bool) string {
	if v.broken != nil {
		if !panicked {
			return "did not panic"
		}
		msg, ok := value.(string)
		if !ok || !strings.HasPrefix(msg, "rmsnorm:") {
			return fmt.Sprintf("panicked with %T %v, want a string starting \"rmsnorm:\"", value, value)
		}
		// The checks find a broken rule fast, then look for which one to name it: a message that
		// names none means the two disagree.
		if strings.Contains(msg, "internal error") {
			return "panicked without naming the broken rule: " + msg
		}
		if w := a.changed(c); w != "" {
			return "wrote before panicking: " + w
		}
		return ""
	}
	if panicked {
		return fmt.Sprintf("panicked: %v", value)
	}
	a.restoreOutputs(c, v)
	if w := a.changed(c); w != "" {
		return "wrote outside the rows of its outputs: " + w
	}
	return ""
}

// restoreOutputs puts back what the arenas held under the elements a valid call writes.
func (a *arenas) restoreOutputs(c *sweepCase, v verdict) {
	restore := func(b arg, first, n int) {
		p := c.bufs[b]
		size := c.e.size(b)
		lo, hi := p.off+first*size, p.off+(first+n)*size
		copy(a.mem[p.arena][lo:hi], a.before[p.arena][lo:hi])
	}
	for i, p := range c.bufs {
		b := arg(i)
		switch {
		case !p.set || !c.e.writes(b):
		case c.e.kind == kindConvert:
			restore(b, 0, p.len)
		case b == argInv || b == argMean:
			restore(b, 0, v.rows)
		case b == argDW || b == argDB:
			restore(b, 0, v.d)
		default: // rows: Dst (DX of Backward at Stride), Residual
			stride := v.stride
			if b == argDst {
				stride = v.dstStride
			}
			for r := range v.rows {
				restore(b, r*stride, v.d)
			}
		}
	}
}

// changed describes the first byte of an arena of c that differs from what it held before the
// call, or returns "".
func (a *arenas) changed(c *sweepCase) string {
	for i := range numArgs {
		if !c.used(i) {
			continue
		}
		got, want := a.mem[i][:c.arenaBytes], a.before[i][:c.arenaBytes]
		if bytes.Equal(got, want) {
			continue
		}
		for k := range got {
			if got[k] != want[k] {
				return fmt.Sprintf("byte %d of arena %d%s: %#02x, was %#02x", k, i, c.whose(i, k), got[k], want[k])
			}
		}
	}
	return ""
}

// whose names the buffers of c that byte k of arena i belongs to.
func (c *sweepCase) whose(i, k int) string {
	var in []string
	for b, p := range c.bufs {
		if p.set && p.arena == i && k >= p.off && k < p.off+p.len*c.e.size(arg(b)) {
			in = append(in, fmt.Sprintf("element %d of %s", (k-p.off)/c.e.size(arg(b)), c.e.argName(arg(b))))
		}
	}
	if len(in) == 0 {
		return " (no buffer's)"
	}
	return " (" + strings.Join(in, ", ") + ")"
}
