package peers

import (
	"github.com/nlpodyssey/spago/mat"
	"github.com/nlpodyssey/spago/nn/normalization/layernorm"
)

// NewSpagoLayerNorm builds spago's LayerNorm layer (nn/normalization/layernorm, the layer of the
// BERT and BART models written with spago) with weight w, bias b and eps; the function it returns
// runs the layer's Forward on each row of x, wrapped as a spago vector without a copy, and copies
// the result into dst. Forward builds a graph of operators for each row (a mean, a subtract, a
// square, a mean, a square root, a divide, a product and an add, each allocating its result), as
// it does inside a model.
func NewSpagoLayerNorm(w, b []float32, eps float32) func(dst, x []float32) {
	d := len(w)
	m := layernorm.New[float32](d, float64(eps))
	mat.SetData(m.W.Value(), w)
	mat.SetData(m.B.Value(), b)
	return func(dst, x []float32) {
		for r := 0; r+d <= len(x); r += d {
			y := m.Forward(mat.NewDense[float32](mat.WithBacking(x[r : r+d])))[0]
			copy(dst[r:r+d], mat.Data[float32](y.Value()))
		}
	}
}
