package rmsnorm

import (
	"bufio"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"strings"
	"testing"
)

// The contract promises the same bits on every platform, not only on every kernel of one machine.
// This test hashes the outputs of a fixed set of calls, with every kernel under test, and compares
// the hash with testdata/golden.txt, written on amd64; the calls include 16-bit storage. CI runs it on arm64, arm, 386, s390x
// (big-endian), ppc64le and riscv64 as well, where the compiler might fuse a multiply and an add
// in the generic kernel or a kernel might round differently.

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden.txt from this platform")

// goldenValue makes test values from integers only, so that the inputs themselves are the same
// bits everywhere (math functions may differ in the last bit between architectures). Most rows
// hold ordinary values with full 24-bit significands, whose squares round (so a fused
// multiply-add would change the sums); a row in eight is tiny, huge or subnormal as a whole.
func goldenValue(seed uint64, i int) float32 {
	mix := func(h uint64) uint64 {
		h = h*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
		h ^= h >> 29
		h *= 0xbf58476d1ce4e5b9
		return h ^ h>>32
	}
	h := mix(seed + uint64(i))
	mant := float32(int32(uint32(h))) / (1 << 31) // [-1, 1)
	switch mix(seed) % 32 {
	case 0:
		return mant * 1e-25
	case 1:
		return mant * 1e25
	case 2:
		return mant * 1e-41 // subnormal
	case 3:
		if h>>60 == 0 {
			return float32(math.Inf(1)) // a few rows with an Inf
		}
	}
	return mant * float32(int32(h>>40&15)+1)
}

// goldenHash runs the fixed calls with kernel k and hashes every output float (NaNs as one value,
// the contract leaving their payloads open).
func goldenHash(k kernelID) uint64 {
	h := fnv.New64a()
	put := func(s []float32) {
		var b [4]byte
		for _, v := range s {
			u := math.Float32bits(v)
			if v != v {
				u = 0x7fc00000
			}
			b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
			h.Write(b[:])
		}
	}
	for _, d := range []int{1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 127, 128, 129, 255, 300, 512, 513, 1000, 4097} {
		for _, rows := range []int{1, 5} {
			x := make([]float32, rows*d)
			res := make([]float32, rows*d)
			for i := range x {
				x[i] = goldenValue(uint64(d*7+rows+i/d*1000), i)
				res[i] = goldenValue(uint64(d*11+rows+i/d*1000), i)
			}
			w := make([]float32, d)
			for i := range w {
				w[i] = goldenValue(uint64(d*13), i)
			}
			for _, eps := range []float32{1e-6, 0} {
				for _, mode := range []weightMode{weighted, offset, unweighted} {
					for _, residual := range []bool{false, true} {
						n := Norm{Weight: w, Eps: eps, UnitOffset: mode == offset}
						if mode == unweighted {
							n = Norm{Dim: d, Eps: eps}
						}
						y := make([]float32, len(x))
						inv := make([]float32, rows)
						r := Rows{Dst: y, X: x, Inv: inv}
						var rr []float32
						if residual {
							rr = append([]float32(nil), res...)
							r.Residual = rr
						}
						applyWith(k, &n, &r)
						put(y)
						put(inv)
						put(rr)
					}
				}
			}
			// 16-bit storage: the same rows rounded to each format, both cast orders, with and
			// without the residual stream.
			for _, f := range formats16 {
				x16, res16 := narrowAll(x, f), narrowAll(res, f)
				for _, rn := range []bool{false, true} {
					for _, residual := range []bool{false, true} {
						n := Norm{Weight: w, Eps: 1e-6, RoundNormalized: rn}
						y := make([]uint16, len(x16))
						inv := make([]float32, rows)
						var rr []uint16
						if residual {
							rr = append([]uint16(nil), res16...)
						}
						applyRowsWith(k, &n, f, y, x16, rr, inv, rows, d)
						put(widenNaNAs(y, f))
						put(inv)
						put(widenNaNAs(rr, f))
					}
				}
			}
		}
	}
	// Many short rows: a fused multiply-add in a sum of squares changes a partial sum by an ulp
	// now and then, and only a few rows in a hundred carry that into ss, so it takes thousands
	// of rows to see it for sure.
	for _, d := range []int{100, 200} {
		const rows = 2048
		x := make([]float32, rows*d)
		for i := range x {
			x[i] = goldenValue(uint64(d), i)
		}
		w := make([]float32, d)
		for i := range w {
			w[i] = goldenValue(uint64(d+1), i)
		}
		y := make([]float32, len(x))
		forwardWith(k, y, x, w, 1e-6)
		put(y)
	}
	return h.Sum64()
}

// widenNaNAs widens 16-bit outputs for put, which hashes every NaN as one value.
func widenNaNAs(h []uint16, f format) []float32 {
	if h == nil {
		return nil
	}
	return widenAll(h, f)
}

func TestGoldenAcrossPlatforms(t *testing.T) {
	const path = "testdata/golden.txt"
	want := goldenHash(kernelGeneric)
	for _, k := range testKernels() {
		if got := goldenHash(k); got != want {
			t.Fatalf("kernel %s hashes to %016x, generic to %016x", k, got, want)
		}
	}
	if *updateGolden {
		content := fmt.Sprintf("# FNV-64a of the outputs of goldenHash (golden_test.go), identical on every platform.\n%016x\n", want)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var golden string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			golden = l
		}
	}
	if got := fmt.Sprintf("%016x", want); got != golden {
		t.Fatalf("outputs hash to %s here, %s on the platform that wrote %s: the bits differ", got, golden, path)
	}
}
