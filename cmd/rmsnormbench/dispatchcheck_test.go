package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gosimd/rmsnorm/internal/benchutil"
)

// result is a line of the table with the same time in its best and median rounds, unless
// median is given.
func result(shape, kernel string, ns float64, median ...float64) benchutil.Result {
	r := benchutil.Result{Shape: shape, Kernel: kernel, NsPerRow: ns, NsPerRowMedian: ns}
	if len(median) > 0 {
		r.NsPerRowMedian = median[0]
	}
	return r
}

func TestDispatchCheck(t *testing.T) {
	three := machine{Kernels: []string{"avx512", "avx2", "generic"}}
	table := []benchutil.Result{
		result("1x4096", "copy()", 10),
		result("1x4096", "avx512", 100),
		result("1x4096", "avx2", 96), // 4% faster: within the margin
		result("1x4096", "generic", 50),
		result("1x4096", "peer:textbook", 5),
		result("2048x4096", "copy()", 10),
		result("2048x4096", "avx512", 100, 110),
		result("2048x4096", "avx2", 90, 99),
		result("2048x4096", "generic", 500),
		result("32768x128", "avx512", 20),
		result("32768x128", "avx2", 21),
	}
	for _, c := range []struct {
		name     string
		m        machine
		results  []benchutil.Result
		gaps     []dispatchGap
		compared bool
		says     string // in the lines
	}{
		{"one gap", three, table,
			[]dispatchGap{{Shape: "2048x4096", Kernel: "avx2", X: 0.9, XMed: 0.9, Picked: "avx512"}}, true,
			"2048x4096: avx2 took 0.90x the time (medians 0.90x)"},
		{"within the margin everywhere", three, table[:5], nil, true, "was the fastest SIMD kernel at every shape"},
		{"4.9% faster is within", three, []benchutil.Result{result("1x64", "avx512", 100), result("1x64", "avx2", 95.3)},
			nil, true, "within 5%"},
		{"table of one SIMD kernel", three, []benchutil.Result{result("1x64", "avx512", 1), result("1x64", "generic", 1)},
			nil, false, "not checked: the table timed avx512 beside no other SIMD kernel"},
		{"dispatched kernel not in the table", three, []benchutil.Result{result("1x64", "avx2", 1), result("1x64", "generic", 1)},
			nil, false, "not checked: the table did not time avx512, the kernel dispatch picks here"},
		{"one SIMD kernel on the CPU", machine{Kernels: []string{"avx2", "generic"}}, table, nil, false,
			"avx2 is the only SIMD kernel"},
	} {
		t.Run(c.name, func(t *testing.T) {
			gaps, compared := dispatchCheck(c.m, c.results)
			for i := range gaps { // the ratios to two decimals, as printed
				gaps[i].X = float64(int(gaps[i].X*100+0.5)) / 100
				gaps[i].XMed = float64(int(gaps[i].XMed*100+0.5)) / 100
			}
			if !reflect.DeepEqual(gaps, c.gaps) || compared != c.compared {
				t.Errorf("dispatchCheck = %+v, %v; want %+v, %v", gaps, compared, c.gaps, c.compared)
			}
			text := strings.Join(dispatchLines(c.m, c.results, gaps, compared, ""), "\n")
			if !strings.Contains(text, c.says) {
				t.Errorf("the lines do not say %q:\n%s", c.says, text)
			}
			if len(c.gaps) > 0 && !strings.Contains(text, "RMSNORM_KERNEL="+c.gaps[0].Kernel) {
				t.Errorf("the lines do not name the faster kernel's override:\n%s", text)
			}
		})
	}
	if lines := dispatchLines(machine{Kernels: []string{"generic"}}, nil, nil, false, ""); lines != nil {
		t.Errorf("generic alone: %q, want no line", lines)
	}
}

// Of two kernels faster than the dispatched one on a shape, the check names the faster.
func TestDispatchCheckNamesTheFastest(t *testing.T) {
	m := machine{Kernels: []string{"a", "b", "c", "generic"}}
	gaps, _ := dispatchCheck(m, []benchutil.Result{result("s", "a", 100), result("s", "b", 90), result("s", "c", 80)})
	if len(gaps) != 1 || gaps[0].Kernel != "c" {
		t.Errorf("gaps = %+v, want one naming c", gaps)
	}
	// Gaps to two kernels, at two shapes: the override names both.
	gaps, _ = dispatchCheck(m, []benchutil.Result{result("s", "a", 100), result("s", "b", 90), result("t", "a", 100), result("t", "c", 90)})
	text := strings.Join(dispatchLines(m, nil, gaps, true, ""), "\n")
	if !strings.Contains(text, "RMSNORM_KERNEL=b or RMSNORM_KERNEL=c picks one of them") {
		t.Errorf("two faster kernels: the lines do not offer both:\n%s", text)
	}
}

// The dispatch lines name the table's call unless it is the plain float32 Forward, so that a gap
// in a -backward, -layernorm, -workers or 16-bit table is not read as one of ordinary calls.
func TestDispatchLinesNameTheCall(t *testing.T) {
	for _, c := range []struct {
		cfg  config
		want string
	}{
		{config{format: "f32"}, ""},
		{config{format: "f32", backward: true}, "Norm.Backward"},
		{config{format: "f32", backward: true, layernorm: true, workers: 2}, "Norm.Backward, LayerNorm, Workers: 2"},
		{config{format: "bf16"}, "ForwardBF16"},
		{config{format: "f16", workers: 3}, "Norm.ApplyF16, Workers: 3"},
		{config{format: "f32", layernorm: true}, "Norm.Forward, LayerNorm"},
	} {
		b := &bench{config: c.cfg}
		if got := b.tableCalls(); got != c.want {
			t.Errorf("%+v: tableCalls = %q, want %q", c.cfg, got, c.want)
		}
	}
	m := machine{Kernel: "a", Kernels: []string{"a", "b", "generic"}}
	gaps, compared := dispatchCheck(m, []benchutil.Result{result("s", "a", 100), result("s", "b", 90)})
	text := strings.Join(dispatchLines(m, nil, gaps, compared, "Norm.Backward"), "\n")
	if !strings.Contains(text, "at shapes of the table (Norm.Backward) another SIMD kernel") {
		t.Errorf("the lines do not name the call:\n%s", text)
	}
	text = strings.Join(dispatchLines(m, nil, nil, true, "ForwardBF16"), "\n")
	if !strings.Contains(text, "every shape of the table (ForwardBF16)") {
		t.Errorf("the lines do not name the call:\n%s", text)
	}
}
