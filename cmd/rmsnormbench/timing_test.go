package main

import (
	"io"
	"testing"
	"time"

	"github.com/gosimd/rmsnorm"
	"github.com/gosimd/rmsnorm/internal/benchutil"
)

// The estimate printed at the start counts the measurements of each section; a section that
// times more or fewer calls than its count says makes the estimate wrong. Each case runs the
// command with a tiny duration on small shapes and compares.
func TestMeasurementsCountsEveryMeasurement(t *testing.T) {
	all := rmsnorm.Kernels()
	qwen := qkLayout{32, 8, 128}
	// 1x64 and 1x32 give one token count; 16384 tokens of Qwen3-8B's QKV rows exceed maxQKVBytes.
	shapes := benchutil.Must("1x64,1x32,4x64,16384x1")
	for name, c := range map[string]config{
		"everything":         {kernels: all, format: "f32", variants: true, overhead: true, summary: true, qk: qwen},
		"bf16, summary only": {kernels: all, format: "bf16", summary: true, qk: qwen},
		"backward, workers":  {kernels: all, format: "f32", backward: true, workers: 2, variants: true, qk: qwen},
		"f16, workers":       {kernels: []string{"generic"}, format: "f16", workers: 3, variants: true, qk: qkLayout{2, 1, 16}},
		"no summary":         {kernels: all, format: "f32", workers: 1, variants: true, overhead: true, qk: qwen},
		"layernorm":          {kernels: all, format: "f32", layernorm: true, variants: true, summary: true, qk: qwen},
		"layernorm, bf16, workers": {kernels: all, format: "bf16", layernorm: true, workers: 2, summary: true,
			qk: qwen},
	} {
		t.Run(name, func(t *testing.T) {
			defer rmsnorm.SetKernel(rmsnorm.Kernel())
			c.shapes, c.dur = shapes, time.Microsecond
			b := newBench(c, io.Discard)
			want, _ := c.measurements(rmsnorm.Kernel())
			if err := b.run(); err != nil {
				t.Fatal(err)
			}
			if got := len(b.spreads); got != want {
				t.Errorf("the run took %d measurements; the estimate counts %d", got, want)
			}
		})
	}
}

// The summary says slower, not "0.80x faster", when the kernel took longer.
func TestFaster(t *testing.T) {
	for r, want := range map[float64]string{32: "32x faster", 1.5: "1.50x faster", 1: "1.00x faster", 0.8: "1.25x slower"} {
		if got := faster(r); got != want {
			t.Errorf("faster(%v) = %q, want %q", r, got, want)
		}
	}
}
