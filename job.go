package rmsnorm

// weightMode is how the normalized value is scaled.
type weightMode uint8

const (
	weighted   weightMode = iota // y = (x*inv)*w
	offset                       // y = (x*inv)*(1+w), 1+w rounded to float32 first
	unweighted                   // y = x*inv
)

// job is one validated call: rows rows of d floats whose starts are stride floats apart in x, dst
// and res (when res is set).
type job struct {
	dst, x, w []float32
	res       []float32 // residual: h = x + res; res = h; normalize h
	inv       []float32 // when set, inv[r] = 1/rms of row r
	d, rows   int
	stride    int
	eps       float32
	mode      weightMode
}

// run executes the job with the active kernel. A kernel stops before a row that needs the float64
// path (see the package doc) and returns its index; that row is finished here and the kernel
// resumes after it.
func (j *job) run() { j.runWith(activeKernel()) }

// runWith executes the job with kernel k.
func (j *job) runWith(k kernelID) {
	for r := 0; r < j.rows; {
		r = j.runKernel(k, r)
		if r < j.rows {
			j.rowFloat64(r)
			r++
		}
	}
}

// runKernel runs rows [from, j.rows) with kernel k until one needs the float64 path; it returns
// that row's index or j.rows. In the residual forms the returned row already holds h in res, and
// nothing else of it has been written.
func (j *job) runKernel(k kernelID, from int) int {
	if k == kernelGeneric {
		return j.runGeneric(from)
	}
	return j.runAsm(k, from)
}
