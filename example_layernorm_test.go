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
