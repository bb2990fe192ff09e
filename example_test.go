package rmsnorm_test

import (
	"fmt"

	"github.com/gosimd/rmsnorm"
)

// The worked example of the RMSNorm notes: RMS([3 4]) = sqrt(25/2) ≈ 3.5355.
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
