// Command rmsnormbench shows what the rmsnorm package does on this machine: the CPU and its
// features, the kernel the package picked, and for every kernel and shape the time per row, the
// bandwidth and the ratio to Go's copy() of the same bytes measured in the same run. With the
// active kernel it then times the variants (fused residual add, q/k norm inside a QKV buffer) and
// the cost of the API per call (Forward, Norm.Apply) next to the kernel's own time.
//
//	go run ./cmd/rmsnormbench                     # every available kernel, the standard shapes
//	go run ./cmd/rmsnormbench -kernels avx2 -shapes 1x4096,32768x128 -duration 2s
//	go run ./cmd/rmsnormbench -json > bench.json  # machine-readable, for CI artifacts
//	go run ./cmd/rmsnormbench -list               # the available kernels, one per line
//	go run ./cmd/rmsnormbench -peers              # side by side with the textbook loop, vek, gonum, archsimd
//	go run ./cmd/rmsnormbench -variants=false -overhead=false  # the table of kernels and shapes only
//	go run ./cmd/rmsnormbench -backward           # Norm.Backward (with Inv and DW) instead of the forward pass
//	go run ./cmd/rmsnormbench -workers 4          # calls through a Norm with Workers: 4, against one goroutine
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/gosimd/rmsnorm"
	"github.com/gosimd/rmsnorm/internal/benchutil"
	"github.com/klauspost/cpuid/v2"
)

func main() {
	kernelsFlag := flag.String("kernels", "", "comma-separated kernels to measure (default: every available kernel)")
	shapesFlag := flag.String("shapes", benchutil.Standard, "comma-separated shapes, each ROWSxD")
	duration := flag.Duration("duration", 300*time.Millisecond, "measuring time of each thing timed (a kernel on a shape, a variant, either side of an overhead\nrow), split into rounds; the best round counts")
	jsonOut := flag.Bool("json", false, "print JSON instead of a table")
	variants := flag.Bool("variants", true, "also measure the fused residual add and strided q/k norm with the active kernel")
	overhead := flag.Bool("overhead", true, "also measure the cost of the API per call (Forward, Norm.Forward, Norm.Apply with and without\nRows.Residual, each with a Rows literal and with Rows built ahead)\nwith the active kernel, on the shapes "+benchutil.Overhead)
	withPeers := flag.Bool("peers", false, "also time what users would write instead, side by side: the textbook loop (one accumulator,\na divide per element), vek, gonum and simd/archsimd (bench/peers, run with go run from the\nrepository root)")
	list := flag.Bool("list", false, "print the available kernels, best first, one per line, and exit")
	backwardFlag := flag.Bool("backward", false, "time Norm.Backward (with Inv and DW, the call of a training step) instead of the forward pass,\nagainst copy() of x and dy into two other buffers, and against the forward pass of the same kernel")
	workersFlag := flag.Int("workers", 0, "call through a Norm with this Workers value (0: the package-level Forward, one goroutine),\nand give each row's time over the same call with one goroutine")
	formatFlag := flag.String("format", "f32", "how the rows are stored: f32, bf16 (ForwardBF16) or f16 (ForwardF16); with a 16-bit format\neach row of the table also gives the time over Forward on the same rows in float32")
	flag.Parse()

	if *list {
		for _, k := range rmsnorm.Kernels() {
			fmt.Println(k)
		}
		return
	}
	kernels := rmsnorm.Kernels()
	if *kernelsFlag != "" {
		kernels = strings.Split(*kernelsFlag, ",")
		for _, k := range kernels {
			if !slices.Contains(rmsnorm.Kernels(), k) {
				fatalf("kernel %q is not available here; available: %s", k, strings.Join(rmsnorm.Kernels(), ", "))
			}
		}
	}
	shapes, err := benchutil.ParseShapes(*shapesFlag)
	if err != nil {
		fatalf("%v", err)
	}
	forward16, ok := map[string]func(dst, x []uint16, w []float32, eps float32){
		"f32": nil, "bf16": rmsnorm.ForwardBF16, "f16": rmsnorm.ForwardF16}[*formatFlag]
	if !ok {
		fatalf("-format %q: want f32, bf16 or f16", *formatFlag)
	}

	if *backwardFlag && forward16 != nil {
		fatalf("-backward takes float32 rows (-format f32)")
	}

	var peerRows []benchutil.Result
	if *withPeers {
		peerRows, err = runPeers(*shapesFlag, *duration)
		if err != nil {
			fatalf("%v", err)
		}
	}

	rep := report{Machine: describeMachine(), Format: *formatFlag, Backward: *backwardFlag, Workers: *workersFlag}
	for _, s := range shapes {
		x, w := benchutil.Data(s)
		y := make([]float32, len(x))
		copy(y, x) // the output's pages exist before anything is timed
		var x16, y16 []uint16
		bytes := float64(8 * len(x)) // x read plus y written
		copyNs := benchutil.Measure(*duration, func() { copy(y, x) })
		if forward16 != nil {
			x16, y16 = make([]uint16, len(x)), make([]uint16, len(x))
			rmsnorm.Float32ToBF16(x16, x) // bfloat16 bits; as binary16 the same bits are values around 1 too
			if *formatFlag == "f16" {
				rmsnorm.Float32ToF16(x16, x)
			}
			copy(y16, x16)
			bytes /= 2
			copyNs = benchutil.Measure(*duration, func() { copy(y16, x16) })
		}
		rep.Results = append(rep.Results, benchutil.Result{Shape: s.String(), Kernel: "copy()", NsPerRow: copyNs / float64(s.Rows),
			GBps: bytes / copyNs, XCopy: 1})
		var dy, dx, inv, dw []float32
		if *backwardFlag {
			dy, dx, inv, dw = slices.Clone(y), slices.Clone(y), make([]float32, s.Rows), make([]float32, s.D)
			rmsnorm.Norm{Weight: w, Eps: 1e-6}.Apply(rmsnorm.Rows{Dst: dy, X: x, Inv: inv}) // dy: any values near 1
			bytes = float64(12 * len(x))                                                    // x and dy read, dx written
			copyNs = benchutil.Measure(*duration, func() { copy(y, x); copy(dx, dy) })
			rep.Results[len(rep.Results)-1].NsPerRow = copyNs / float64(s.Rows)
			rep.Results[len(rep.Results)-1].GBps = float64(16*len(x)) / copyNs
		}
		// call returns the timed call with Workers set to workers (0: the package-level functions).
		call := func(workers int) func() {
			n := rmsnorm.Norm{Weight: w, Eps: 1e-6, Workers: workers}
			switch {
			case *backwardFlag:
				return func() { n.Backward(rmsnorm.Grad{DX: dx, X: x, DY: dy, Inv: inv, DW: dw}) }
			case forward16 != nil && workers > 0:
				apply := map[string]func(rmsnorm.Rows16){"bf16": n.ApplyBF16, "f16": n.ApplyF16}[*formatFlag]
				return func() { apply(rmsnorm.Rows16{Dst: y16, X: x16}) }
			case forward16 != nil:
				return func() { forward16(y16, x16, w, 1e-6) }
			case workers > 0:
				return func() { n.Forward(y, x) }
			}
			return func() { rmsnorm.Forward(y, x, w, 1e-6) }
		}
		for _, k := range kernels {
			if err := rmsnorm.SetKernel(k); err != nil {
				fatalf("%v", err)
			}
			ns := benchutil.Measure(*duration, call(*workersFlag))
			res := benchutil.Result{Shape: s.String(), Kernel: k, NsPerRow: ns / float64(s.Rows), GBps: bytes / ns, XCopy: ns / copyNs}
			if forward16 != nil {
				res.XF32 = ns / benchutil.Measure(*duration, func() { rmsnorm.Forward(y, x, w, 1e-6) })
			}
			if *backwardFlag {
				n := rmsnorm.Norm{Weight: w, Eps: 1e-6, Workers: *workersFlag}
				res.XForward = ns / benchutil.Measure(*duration, func() { n.Apply(rmsnorm.Rows{Dst: y, X: x, Inv: inv}) })
			}
			if *workersFlag > 1 {
				res.XOneWorker = ns / benchutil.Measure(*duration, call(1))
			}
			rep.Results = append(rep.Results, res)
		}
		for _, p := range peerRows {
			if p.Shape == s.String() {
				p.Kernel = "peer:" + p.Kernel
				rep.Results = append(rep.Results, p)
			}
		}
	}
	if err := rmsnorm.SetKernel(rep.Machine.Kernel); err != nil {
		fatalf("%v", err)
	}
	if *variants {
		rep.Variants = measureVariants(*duration)
	}
	if *overhead {
		rep.Overhead = measureOverhead(*duration, rep.Machine.L2)
	}

	if *jsonOut {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fatalf("%v", err)
		}
		return
	}
	rep.print()
}

type machine struct {
	CPU       string   `json:"cpu"`
	Features  []string `json:"features"`
	GOOS      string   `json:"goos"`
	GOARCH    string   `json:"goarch"`
	GOAMD64   string   `json:"goamd64,omitempty"`
	GoVersion string   `json:"go_version"`
	Module    string   `json:"module_version"`
	Kernel    string   `json:"kernel"`
	Kernels   []string `json:"kernels"`
	Cores     int      `json:"cores"`
	L1D       int      `json:"l1d_bytes"`
	L2        int      `json:"l2_bytes"`
	L3        int      `json:"l3_bytes"`
}

type report struct {
	Machine  machine            `json:"machine"`
	Format   string             `json:"format"`   // how the rows of Results are stored: f32, bf16 or f16
	Backward bool               `json:"backward"` // Results time Norm.Backward
	Workers  int                `json:"workers"`  // Norm.Workers of the calls timed (0: package-level Forward)
	Results  []benchutil.Result `json:"results"`
	Variants []variant          `json:"variants,omitempty"`
	Overhead []overheadRow      `json:"overhead,omitempty"`
}

// variant is one measurement of the variants section: a way of doing a job and its time, with
// the time of the reference way of doing the same job.
type variant struct {
	Job      string  `json:"job"`
	How      string  `json:"how"`
	NsPerRow float64 `json:"ns_per_row"`
	GBps     float64 `json:"gb_per_s"`
	VsRef    float64 `json:"x_reference"`
	Ref      string  `json:"reference"`
}

// overheadRow is one line of the overhead section: an entry point called on a shape, next to the
// kernel's own time for the same rows, estimated from one call on a batch of rows of the same d.
type overheadRow struct {
	Shape     string  `json:"shape"`
	API       string  `json:"api"`
	NsPerCall float64 `json:"ns_per_call"`
	KernelNs  float64 `json:"kernel_ns"`    // per-row time of the same call on Batch, times the shape's rows
	Batch     string  `json:"kernel_batch"` // the batch KernelNs comes from, ROWSxD
	APINs     float64 `json:"api_ns"`       // NsPerCall - KernelNs: what the API costs per call
}

// relevantFeatures are the cpuid features the kernels depend on (dispatch reads AVX, AVX2, F16C,
// AVX512F, AVX512BW and ASIMD) or that explain their speed.
var relevantFeatures = []cpuid.FeatureID{
	cpuid.SSE2, cpuid.AVX, cpuid.AVX2, cpuid.FMA3, cpuid.F16C, cpuid.AVX512F, cpuid.AVX512VL, cpuid.AVX512BW,
	cpuid.AVX512DQ, cpuid.FP128, cpuid.FP256, cpuid.AVXSLOW, cpuid.ASIMD, cpuid.SVE, cpuid.SVE2,
}

func describeMachine() machine {
	m := machine{
		CPU:       strings.TrimSpace(cpuid.CPU.BrandName),
		GOOS:      runtime.GOOS,
		GOARCH:    runtime.GOARCH,
		GoVersion: runtime.Version(),
		Kernel:    rmsnorm.Kernel(),
		Kernels:   rmsnorm.Kernels(),
		Cores:     runtime.NumCPU(),
		L1D:       cpuid.CPU.Cache.L1D,
		L2:        cpuid.CPU.Cache.L2,
		L3:        cpuid.CPU.Cache.L3,
		Module:    "(devel)",
	}
	if m.CPU == "" {
		m.CPU = "unknown (" + runtime.GOARCH + ")"
	}
	for _, f := range relevantFeatures {
		if cpuid.CPU.Has(f) {
			m.Features = append(m.Features, f.String())
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "GOAMD64" {
				m.GOAMD64 = s.Value
			}
		}
		for _, dep := range bi.Deps {
			if dep.Path == "github.com/gosimd/rmsnorm" {
				m.Module = dep.Version
			}
		}
	}
	return m
}

func (r report) print() {
	m := r.Machine
	fmt.Printf("cpu:      %s (%d cores; %s)\n", m.CPU, m.Cores, caches(m))
	if m.L3 <= 0 && slices.ContainsFunc(m.Kernels, func(k string) bool { return k != "generic" }) {
		fmt.Println("          (with no L3 size, the assembly kernels stream calls whose rows, read and written, add up to 32 MiB or more)")
	}
	fmt.Printf("features: %s\n", strings.Join(m.Features, " "))
	goamd64 := ""
	if m.GOAMD64 != "" {
		goamd64 = " GOAMD64=" + m.GOAMD64
	}
	fmt.Printf("go:       %s %s/%s%s\n", m.GoVersion, m.GOOS, m.GOARCH, goamd64)
	fmt.Printf("kernel:   %s (available: %s)\n\n", m.Kernel, strings.Join(m.Kernels, ", "))
	wide := r.Format != "f32"
	if wide {
		fmt.Printf("rows stored as %s: ForwardBF16/ForwardF16, each against copy() of the same 16-bit bytes\n", r.Format)
	}
	if r.Backward {
		fmt.Println("Norm.Backward with Inv and DW (a training step's call), against copy() of x and dy into two other buffers")
	}
	if r.Workers > 0 {
		fmt.Printf("calls through a Norm with Workers: %d (one goroutine per 12 MiB of rows read and written, at most %d)\n", r.Workers, r.Workers)
	}
	fmt.Printf("%-12s %-14s %12s %9s %8s", "shape", "kernel", "ns/row", "GB/s", "x copy")
	if wide {
		fmt.Printf(" %8s", "x f32")
	}
	if r.Backward {
		fmt.Printf(" %8s", "x fwd")
	}
	if r.Workers > 1 {
		fmt.Printf(" %9s", "x 1 gor.")
	}
	fmt.Println()
	for _, res := range r.Results {
		fmt.Printf("%-12s %-14s %12.1f %9.2f %8.2f", res.Shape, res.Kernel, res.NsPerRow, res.GBps, res.XCopy)
		for _, c := range []struct {
			on    bool
			v     float64
			width int
		}{{wide, res.XF32, 8}, {r.Backward, res.XForward, 8}, {r.Workers > 1, res.XOneWorker, 9}} {
			if c.on && c.v > 0 {
				fmt.Printf(" %*.2f", c.width, c.v)
			} else if c.on {
				fmt.Printf(" %*s", c.width, "")
			}
		}
		fmt.Println()
	}
	if r.Backward {
		fmt.Println("\nGB/s counts x and dy read plus dx written; x copy is the time over copy() of x and dy (lower is better).")
		fmt.Println("x fwd is the time over Norm.Apply on the same rows (with Inv) and the same kernel.")
	} else {
		fmt.Println("\nGB/s counts x read plus y written; x copy is the time over copy() of the same bytes (lower is better).")
	}
	if wide {
		fmt.Println("x f32 is the time over Forward on the same rows in float32, with the same kernel (lower is better).")
	}
	if r.Workers > 1 {
		fmt.Println("x 1 gor. is the time over the same call with Workers: 1 (below 1 the split pays).")
	}
	if slices.ContainsFunc(r.Results, func(res benchutil.Result) bool { return strings.HasPrefix(res.Kernel, "peer:") }) {
		fmt.Println("peer: rows come from bench/peers, each against copy() timed in its own process.")
	}
	if len(r.Variants) > 0 {
		fmt.Printf("\nvariants, kernel %s:\n", m.Kernel)
		fmt.Printf("%-36s %-38s %10s %9s  %s\n", "job", "how", "ns/row", "GB/s", "time vs reference")
		for _, v := range r.Variants {
			fmt.Printf("%-36s %-38s %10.1f %9.2f  %.2f x %s\n", v.Job, v.How, v.NsPerRow, v.GBps, v.VsRef, v.Ref)
		}
		fmt.Println("\n" + copyQNote)
	}
	if len(r.Overhead) > 0 {
		fmt.Printf("\ncost of the API per call, kernel %s (ns per call):\n", m.Kernel)
		fmt.Printf("%-10s %-30s %10s %10s %10s   %s\n", "shape", "call", "ns/call", "kernel", "API", "batch")
		for _, o := range r.Overhead {
			fmt.Printf("%-10s %-30s %10.1f %10.1f %10.1f   %s\n", o.Shape, o.API, o.NsPerCall, o.KernelNs, o.APINs, o.Batch)
		}
		fmt.Println("\nns/call: the rows of the batch (last column; x and y in L2 if they fit, where the table above has single rows")
		fmt.Println("         in L1) normalized with one call per piece of the shape's size.")
		fmt.Println("kernel:  one call on the whole batch, per row, times the shape's rows: about the kernel alone, as that call's")
		fmt.Println("         own cost is spread over all the batch's rows.")
		fmt.Println("API:     ns/call - kernel, what a call costs on top of the kernel (on long rows, within the kernel's noise).")
		fmt.Println("reused:  each piece's Rows built before the timing and passed again on every call. A Rows literal built")
		fmt.Println("         right before the call is copied into the call's arguments with loads wider than the stores that")
		fmt.Println("         built it; the CPU cannot forward those, so the call waits for every earlier store, the previous")
		fmt.Println("         call's rows included, to reach the cache. The difference between the two rows is that wait.")
	}
}

// caches describes the cache sizes cpuid reports, saying so for the ones it does not.
func caches(m machine) string {
	var known, missing []string
	for _, c := range []struct {
		name  string
		bytes int
	}{{"L1d", m.L1D}, {"L2", m.L2}, {"L3", m.L3}} {
		switch {
		case c.bytes <= 0:
			missing = append(missing, c.name)
		case c.bytes%(1<<20) == 0:
			known = append(known, fmt.Sprintf("%s %d MiB", c.name, c.bytes>>20))
		default:
			known = append(known, fmt.Sprintf("%s %d KiB", c.name, c.bytes>>10))
		}
	}
	if len(missing) > 0 {
		known = append(known, strings.Join(missing, ", ")+" not reported by cpuid")
	}
	return strings.Join(known, ", ")
}

// measureVariants times the fused residual add against a separate add and Forward, and q/k
// norm on heads inside a fused QKV buffer against the same rows stored back to back.
func measureVariants(dur time.Duration) []variant {
	var out []variant
	for _, s := range []benchutil.Shape{{Rows: 1, D: 4096}, {Rows: 2048, D: 4096}} {
		x, w := benchutil.Data(s)
		res := append([]float32(nil), x...)
		y := make([]float32, len(x))
		n := rmsnorm.Norm{Weight: w, Eps: 1e-6}
		bytes := float64(16 * len(x)) // x, res read; res, y written
		sep := benchutil.Measure(dur, func() {
			for i, v := range x {
				res[i] += v
			}
			rmsnorm.Forward(y, res, w, 1e-6)
		})
		fused := benchutil.Measure(dur, func() { n.Apply(rmsnorm.Rows{Dst: y, X: x, Residual: res}) })
		job := "residual add + norm " + s.String()
		out = append(out,
			variant{job, "separate add loop, then Forward", sep / float64(s.Rows), bytes / sep, 1, "separate"},
			variant{job, "Rows.Residual (fused)", fused / float64(s.Rows), bytes / fused, fused / sep, "separate"})
	}

	// 2048 tokens x 16 q heads of 128 in a QKV buffer of 16 q, 8 k and 8 v heads per token.
	const tokens, heads, headDim, width = 2048, 16, 128, 32 * 128
	qkv, w := benchutil.Data(benchutil.Shape{Rows: tokens, D: width})
	n := rmsnorm.Norm{Weight: w[:headDim], Eps: 1e-6}
	rows := float64(tokens * heads)
	bytes := float64(8 * tokens * heads * headDim)
	flat := make([]float32, tokens*heads*headDim)
	copy(flat, qkv)
	contig := benchutil.Measure(dur, func() { n.Forward(flat, flat) })
	strided := benchutil.Measure(dur, func() {
		for h := 0; h < heads; h++ {
			q := qkv[h*headDim:]
			n.Apply(rmsnorm.Rows{Dst: q, X: q, N: tokens, Stride: width})
		}
	})
	perToken := benchutil.Measure(dur, func() {
		for t := 0; t < tokens; t++ {
			q := qkv[t*width : t*width+heads*headDim]
			n.Forward(q, q)
		}
	})
	dst := make([]float32, len(qkv))
	copyQ := benchutil.Measure(dur, func() {
		for t := 0; t < tokens; t++ {
			copy(dst[t*width:t*width+heads*headDim], qkv[t*width:t*width+heads*headDim])
		}
	})
	job := "q norm 32768x128 in place"
	out = append(out,
		variant{job, "rows back to back (one call)", contig / rows, bytes / contig, 1, "back to back"},
		variant{job, "QKV heads, Stride (call per head)", strided / rows, bytes / strided, strided / contig, "back to back"},
		variant{job, "QKV heads, call per token", perToken / rows, bytes / perToken, perToken / contig, "back to back"},
		variant{job, "copy() of the same q regions, per token", copyQ / rows, bytes / copyQ, copyQ / contig, "back to back"})
	return out
}

// copyQNote explains the last row of the variants (16 q heads: heads in measureVariants).
const copyQNote = "copy() of the same q regions: the 16 q heads of each token's QKV row copied, token by token, to the same place\n" +
	"in another buffer: what the memory system gives for that layout, without arithmetic."

// The entry points the overhead section times, as a user calls them.
// The Rows of the "reused" rows are built before the timing, once per piece, as a caller that keeps
// them (per layer, say) would: a Rows literal built right before the call costs more (see the
// notes under the section).
var overheadAPIs = []string{"rmsnorm.Forward", "Norm.Forward", "Norm.Apply", "Norm.Apply, reused Rows",
	"Norm.Apply, Rows.Residual", "Norm.Apply, reused, Residual"}

// overheadBatch is the batch of rows of length d that the overhead of a shape of rows x d is
// measured on: x and y fill at most half of the L2 cache (256 KiB if cpuid does not say), with 16
// to 4096 rows, a multiple of rows.
func overheadBatch(rows, d, l2 int) benchutil.Shape {
	if l2 <= 0 {
		l2 = 256 << 10
	}
	n := min(max(l2/2/(8*d), 16), 4096)
	return benchutil.Shape{Rows: max(n/rows, 1) * rows, D: d}
}

// overheadCalls returns api called on the whole batch in one call, and on the same rows in pieces
// of rows rows, one call per piece.
func overheadCalls(api string, batch benchutil.Shape, rows int) (whole, pieces func()) {
	x, w := benchutil.Data(batch)
	y := make([]float32, len(x))
	res := append([]float32(nil), x...)
	n := rmsnorm.Norm{Weight: w, Eps: 1e-6}
	per := rows * batch.D
	switch api {
	case "rmsnorm.Forward":
		return func() { rmsnorm.Forward(y, x, w, 1e-6) }, func() {
			for i := 0; i < len(x); i += per {
				rmsnorm.Forward(y[i:i+per], x[i:i+per], w, 1e-6)
			}
		}
	case "Norm.Forward":
		return func() { n.Forward(y, x) }, func() {
			for i := 0; i < len(x); i += per {
				n.Forward(y[i:i+per], x[i:i+per])
			}
		}
	case "Norm.Apply":
		return func() { n.Apply(rmsnorm.Rows{Dst: y, X: x}) }, func() {
			for i := 0; i < len(x); i += per {
				n.Apply(rmsnorm.Rows{Dst: y[i : i+per], X: x[i : i+per]})
			}
		}
	case "Norm.Apply, Rows.Residual":
		return func() { n.Apply(rmsnorm.Rows{Dst: y, X: x, Residual: res}) }, func() {
			for i := 0; i < len(x); i += per {
				n.Apply(rmsnorm.Rows{Dst: y[i : i+per], X: x[i : i+per], Residual: res[i : i+per]})
			}
		}
	case "Norm.Apply, reused Rows", "Norm.Apply, reused, Residual":
		all := rmsnorm.Rows{Dst: y, X: x}
		var rs []rmsnorm.Rows
		for i := 0; i < len(x); i += per {
			rs = append(rs, rmsnorm.Rows{Dst: y[i : i+per], X: x[i : i+per]})
		}
		if api == "Norm.Apply, reused, Residual" {
			all.Residual = res
			for p := range rs {
				rs[p].Residual = res[p*per : (p+1)*per]
			}
		}
		return func() { n.Apply(all) }, func() {
			for _, r := range rs {
				n.Apply(r)
			}
		}
	}
	panic("unknown api " + api)
}

// measureOverhead times each entry point on the shapes of benchutil.Overhead against the kernel's
// own time for the same rows. Both come from one batch of rows of the same length, in cache: one
// call on the whole batch, whose time per row approximates the kernel's alone because the per-call
// cost is spread over all its rows, and one call per shape-sized piece of it, which pays the
// per-call cost once per piece. Both read and write the same memory, so the difference is the
// API's cost and not that of a cache level.
func measureOverhead(dur time.Duration, l2 int) []overheadRow {
	const turns = 3
	var out []overheadRow
	for _, s := range benchutil.Must(benchutil.Overhead) {
		batch := overheadBatch(s.Rows, s.D, l2)
		for _, api := range overheadAPIs {
			whole, pieces := overheadCalls(api, batch, s.Rows)
			// In turns, so that both see the same state of the machine; the best of each counts.
			var nsWhole, nsPieces float64
			for turn := range turns {
				w, p := benchutil.Measure(dur/turns, whole), benchutil.Measure(dur/turns, pieces)
				if turn == 0 || w < nsWhole {
					nsWhole = w
				}
				if turn == 0 || p < nsPieces {
					nsPieces = p
				}
			}
			kernel := nsWhole / float64(batch.Rows) * float64(s.Rows)
			call := nsPieces / float64(batch.Rows/s.Rows)
			out = append(out, overheadRow{Shape: s.String(), API: api, NsPerCall: call, KernelNs: kernel,
				Batch: batch.String(), APINs: call - kernel})
		}
	}
	return out
}

// runPeers times the peers (bench/peers) in a process of their own, since their dependencies are
// kept out of this module; on amd64 it builds them with GOEXPERIMENT=simd for the archsimd peer.
func runPeers(shapes string, dur time.Duration) ([]benchutil.Result, error) {
	if _, err := os.Stat("bench/peers/go.mod"); err != nil {
		return nil, fmt.Errorf("-peers needs bench/peers: run from the root of the rmsnorm repository")
	}
	cmd := exec.Command("go", "run", "-C", "bench/peers", "./cmd/peersbench", "-shapes", shapes, "-duration", dur.String())
	cmd.Stderr = os.Stderr
	cmd.Env = os.Environ()
	if runtime.GOARCH == "amd64" {
		cmd.Env = append(cmd.Env, "GOEXPERIMENT=simd")
	}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("bench/peers: %v", err)
	}
	var rows []benchutil.Result
	if err := json.Unmarshal(out, &rows); err != nil {
		return nil, fmt.Errorf("bench/peers output: %v", err)
	}
	return rows, nil
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "rmsnormbench: "+format+"\n", args...)
	os.Exit(2)
}
