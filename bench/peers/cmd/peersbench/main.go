// Command peersbench times what a user would write instead of rmsnorm (the peers package) on the
// standard shapes, each against copy() of the same bytes in the same process. It prints JSON rows
// that `go run ./cmd/rmsnormbench -peers` merges into its table; run it alone to see them.
// Build it with GOEXPERIMENT=simd on amd64 to include the simd/archsimd peer.
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
		for _, p := range peers.All() {
			t := benchutil.Time(*duration, func() { p.Fn(y, x, w, 1e-6) })
			out = append(out, benchutil.Result{Shape: s.String(), Kernel: p.Name, NsPerRow: t.Min / float64(s.Rows),
				NsPerRowMedian: t.Median / float64(s.Rows), GBps: bytes / t.Min, XCopy: t.Min / cp.Min})
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "peersbench:", err)
		os.Exit(1)
	}
}
