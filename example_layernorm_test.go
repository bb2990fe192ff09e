package rmsnorm_test

import (
	"fmt"

	"github.com/gosimd/rmsnorm"
)

// The post-norm block of BERT and its descendants (all-MiniLM, bge, e5): stream =
// LayerNorm(stream + sublayer(stream)). One call adds the sublayer's output to the stream and
// normalizes the sum back into the stream, in place; the sum is left in out, which the block no
// longer needs. Eps is BERT's layer_norm_eps, 1e-12.
func ExampleNorm_Apply_layerNorm() {
	norm := rmsnorm.Norm{
		Weight: []float32{1, 1, 2, 2}, // the checkpoint's LayerNorm.weight (gamma)
		Bias:   []float32{0, 0, 0, 1}, // and LayerNorm.bias (beta)
		Eps:    1e-12,
		Center: true,
	}
	stream := []float32{1, 2, 3, 4, 10, 10, 10, 10}
	out := []float32{1, 0, 1, 0, 1, 2, 3, 4} // the sublayer's output, one row per token
	mean, inv := make([]float32, 2), make([]float32, 2)

	norm.Apply(rmsnorm.Rows{Dst: stream, X: stream, Residual: out, Mean: mean, Inv: inv})
	fmt.Println("sum:   ", out)
	fmt.Printf("stream: %.4f\n", stream)
	fmt.Printf("mean: %v, 1/std: %.4f\n", mean, inv)
	// Output:
	// sum:    [2 2 4 4 11 12 13 14]
	// stream: [-1.0000 -1.0000 2.0000 3.0000 -1.3416 -0.4472 0.8944 3.6833]
	// mean: [3 12.5], 1/std: [1.0000 0.8944]
}

// A training step of LayerNorm's weight and bias: the forward pass keeps each row's mean and
// 1/std, the backward pass reads them back, adds the weight gradient to DW and the bias gradient
// (the sum of dy over the rows) to DB, and gives dx for the layers below.
func ExampleNorm_Backward_layerNorm() {
	const d = 4
	norm := rmsnorm.Norm{Weight: []float32{1, 1, 1, 1}, Bias: []float32{0, 0, 0, 0}, Eps: 1e-12, Center: true}
	x := []float32{1, 2, 3, 4, 2, 0, -2, 1} // two rows
	target := []float32{-1, 0, 0, 2, 1, 0, -1, 1}
	loss := func(y []float32) (l float32) {
		for i := range y {
			l += 0.5 * (y[i] - target[i]) * (y[i] - target[i])
		}
		return l
	}

	y := make([]float32, len(x))
	mean, inv := make([]float32, len(x)/d), make([]float32, len(x)/d)
	norm.Apply(rmsnorm.Rows{Dst: y, X: x, Mean: mean, Inv: inv})
	dy := make([]float32, len(y))
	for i := range y {
		dy[i] = y[i] - target[i]
	}
	before := loss(y)

	dx := make([]float32, len(x))
	dw, db := make([]float32, d), make([]float32, d) // both accumulate: zero them before each step
	norm.Backward(rmsnorm.Grad{DX: dx, X: x, DY: dy, Mean: mean, Inv: inv, DW: dw, DB: db})

	const lr = 0.1
	for i := range d {
		norm.Weight[i] -= lr * dw[i]
		norm.Bias[i] -= lr * db[i]
	}
	norm.Apply(rmsnorm.Rows{Dst: y, X: x})
	fmt.Printf("loss %.4f\n", before)
	fmt.Printf("dx   %.4f\n", dx[:d])
	fmt.Printf("dw   %.4f\n", dw)
	fmt.Printf("db   %.4f\n", db)
	fmt.Printf("loss %.4f after the step\n", loss(y))
	// Output:
	// loss 0.7635
	// dx   [-0.0894 -0.1789 0.6261 -0.3578]
	// dw   [0.6751 0.2286 0.9930 -1.1332]
	// db   [-0.1584 -0.6162 -0.0741 -1.1513]
	// loss 0.3883 after the step
}
