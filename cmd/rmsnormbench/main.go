// Command rmsnormbench shows what the rmsnorm package does on this machine. It prints at once the
// CPU, its features, the kernel the package picked and about how long the run takes, then each
// line as soon as it is measured: for every kernel and shape the time per row (of the best round
// and of the median one), the bandwidth and the ratio to Go's copy() of the same bytes measured in
// the same run. With the active kernel it then times the variants at the same shapes (the fused
// residual add; the norm into bfloat16; q/k norm inside a QKV buffer, per head and per token;
// LayerNorm against RMSNorm) and what one call costs on short rows, and it ends with a summary of
// a few lines.
//
//	go run ./cmd/rmsnormbench                     # every available kernel, the standard shapes
//	go run ./cmd/rmsnormbench -kernels avx2 -shapes 1x4096,32768x128 -duration 2s
//	go run ./cmd/rmsnormbench -qk 64,8,128        # q/k norm with 64 q heads, 8 k/v heads of 128
//	go run ./cmd/rmsnormbench -json > bench.json  # JSON on stdout, the text on stderr
//	go run ./cmd/rmsnormbench -list               # the available kernels, one per line
//	go run ./cmd/rmsnormbench -peers              # side by side with the textbook loop, vek, gonum, archsimd
//	go run ./cmd/rmsnormbench -variants=false -overhead=false -summary=false  # the table only
//	go run ./cmd/rmsnormbench -backward           # Norm.Backward (with Inv and DW) instead of the forward pass
//	go run ./cmd/rmsnormbench -layernorm -backward # LayerNorm's Backward (Inv, Mean, DW, DB) against RMSNorm's
//	go run ./cmd/rmsnormbench -workers 4          # calls through a Norm with Workers: 4, against one goroutine
//	go run ./cmd/rmsnormbench -layernorm          # LayerNorm per kernel, against RMSNorm on the same rows
//	go run ./cmd/rmsnormbench -layernorm -peers   # and against the textbook LayerNorm loop and spago
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gosimd/rmsnorm"
	"github.com/gosimd/rmsnorm/internal/benchutil"
)

// config is what the flags ask for.
type config struct {
	kernels   []string          // the kernels of the table
	shapes    []benchutil.Shape // the shapes of the table and of the variants
	dur       time.Duration     // measuring time of each thing timed
	format    string            // how the table's rows are stored: f32, bf16 or f16
	backward  bool              // the table times Norm.Backward
	layernorm bool              // the table times LayerNorm, against RMSNorm
	workers   int               // Norm.Workers of the table's calls (0: the package-level functions)
	peers     bool              // the table adds bench/peers
	variants  bool
	overhead  bool
	summary   bool
	qk        qkLayout // the q/k norm variant's layout
}

func main() {
	kernelsFlag := flag.String("kernels", "", "comma-separated kernels to measure (default: every available kernel)")
	shapesFlag := flag.String("shapes", benchutil.Standard, "comma-separated shapes, each ROWSxD, of the table and of the variants")
	duration := flag.Duration("duration", 300*time.Millisecond, "measuring time of each thing timed (a kernel on a shape, a variant, a call of the overhead\nsection), split into ten rounds; the best round counts and the median one shows the spread")
	jsonOut := flag.Bool("json", false, "print JSON on stdout when done; the text goes to stderr as it is measured")
	variants := flag.Bool("variants", true, "also time the fused residual add, the norm into bfloat16 (ApplyToBF16) and LayerNorm against\nRMSNorm at each shape, and q/k norm inside a QKV buffer (-qk), with the active kernel")
	qkFlag := flag.String("qk", "32,8,128", "HEADS,KVHEADS,HEADDIM: the q/k norm variant's layout (the default is Qwen3-8B's), timed\nat each shape's row count taken as tokens (those whose QKV buffer stays within 256 MiB)")
	overhead := flag.Bool("overhead", true, "also time what one call costs (Forward, Norm.Forward, Norm.Apply with and without\nRows.Residual, with a Rows literal and with Rows built ahead) with the active kernel, on\nthe shapes "+benchutil.Overhead)
	summary := flag.Bool("summary", true, "end with a summary: the kernel in use against the textbook loop and generic, a 1x4096\nrow's cost, bfloat16 against float32, whether another SIMD kernel beat the one dispatch\npicks by more than 5% at a shape of the table, and whether Workers: 2 helps")
	withPeers := flag.Bool("peers", false, "also time what users would write instead, side by side: the textbook loop (one accumulator,\na divide per element), vek, gonum and simd/archsimd (bench/peers, run from the\nrepository root); with -layernorm, the textbook LayerNorm loop and spago's LayerNorm")
	list := flag.Bool("list", false, "print the available kernels, best first, one per line, and exit")
	backward := flag.Bool("backward", false, "time Norm.Backward (with Inv and DW, the call of a training step) instead of the forward pass,\nagainst copy() of x and dy into two other buffers, and against the forward pass of the same kernel")
	workers := flag.Int("workers", 0, "call through a Norm with this Workers value (0: the package-level Forward, one goroutine),\nand give each row's time over the same call with one goroutine")
	layernorm := flag.Bool("layernorm", false, "time LayerNorm (a Norm with Center, Weight and Bias, BERT's eps 1e-12) instead of RMSNorm,\nand give each row's time over RMSNorm (a Norm with the same Weight) in the same call on the\nsame rows with the same kernel: what centering and the bias cost; with -backward, their\nbackward passes (LayerNorm's with Inv, Mean, DW and DB)")
	format := flag.String("format", "f32", "how the rows are stored: f32, bf16 (ForwardBF16) or f16 (ForwardF16); with a 16-bit format\neach row of the table also gives the time over Forward on the same rows in float32")
	flag.Parse()

	if *list {
		for _, k := range rmsnorm.Kernels() {
			fmt.Println(k)
		}
		return
	}
	c := config{kernels: rmsnorm.Kernels(), dur: *duration, format: *format, backward: *backward,
		layernorm: *layernorm, workers: *workers, peers: *withPeers, variants: *variants, overhead: *overhead, summary: *summary}
	if *kernelsFlag != "" {
		c.kernels = nil
		for _, k := range strings.Split(*kernelsFlag, ",") {
			if !slices.Contains(rmsnorm.Kernels(), k) {
				// SetKernel fails for k, changing nothing, and its error says whether k is a
				// kernel at all or one this machine cannot run.
				fatalf("-kernels: %v", rmsnorm.SetKernel(k))
			}
			if !slices.Contains(c.kernels, k) { // each kernel once
				c.kernels = append(c.kernels, k)
			}
		}
	}
	var err error
	if c.shapes, err = benchutil.ParseShapes(*shapesFlag); err != nil {
		fatalf("%v", err)
	}
	if c.qk, err = parseQK(*qkFlag); err != nil {
		fatalf("%v", err)
	}
	if !slices.Contains([]string{"f32", "bf16", "f16"}, c.format) {
		fatalf("-format %q: want f32, bf16 or f16", c.format)
	}
	if c.workers < 0 {
		fatalf("-workers %d: want 0 or more", c.workers)
	}
	if c.backward && c.format != "f32" {
		fatalf("-backward takes float32 rows (-format f32)")
	}
	if c.backward && c.peers {
		fatalf("-peers times the peers' forward passes: it does not go with -backward")
	}
	if c.peers && c.workers > 0 {
		fatalf("-peers times the peers' calls on one goroutine: it does not go with -workers")
	}
	if c.peers && c.format != "f32" {
		fatalf("-peers times float32 rows (the peers have no 16-bit forms): it takes -format f32")
	}
	if c.peers {
		if err := peersHere(); err != nil {
			fatalf("%v", err)
		}
	}
	if flag.NArg() > 0 {
		fatalf("unexpected argument %q: shapes and kernels are comma-separated lists (-shapes 1x128,2x256)", flag.Arg(0))
	}
	if c.dur <= 0 {
		fatalf("-duration %v: want a positive duration", c.dur)
	}

	// With -json the text still shows the progress, on stderr, and stdout holds only the JSON.
	var out io.Writer = os.Stdout
	if *jsonOut {
		out = os.Stderr
	}
	b := newBench(c, out)
	if err := b.run(); err != nil {
		fatalf("%v", err)
	}
	if *jsonOut {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(b.rep); err != nil {
			fatalf("%v", err)
		}
	}
}

func newBench(c config, out io.Writer) *bench {
	return &bench{config: c, out: out, rep: report{Machine: describeMachine(), Format: c.format, Backward: c.backward,
		LayerNorm: c.layernorm, Workers: c.workers}}
}

// run measures what b.config asks for, printing each line as soon as it is measured, and keeps
// everything it measured in b.rep.
func (b *bench) run() error {
	b.printMachine()
	b.printEstimate()
	start := time.Now()

	var peers *peersRunner
	if b.peers {
		b.printf("building bench/peers...\n")
		var err error
		if peers, err = buildPeers(); err != nil {
			return err
		}
		defer peers.close()
	}
	if err := b.table(peers); err != nil {
		return err
	}
	afterTable := len(b.spreads)
	// The table switched kernels; the rest times the one the package picked.
	if err := rmsnorm.SetKernel(b.rep.Machine.Kernel); err != nil {
		return err
	}
	if b.variants {
		b.residualVariants()
		b.mixedVariants()
		b.qkVariants()
		b.layerNormVariants()
	}
	if b.overhead {
		b.overheadSection()
	}
	if b.summary {
		b.summarySection() // it ends with the spread of the whole run
	} else {
		b.warnIfBusy(afterTable, "") // the table had its own
	}
	b.printf("\ndone in %.0f s\n", time.Since(start).Seconds())
	return nil
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "rmsnormbench: "+format+"\n", args...)
	os.Exit(2)
}
