package main

import (
	"fmt"

	"github.com/gosimd/rmsnorm/internal/benchutil"
)

// report is everything a run measured, as -json prints it.
type report struct {
	Machine  machine `json:"machine"`
	Format   string  `json:"format"`   // how the rows of Results are stored: f32, bf16 or f16
	Backward bool    `json:"backward"` // Results time Norm.Backward
	// LayerNorm says that Results time LayerNorm (a Norm with Center, Weight and Bias), each with
	// its time over RMSNorm's (XRMSNorm).
	LayerNorm bool               `json:"layernorm"`
	Workers   int                `json:"workers"` // Norm.Workers of the calls timed (0: package-level Forward)
	Results   []benchutil.Result `json:"results"`
	Variants  []variant          `json:"variants,omitempty"`
	Overhead  []overheadRow      `json:"overhead,omitempty"`
	Summary   *summary           `json:"summary,omitempty"`
}

// variant is one measurement of the variants sections: a way of doing a job and its time per
// unit (a row, or a token for q/k norm), with the time of the reference way of doing the same job.
type variant struct {
	Job      string  `json:"job"`
	At       string  `json:"at"` // the shape, ROWSxD, or for q/k norm the token count
	How      string  `json:"how"`
	Per      string  `json:"per"`       // the unit of Ns: "row" or "token"
	Ns       float64 `json:"ns"`        // of the best round
	NsMedian float64 `json:"ns_median"` // of the median round
	GBps     float64 `json:"gb_per_s"`
	VsRef    float64 `json:"x_reference"`
	Ref      string  `json:"reference"`
}

// overheadRow is one line of the overhead section: what a call of an entry point on a shape
// costs, with the kernel's own share of it (the same rows' share of one call on a large batch).
type overheadRow struct {
	Shape           string  `json:"shape"`
	API             string  `json:"api"`
	NsPerCall       float64 `json:"ns_per_call"`        // of the best round
	NsPerCallMedian float64 `json:"ns_per_call_median"` // of the median round
	KernelNs        float64 `json:"kernel_ns"`          // the kernel alone, for the same rows
	Batch           string  `json:"kernel_batch"`       // the batch, ROWSxD, the calls are pieces of
}

// minMedian formats a time of the best and of the median round as one column, 21 wide.
func minMedian(min, median float64) string {
	return fmt.Sprintf("%9.1f / %9.1f", min, median)
}

// minMedianHead is the head of a minMedian column.
func minMedianHead(unit string) string { return fmt.Sprintf("%21s", unit+" (min / median)") }

// times formats a ratio: two decimals below 10, none above.
func times(r float64) string {
	if r >= 10 {
		return fmt.Sprintf("%.0fx", r)
	}
	return fmt.Sprintf("%.2fx", r)
}
