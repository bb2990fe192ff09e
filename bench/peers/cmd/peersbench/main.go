// Command peersbench times what a user would write instead of rmsnorm (the peers package) on the
// standard shapes, each against copy() of the same bytes in the same process. It prints JSON rows
// that `go run ./cmd/rmsnormbench -peers` merges into its table; run it alone to see them.
// Build it with GOEXPERIMENT=simd on amd64 to include the simd/archsimd peer. With -layernorm it
// times the LayerNorm peers instead (with BERT's eps 1e-12, and the bias w - 1 that the bench
// command gives its LayerNorm).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/gosimd/rmsnorm/bench/peers"
	"github.com/gosimd/rmsnorm/internal/benchutil"
)

func main() {
	shapesFlag := flag.String("shapes", benchutil.Standard, "comma-separated shapes, each ROWSxD")
	duration := flag.Duration("duration", 300*time.Millisecond, "measuring time per peer and shape")
	layerNorm := flag.Bool("layernorm", false, "time the LayerNorm peers instead of the RMSNorm ones")
	flag.Parse()
	shapes, err := benchutil.ParseShapes(*shapesFlag)
	if err != nil {
		fmt.Fprintln(os.Stderr, "peersbench:", err)
		os.Exit(2)
	}
	var out []benchutil.Result
	for _, s := range shapes {
		x, w := benchutil.Data(s)
		y := make([]float32, len(x))
		bytes := float64(8 * len(x))
		cp := benchutil.Time(*duration, func() { copy(y, x) })
		add := func(name string, f func()) {
			t := benchutil.Time(*duration, f)
			out = append(out, benchutil.Result{Shape: s.String(), Kernel: name, NsPerRow: t.Min / float64(s.Rows),
				NsPerRowMedian: t.Median / float64(s.Rows), GBps: bytes / t.Min, XCopy: t.Min / cp.Min})
		}
		if *layerNorm {
			bias := make([]float32, len(w))
			for i, v := range w {
				bias[i] = v - 1
			}
			for _, p := range peers.LayerNorms() {
				f := p.New(w, bias, 1e-12)
				add(p.Name, func() { f(y, x) })
			}
			continue
		}
		for _, p := range peers.All() {
			add(p.Name, func() { p.Fn(y, x, w, 1e-6) })
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "peersbench:", err)
		os.Exit(1)
	}
}
