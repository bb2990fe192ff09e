package peers

import "math"

// LayerNormPeer is a LayerNorm under comparison. New builds it for a weight w, a bias b and eps,
// as a program loads a model's layer once, and the function it returns normalizes the rows of x
// (each len(w) long) into dst: y = (x - mean)/sqrt(var + eps)*w + b, var the mean of the centered
// squares (the biased variance).
type LayerNormPeer struct {
	Name string
	New  func(w, b []float32, eps float32) func(dst, x []float32)
}

// LayerNorms returns the LayerNorm peers: the textbook loop and spago's layernorm model.
//
// github.com/ajroetker/go-highway has a LayerNorm too, but its module cannot be downloaded through
// the Go module proxy (it answers that the module is not available), so it is not among them.
func LayerNorms() []LayerNormPeer {
	return []LayerNormPeer{
		{"textbook", func(w, b []float32, eps float32) func(dst, x []float32) {
			return func(dst, x []float32) { TextbookLayerNorm(dst, x, w, b, eps) }
		}},
		{"spago", NewSpagoLayerNorm},
	}
}

// TextbookLayerNorm is LayerNorm as textbooks write it, in plain Go: one float32 accumulator for
// the mean, another for the variance of the centered row, then per element a subtract, a divide
// by the standard deviation, a multiply by the weight and an add of the bias.
func TextbookLayerNorm(dst, x, w, b []float32, eps float32) {
	d := len(w)
	for r := 0; r+d <= len(x); r += d {
		row, out := x[r:r+d], dst[r:r+d]
		var sum float32
		for _, v := range row {
			sum += v
		}
		mean := sum / float32(d)
		var ss float32
		for _, v := range row {
			ss += (v - mean) * (v - mean)
		}
		std := float32(math.Sqrt(float64(ss/float32(d) + eps)))
		for i, v := range row {
			out[i] = (v-mean)/std*w[i] + b[i]
		}
	}
}
