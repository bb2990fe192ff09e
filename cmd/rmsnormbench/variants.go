package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gosimd/rmsnorm"
	"github.com/gosimd/rmsnorm/internal/benchutil"
)

// qkLayout is the layout of a fused QKV buffer: per token, Heads q heads, then KVHeads k heads
// and KVHeads v heads, each HeadDim long.
type qkLayout struct{ Heads, KVHeads, HeadDim int }

func (l qkLayout) String() string { return fmt.Sprintf("%d,%d,%d", l.Heads, l.KVHeads, l.HeadDim) }

// width is the length of a token's row of the QKV buffer.
func (l qkLayout) width() int { return (l.Heads + 2*l.KVHeads) * l.HeadDim }

func parseQK(s string) (qkLayout, error) {
	f := strings.Split(s, ",")
	n := make([]int, len(f))
	for i := range f {
		var err error
		if n[i], err = strconv.Atoi(f[i]); err != nil || n[i] < 1 || n[i] > maxQKField {
			n = nil
			break
		}
	}
	if len(n) != 3 {
		return qkLayout{}, fmt.Errorf("-qk %q: want HEADS,KVHEADS,HEADDIM, each from 1 to %d, e.g. 32,8,128", s, maxQKField)
	}
	return qkLayout{n[0], n[1], n[2]}, nil
}

// maxQKField bounds each number of -qk (heads, KV heads, head dimension), far above any model's.
const maxQKField = 1 << 16

// maxQKVBytes caps the QKV buffer of the q/k norm variant at the size of the largest batch the
// package's benchmarks time (benchutil.Large): a shape's row count larger than that in tokens
// (32768x128, a batch of single heads, say) is left out.
const maxQKVBytes = 256 << 20

// qkTokens returns the token counts of the q/k norm variant: the shapes' row counts, each once,
// except those whose QKV buffer would exceed maxQKVBytes, returned apart.
func (c config) qkTokens() (tokens, tooLarge []int) {
	for _, s := range c.shapes {
		switch {
		case slices.Contains(tokens, s.Rows) || slices.Contains(tooLarge, s.Rows):
		case c.qk.width() > maxQKVBytes/4/s.Rows: // 4*rows*width bytes, without overflow
			tooLarge = append(tooLarge, s.Rows)
		default:
			tokens = append(tokens, s.Rows)
		}
	}
	return tokens, tooLarge
}

// variantsMeasurements is the number of measurements of the variants: two per shape for the
// residual add, three for the norm into bfloat16, five per token count for q/k norm, and two per
// shape for LayerNorm.
func (c config) variantsMeasurements() int {
	tokens, _ := c.qkTokens()
	return 5*len(c.shapes) + 5*len(tokens) + 2*len(c.shapes)
}

// residualVariants times, at each shape, the fused residual add against a separate add loop
// followed by Forward.
func (b *bench) residualVariants() {
	b.printf("\nresidual add + norm, kernel %s:\n", b.rep.Machine.Kernel)
	b.printVariantHead("shape", "ns/row", "separate")
	for _, s := range b.shapes {
		x, w := benchutil.Data(s)
		res := slices.Clone(x)
		y := slices.Clone(x)
		n := rmsnorm.Norm{Weight: w, Eps: 1e-6}
		v := variant{Job: "residual add + norm", At: s.String(), Per: "row", Ref: "separate"}
		bytes := float64(16 * len(x)) // x, res read; res, y written
		ts := b.timeEach([]string{v.Job + " " + v.At + ", separate", v.Job + " " + v.At + ", fused"}, []func(){
			func() {
				for i, v := range x {
					res[i] += v
				}
				rmsnorm.Forward(y, res, w, 1e-6)
			},
			func() { n.Apply(rmsnorm.Rows{Dst: y, X: x, Residual: res}) },
		}, nil)
		sep, fused := ts[0], ts[1]
		b.addVariant(v, "separate add loop, then Forward", sep, s.Rows, bytes, sep)
		b.addVariant(v, "Rows.Residual (fused)", fused, s.Rows, bytes, sep)
	}
}

// mixedVariants times, at each shape, the norm of float32 rows into bfloat16 (the input of a
// bfloat16 matmul): Norm.ApplyToBF16 in one pass against Apply followed by Float32ToBF16, and
// Apply alone (float32 out) for scale.
func (b *bench) mixedVariants() {
	b.printf("\nnorm of float32 rows into bfloat16, kernel %s:\n", b.rep.Machine.Kernel)
	b.printVariantHead("shape", "ns/row", "two passes")
	for _, s := range b.shapes {
		x, w := benchutil.Data(s)
		y := slices.Clone(x)
		y16 := make([]uint16, len(x))
		rmsnorm.Float32ToBF16(y16, x) // the output's pages exist before anything is timed
		n := rmsnorm.Norm{Weight: w, Eps: 1e-6}
		v := variant{Job: "norm into bfloat16", At: s.String(), Per: "row", Ref: "two passes"}
		bytes := float64(6 * len(x)) // x read, y16 written
		what := v.Job + " " + v.At
		ts := b.timeEach([]string{what + ", two passes", what + ", one pass", what + ", float32 out"}, []func(){
			func() {
				n.Apply(rmsnorm.Rows{Dst: y, X: x})
				rmsnorm.Float32ToBF16(y16, y)
			},
			func() { n.ApplyToBF16(rmsnorm.RowsTo16{Dst: y16, X: x}) },
			func() { n.Apply(rmsnorm.Rows{Dst: y, X: x}) },
		}, nil)
		two, one, f32 := ts[0], ts[1], ts[2]
		b.addVariant(v, "Apply, then Float32ToBF16 (two passes)", two, s.Rows, bytes, two)
		b.addVariant(v, "ApplyToBF16 (one pass)", one, s.Rows, bytes, two)
		b.addVariant(v, "Apply alone (float32 out, 8 bytes/element)", f32, s.Rows, bytes, two)
	}
	b.printf("\nGB/s counts the 6 bytes per element of the one-pass call (float32 read, bfloat16 written) on\nevery line.\n")
}

// qkVariants times q and k norm in place inside a QKV buffer of the layout of -qk, at each token
// count of qkTokens, in the two orders a user can call it in, against the same rows stored back
// to back and against copy() of the same regions.
func (b *bench) qkVariants() {
	l := b.qk
	b.printf("\nq/k norm in place in a QKV buffer, kernel %s (-qk %s: per token %d q heads, %d k and %d v heads, of %d):\n",
		b.rep.Machine.Kernel, l, l.Heads, l.KVHeads, l.KVHeads, l.HeadDim)
	tokens, tooLarge := b.qkTokens()
	if len(tooLarge) > 0 {
		b.printf("(left out: %s tokens, whose QKV buffer would exceed %d MiB)\n", strings.Trim(fmt.Sprint(tooLarge), "[]"),
			maxQKVBytes>>20)
	}
	if len(tokens) == 0 {
		return
	}
	b.printVariantHead("tokens", "ns/token", "back to back")
	for _, t := range tokens {
		b.qkAt(t)
	}
	b.printf("\nper head: one Apply per q head and per k head, with N: tokens and Stride: the QKV row.\n" +
		"head-major: the same calls into another buffer, head after head, with DstStride: the head size.\n" +
		"per token: for each token, Forward on its q heads and Forward on its k heads (each contiguous).\n" +
		"copy(): each token's q and k heads copied to the same place in another buffer: what the memory\n" +
		"system gives for this layout, without arithmetic.\n")
}

// qkAt measures q/k norm on tokens tokens.
func (b *bench) qkAt(tokens int) {
	l := b.qk
	hd, width := l.HeadDim, l.width()
	qEnd, kEnd := l.Heads*hd, (l.Heads+l.KVHeads)*hd // a token's q heads, then its k heads, from its row's start
	qkv, _ := benchutil.Data(benchutil.Shape{Rows: tokens, D: width})
	// Weights of ones: the calls normalize the same rows in place over and over, and with ones
	// they stay normalized instead of drifting toward the largest weights and underflowing.
	ones := make([]float32, hd)
	for i := range ones {
		ones[i] = 1
	}
	qNorm, kNorm := rmsnorm.Norm{Weight: ones, Eps: 1e-6}, rmsnorm.Norm{Weight: slices.Clone(ones), Eps: 1e-6}
	flat := make([]float32, 0, tokens*kEnd) // every q row, then every k row
	for t := range tokens {
		flat = append(flat, qkv[t*width:t*width+qEnd]...)
	}
	for t := range tokens {
		flat = append(flat, qkv[t*width+qEnd:t*width+kEnd]...)
	}
	nq := tokens * qEnd
	dst := slices.Clone(qkv)

	v := variant{Job: "q/k norm, -qk " + l.String(), At: strconv.Itoa(tokens), Per: "token", Ref: "back to back"}
	what := fmt.Sprintf("q/k norm at %d tokens, ", tokens)
	bytes := float64(8 * tokens * kEnd)       // the q and k heads read and written
	headMajor := make([]float32, tokens*kEnd) // head h of token t at (h*tokens + t)*hd
	ts := b.timeEach([]string{what + "back to back", what + "per head", what + "head-major", what + "per token", what + "copy()"}, []func(){
		func() {
			qNorm.Forward(flat[:nq], flat[:nq])
			kNorm.Forward(flat[nq:], flat[nq:])
		},
		func() {
			for h := range l.Heads + l.KVHeads {
				n := qNorm
				if h >= l.Heads {
					n = kNorm
				}
				head := qkv[h*hd:]
				n.Apply(rmsnorm.Rows{Dst: head, X: head, N: tokens, Stride: width})
			}
		},
		func() {
			for h := range l.Heads + l.KVHeads {
				n := qNorm
				if h >= l.Heads {
					n = kNorm
				}
				n.Apply(rmsnorm.Rows{Dst: headMajor[h*tokens*hd:], X: qkv[h*hd:], N: tokens, Stride: width, DstStride: hd})
			}
		},
		func() {
			for t := 0; t < len(qkv); t += width {
				q, k := qkv[t:t+qEnd], qkv[t+qEnd:t+kEnd]
				qNorm.Forward(q, q)
				kNorm.Forward(k, k)
			}
		},
		func() {
			for t := 0; t < len(qkv); t += width {
				copy(dst[t:t+kEnd], qkv[t:t+kEnd])
			}
		},
	}, nil)
	ref := ts[0]
	b.addVariant(v, "q rows, then k rows, back to back (2 calls)", ref, tokens, bytes, ref)
	b.addVariant(v, fmt.Sprintf("per head: Apply with Stride (%d calls)", l.Heads+l.KVHeads), ts[1], tokens, bytes, ref)
	b.addVariant(v, "head-major: Apply with Stride, DstStride", ts[2], tokens, bytes, ref)
	b.addVariant(v, fmt.Sprintf("per token: Forward on q, on k (%d calls)", 2*tokens), ts[3], tokens, bytes, ref)
	b.addVariant(v, "copy() of the same q and k regions", ts[4], tokens, bytes, ref)
}

// layerNormVariants times, at each shape, LayerNorm (layerNorm: Center, Weight and Bias) against
// RMSNorm with the same weight, both through Norm.Apply: what centering and the bias cost on the
// kernel in use (-layernorm gives it for every kernel).
func (b *bench) layerNormVariants() {
	b.printf("\nLayerNorm against RMSNorm, kernel %s:\n", b.rep.Machine.Kernel)
	b.printVariantHead("shape", "ns/row", "RMSNorm")
	for _, s := range b.shapes {
		x, w := benchutil.Data(s)
		y := slices.Clone(x)
		rms, ln := rmsnorm.Norm{Weight: w, Eps: 1e-6}, layerNorm(w, layerNormBias(w), 0)
		v := variant{Job: "LayerNorm against RMSNorm", At: s.String(), Per: "row", Ref: "RMSNorm"}
		bytes := float64(8 * len(x)) // x read, y written
		ts := b.timeEach([]string{v.Job + " " + v.At + ", RMSNorm", v.Job + " " + v.At + ", LayerNorm"}, []func(){
			func() { rms.Apply(rmsnorm.Rows{Dst: y, X: x}) },
			func() { ln.Apply(rmsnorm.Rows{Dst: y, X: x}) },
		}, nil)
		ref := ts[0]
		b.addVariant(v, "RMSNorm: Norm with Weight", ref, s.Rows, bytes, ref)
		b.addVariant(v, "LayerNorm: Norm with Center, Weight, Bias", ts[1], s.Rows, bytes, ref)
	}
}

// printVariantHead prints the column heads of a variants section.
func (b *bench) printVariantHead(at, unit, ref string) {
	b.printf("%-12s %-44s %s %9s  %s\n", at, "how", minMedianHead(unit), "GB/s", "time vs "+ref)
}

// addVariant keeps and prints one line of a variants section: v done how, timed t for units
// units (rows or tokens) moving bytes bytes, against the reference timed ref.
func (b *bench) addVariant(v variant, how string, t benchutil.Timing, units int, bytes float64, ref benchutil.Timing) {
	v.How, v.Ns, v.NsMedian = how, t.Min/float64(units), t.Median/float64(units)
	v.GBps, v.VsRef = bytes/t.Min, t.Min/ref.Min
	b.rep.Variants = append(b.rep.Variants, v)
	b.printf("%-12s %-44s %s %9.2f  %s %s\n", v.At, v.How, minMedian(v.Ns, v.NsMedian), v.GBps, times(v.VsRef), v.Ref)
}
