package rmsnorm_test

import (
	"fmt"
	"slices"

	"github.com/gosimd/rmsnorm"
)

// One row of d = 2: RMS([3 4]) = sqrt((9+16)/2) ≈ 3.5355, so y = [3 4]/3.5355.
func ExampleForward() {
	x := []float32{3, 4}
	w := []float32{1, 1}
	y := make([]float32, len(x))
	rmsnorm.Forward(y, x, w, 1e-6)
	fmt.Println(y)
	// Output: [0.8485281 1.1313708]
}

// Rows too large for a float32 sum of squares take the float64 path and still come out right.
func ExampleForward_overflow() {
	x := []float32{3e30, 4e30}
	w := []float32{1, 1}
	rmsnorm.Forward(x, x, w, 1e-6) // in place
	fmt.Println(x)
	// Output: [0.8485281 1.1313709]
}

// The pre-norm block x = x + Attention(RMSNorm(x)) with the residual add fused: stream holds
// the residual stream of two tokens (rows of d = 4), out the previous block's output. One pass
// adds out into stream and writes RMSNorm(stream) into out, ready for the next block.
func ExampleNorm_Apply_preNorm() {
	norm := rmsnorm.Norm{Weight: []float32{1, 1, 1, 1}, Eps: 1e-6}
	stream := []float32{1, 2, 3, 4, 0, 0, 0, 0}
	out := []float32{1, 0, 0, 0, 3, 4, 0, 0} // the previous block's output, one row per token

	norm.Apply(rmsnorm.Rows{Dst: out, X: out, Residual: stream})
	fmt.Println("stream:", stream)
	fmt.Printf("normed: %.4f\n", out)
	// Output:
	// stream: [2 2 3 4 3 4 0 0]
	// normed: [0.6963 0.6963 1.0445 1.3926 1.2000 1.6000 0.0000 0.0000]
}

// Per-head q/k norm (Qwen3, head_dim 128) inside a fused QKV buffer: each token's row holds the q
// heads, then the k heads, then the v heads. Rows with a stride reach one head across all tokens
// in place, without copying; the v heads are never touched.
func ExampleNorm_Apply_qkNorm() {
	const tokens, headDim, qHeads, kvHeads = 3, 128, 4, 2
	width := (qHeads + 2*kvHeads) * headDim
	qkv := make([]float32, tokens*width)
	for i := range qkv {
		qkv[i] = float32(i%7) - 3
	}
	qNorm := rmsnorm.Norm{Weight: make([]float32, headDim), Eps: 1e-6}
	kNorm := rmsnorm.Norm{Weight: make([]float32, headDim), Eps: 1e-6}
	for i := range qNorm.Weight {
		qNorm.Weight[i], kNorm.Weight[i] = 1, 0.5
	}
	vBefore := qkv[(qHeads+kvHeads)*headDim]

	for h := 0; h < qHeads; h++ {
		q := qkv[h*headDim:]
		qNorm.Apply(rmsnorm.Rows{Dst: q, X: q, N: tokens, Stride: width})
	}
	for h := 0; h < kvHeads; h++ {
		k := qkv[(qHeads+h)*headDim:]
		kNorm.Apply(rmsnorm.Rows{Dst: k, X: k, N: tokens, Stride: width})
	}
	fmt.Printf("q[0][0:4] = %.4f\n", qkv[0:4])
	fmt.Printf("k[0][0:4] = %.4f\n", qkv[qHeads*headDim:qHeads*headDim+4])
	fmt.Println("v untouched:", qkv[(qHeads+kvHeads)*headDim] == vBefore)
	// Output:
	// q[0][0:4] = [-1.4927 -0.9952 -0.4976 0.0000]
	// k[0][0:4] = [-0.5015 -0.2507 0.0000 0.2507]
	// v untouched: true
}

// Per-head q/k norm (Qwen3) from the fused QKV buffer straight into the head-major buffers
// attention reads: each token's row of qkv holds the q heads, then the k heads, then the v heads;
// qOut holds head after head, each tokens rows of headDim. One call per head reads that head
// across all tokens (Stride: the QKV row) and writes it back to back (DstStride: headDim); qkv is
// left as it was.
func ExampleNorm_Apply_headMajor() {
	const tokens, headDim, qHeads, kvHeads = 3, 128, 4, 2
	width := (qHeads + 2*kvHeads) * headDim
	qkv := make([]float32, tokens*width)
	for i := range qkv {
		qkv[i] = float32(i%7) - 3
	}
	qNorm := rmsnorm.Norm{Weight: make([]float32, headDim), Eps: 1e-6}
	kNorm := rmsnorm.Norm{Weight: make([]float32, headDim), Eps: 1e-6}
	for i := range qNorm.Weight {
		qNorm.Weight[i], kNorm.Weight[i] = 1, 0.5
	}
	before := slices.Clone(qkv)

	qOut := make([]float32, qHeads*tokens*headDim) // [head][token][headDim]
	kOut := make([]float32, kvHeads*tokens*headDim)
	for h := range qHeads {
		qNorm.Apply(rmsnorm.Rows{Dst: qOut[h*tokens*headDim : (h+1)*tokens*headDim], X: qkv[h*headDim:],
			N: tokens, Stride: width, DstStride: headDim})
	}
	for h := range kvHeads {
		kNorm.Apply(rmsnorm.Rows{Dst: kOut[h*tokens*headDim : (h+1)*tokens*headDim], X: qkv[(qHeads+h)*headDim:],
			N: tokens, Stride: width, DstStride: headDim})
	}
	// Head 2 of token 1: row 1 of head 2 in qOut, from qkv[1*width + 2*headDim:].
	fmt.Printf("q head 0, token 0: %.4f\n", qOut[0:4])
	fmt.Printf("q head 2, token 1: %.4f\n", qOut[(2*tokens+1)*headDim:][:4])
	fmt.Printf("k head 0, token 0: %.4f\n", kOut[0:4])
	fmt.Println("qkv unchanged:", slices.Equal(qkv, before))
	// Output:
	// q head 0, token 0: [-1.4927 -0.9952 -0.4976 0.0000]
	// q head 2, token 1: [1.4856 -1.4856 -0.9904 -0.4952]
	// k head 0, token 0: [-0.5015 -0.2507 0.0000 0.2507]
	// qkv unchanged: true
}

// The q/k norms of the example above with bfloat16 output for a bfloat16 attention, the QKV
// projection kept in float32: ApplyToBF16 writes the head-major bfloat16 rows of q and k in one
// pass each, with the bits of Apply into a float32 buffer followed by Float32ToBF16.
func ExampleNorm_ApplyToBF16() {
	const tokens, headDim, qHeads, kvHeads = 3, 128, 4, 2
	width := (qHeads + 2*kvHeads) * headDim
	qkv := make([]float32, tokens*width)
	for i := range qkv {
		qkv[i] = float32(i%7) - 3
	}
	qNorm := rmsnorm.Norm{Weight: make([]float32, headDim), Eps: 1e-6}
	kNorm := rmsnorm.Norm{Weight: make([]float32, headDim), Eps: 1e-6}
	for i := range qNorm.Weight {
		qNorm.Weight[i], kNorm.Weight[i] = 1, 0.5
	}
	// norm writes heads heads of bfloat16 rows, head h read from column first+h*headDim of qkv.
	norm := func(n rmsnorm.Norm, first, heads int) []uint16 {
		out := make([]uint16, heads*tokens*headDim) // bfloat16 bits, [head][token][headDim]
		for h := range heads {
			n.ApplyToBF16(rmsnorm.RowsTo16{Dst: out[h*tokens*headDim : (h+1)*tokens*headDim],
				X: qkv[first+h*headDim:], N: tokens, Stride: width, DstStride: headDim})
		}
		return out
	}
	qOut := norm(qNorm, 0, qHeads)
	kOut := norm(kNorm, qHeads*headDim, kvHeads)

	// The two passes it replaces for k: float32 head-major rows, then the conversion.
	k32 := make([]float32, len(kOut))
	for h := range kvHeads {
		kNorm.Apply(rmsnorm.Rows{Dst: k32[h*tokens*headDim : (h+1)*tokens*headDim], X: qkv[(qHeads+h)*headDim:],
			N: tokens, Stride: width, DstStride: headDim})
	}
	twoPass := make([]uint16, len(k32))
	rmsnorm.Float32ToBF16(twoPass, k32)

	q, k := make([]float32, 4), make([]float32, 4)
	rmsnorm.BF16ToFloat32(q, qOut[(2*tokens+1)*headDim:][:4])
	rmsnorm.BF16ToFloat32(k, kOut[:4])
	fmt.Printf("q head 2, token 1: %.4f\n", q)
	fmt.Printf("k head 0, token 0: %.4f\n", k)
	fmt.Printf("k in float32:      %.4f\n", k32[:4])
	fmt.Println("k: same bits as the two passes:", slices.Equal(kOut, twoPass))
	// Output:
	// q head 2, token 1: [1.4844 -1.4844 -0.9922 -0.4961]
	// k head 0, token 0: [-0.5000 -0.2500 0.0000 0.2500]
	// k in float32:      [-0.5015 -0.2507 0.0000 0.2507]
	// k: same bits as the two passes: true
}

// Gemma stores norm weights centred on zero and scales by 1 + w, formed in float32.
func ExampleNorm_Forward_gemma() {
	norm := rmsnorm.Norm{Weight: []float32{0, 0.5}, Eps: 1e-6, UnitOffset: true}
	y := make([]float32, 2)
	norm.Forward(y, []float32{3, 4})
	fmt.Println(y)
	// Output: [0.8485281 1.6970562]
}

// A Norm can be used where it is written: its methods have value receivers, so a composite
// literal calls them directly.
func ExampleNorm_Forward_literal() {
	w := []float32{1, 1}
	x := []float32{3, 4}
	y := make([]float32, len(x))
	rmsnorm.Norm{Weight: w, Eps: 1e-6}.Forward(y, x)
	fmt.Println(y)
	// Output: [0.8485281 1.1313708]
}

// A bfloat16 pre-norm block, the residual stream kept in bfloat16 as the checkpoint's dtype: one
// pass adds the block's output into the stream (rounded to bfloat16, as an unfused bfloat16 model
// would) and normalizes it into the input of the next block. The weight, stored as bfloat16 in
// the checkpoint, is widened to float32 once at load.
func ExampleNorm_ApplyBF16() {
	const d = 4
	ckpt := []uint16{0x3f80, 0x3f80, 0x4000, 0x3f00} // bfloat16 bits of [1 1 2 0.5]
	w := make([]float32, d)
	rmsnorm.BF16ToFloat32(w, ckpt)                                    // exact, once
	norm := rmsnorm.Norm{Weight: w, Eps: 1e-6, RoundNormalized: true} // LlamaRMSNorm's cast order

	stream := make([]uint16, d)
	out := make([]uint16, d)
	rmsnorm.Float32ToBF16(stream, []float32{1, 2, 3, 4})    // the residual stream
	rmsnorm.Float32ToBF16(out, []float32{0.5, -0.25, 1, 0}) // a block's output

	norm.ApplyBF16(rmsnorm.Rows16{Dst: out, X: out, Residual: stream})
	back := make([]float32, d)
	rmsnorm.BF16ToFloat32(back, stream)
	fmt.Println("stream:", back)
	rmsnorm.BF16ToFloat32(back, out)
	fmt.Printf("normed: %.4f\n", back)
	// Output:
	// stream: [1.5 1.75 4 4]
	// normed: [0.4902 0.5742 2.6250 0.6562]
}

// Two bfloat16 rows back to back, normalized in place with LlamaRMSNorm's cast order: x*inv is
// rounded to bfloat16 before the weight multiply. The same Norm serves float32 rows (Forward) and
// bfloat16 ones.
func ExampleNorm_ForwardBF16() {
	norm := rmsnorm.Norm{Weight: []float32{1, 0.5}, Eps: 1e-6, RoundNormalized: true}
	x := make([]uint16, 4)
	rmsnorm.Float32ToBF16(x, []float32{3, 4, 1, -1}) // two rows of d = 2

	norm.ForwardBF16(x, x)
	y := make([]float32, len(x))
	rmsnorm.BF16ToFloat32(y, x)
	fmt.Println(y)
	// Output: [0.84765625 0.56640625 1 -0.5]
}

// One training step of a norm layer: the forward pass keeps 1/rms of each row (Rows.Inv), the loss
// L = 0.5*sum((y - target)^2) gives dL/dy = y - target, Backward turns it into the gradient of
// the input and adds the weight gradient to DW, and plain SGD updates the weight.
func ExampleNorm_Backward() {
	const d = 4
	norm := rmsnorm.Norm{Weight: []float32{1, 1, 1, 1}, Eps: 1e-6}
	x := []float32{1, 2, 3, 4, 2, 0, -2, 1} // two rows
	target := []float32{0, 1, 1, 1, 1, 0, -1, 1}

	y := make([]float32, len(x))
	inv := make([]float32, len(x)/d)
	norm.Apply(rmsnorm.Rows{Dst: y, X: x, Inv: inv})
	dy := make([]float32, len(y))
	var loss float32
	for i := range y {
		dy[i] = y[i] - target[i]
		loss += 0.5 * dy[i] * dy[i]
	}

	dx := make([]float32, len(x))
	dw := make([]float32, d) // Backward adds to it: zero it before each step
	norm.Backward(rmsnorm.Grad{DX: dx, X: x, DY: dy, Inv: inv, DW: dw})

	const lr = 0.1
	for i := range norm.Weight {
		norm.Weight[i] -= lr * dw[i]
	}
	norm.Apply(rmsnorm.Rows{Dst: y, X: x})
	var after float32
	for i := range y {
		after += 0.5 * (y[i] - target[i]) * (y[i] - target[i])
	}
	fmt.Printf("loss %.4f\n", loss)
	fmt.Printf("dx   %.4f\n", dx[:d])
	fmt.Printf("dw   %.4f\n", dw)
	fmt.Printf("w    %.4f\n", norm.Weight)
	fmt.Printf("loss %.4f after the step\n", after)
	// Output:
	// loss 0.3803
	// dx   [0.1095 -0.1461 -0.0365 0.0730]
	// dw   [0.5778 -0.1970 0.5490 0.4505]
	// w    [0.9422 1.0197 0.9451 0.9549]
	// loss 0.3030 after the step
}

// The backward pass of a pre-norm block, whose forward fused the residual add: h = x + r, with x
// the previous block's output and r the residual stream, was normalized and stored into the
// stream (Rows.Residual). Backward takes h as X and gives dh, the gradient of h through the norm
// alone. h also goes on along the skip connection, so dL/dh = dh + the gradient that came back
// along the stream; and since h = x + r, that sum is the gradient of both r and x. The caller
// adds dh into the stream's gradient, which is then also the gradient of the block input.
func ExampleNorm_Backward_residual() {
	norm := rmsnorm.Norm{Weight: []float32{1, 1, 1, 1}, Eps: 1e-6}
	stream := []float32{1, 2, 3, 4} // r
	x := []float32{1, 0, -1, 0}     // the previous block's output
	y := make([]float32, 4)
	inv := make([]float32, 1)
	norm.Apply(rmsnorm.Rows{Dst: y, X: x, Residual: stream, Inv: inv})
	h := append([]float32(nil), stream...) // keep h: the next block's fused add overwrites the stream

	dy := []float32{0.5, -0.5, 0, 1}         // dL/dy, from the attention or MLP that read y
	dStream := []float32{0.1, 0.1, 0.1, 0.1} // dL/dh along the skip connection, from the blocks above
	dh := make([]float32, 4)
	norm.Backward(rmsnorm.Grad{DX: dh, X: h, DY: dy, Inv: inv})
	for i := range dStream {
		dStream[i] += dh[i] // now the whole dL/dh: the gradient of r, passed on down the stream
	}
	dx := dStream // h = x + r: the gradient of x, the previous block's output, is the same

	fmt.Println("h:", h)
	fmt.Printf("dh through the norm: %.4f\n", dh)
	fmt.Printf("d stream = d x:      %.4f\n", dx)
	// Output:
	// h: [2 2 2 4]
	// dh through the norm: [0.0810 -0.2970 -0.1080 0.1620]
	// d stream = d x:      [0.1810 -0.1970 -0.0080 0.2620]
}

// At decode, one token at a time, a token's q heads lie back to back in the fused QKV buffer: one
// Norm.Forward normalizes all of them, each head a row of headDim, and one more does the k heads.
// That is two calls per token instead of one per head (the strided form above, which suits a batch
// of tokens); both give the same bits.
func ExampleNorm_Forward_qkDecode() {
	const headDim, qHeads, kvHeads = 128, 4, 2
	width := (qHeads + 2*kvHeads) * headDim
	qkv := make([]float32, width) // one token
	for i := range qkv {
		qkv[i] = float32(i%7) - 3
	}
	qNorm := rmsnorm.Norm{Weight: make([]float32, headDim), Eps: 1e-6}
	kNorm := rmsnorm.Norm{Weight: make([]float32, headDim), Eps: 1e-6}
	for i := range qNorm.Weight {
		qNorm.Weight[i], kNorm.Weight[i] = 1, 0.5
	}
	strided := append([]float32(nil), qkv...)

	q := qkv[:qHeads*headDim]
	k := qkv[qHeads*headDim : (qHeads+kvHeads)*headDim]
	qNorm.Forward(q, q) // every q head of the token
	kNorm.Forward(k, k) // every k head

	for h := range qHeads { // the same heads one strided call each
		q := strided[h*headDim:]
		qNorm.Apply(rmsnorm.Rows{Dst: q, X: q, N: 1, Stride: width})
	}
	for h := range kvHeads {
		k := strided[(qHeads+h)*headDim:]
		kNorm.Apply(rmsnorm.Rows{Dst: k, X: k, N: 1, Stride: width})
	}
	fmt.Printf("q[0][0:4] = %.4f\n", qkv[0:4])
	fmt.Println("same bits as per head:", slices.Equal(qkv, strided))
	// Output:
	// q[0][0:4] = [-1.4927 -0.9952 -0.4976 0.0000]
	// same bits as per head: true
}

// A layer called once per token can build its Rows once and reuse it: a Rows literal written in
// the call costs about 20 ns more on short rows (on Zen 5 at 1x128, 42 ns against 19; the bench
// command's overhead section measures both on your machine).
func ExampleNorm_Apply_rowsAhead() {
	const d = 128
	type layer struct {
		norm rmsnorm.Norm
		rows rmsnorm.Rows // built once: Dst, X and Residual stay the same buffers every step
	}
	w := make([]float32, d)
	for i := range w {
		w[i] = 1
	}
	out, stream := make([]float32, d), make([]float32, d)
	l := layer{
		norm: rmsnorm.Norm{Weight: w, Eps: 1e-6},
		rows: rmsnorm.Rows{Dst: out, X: out, Residual: stream},
	}
	for step := range 3 {
		for i := range out {
			out[i] = float32(step + 1) // the block's output of this step
		}
		l.norm.Apply(l.rows) // stream += out; out = RMSNorm(stream)
	}
	fmt.Printf("stream[0] = %v, out[0] = %.4f\n", stream[0], out[0])
	// Output:
	// stream[0] = 6, out[0] = 1.0000
}
