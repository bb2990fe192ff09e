package rmsnorm

import "unsafe"

// weightMode is how the normalized value is scaled.
type weightMode uint8

const (
	weighted   weightMode = iota // y = (x*inv)*w
	offset                       // y = (x*inv)*(1+w), 1+w rounded to float32 first
	unweighted                   // y = x*inv
)

// job is one validated call, laid out for the kernels: the assembly reads the fields
// asm/internal/spec.Job lists through go_asm.h by name, the generic kernel through the accessors
// below. A job lives on the stack of the call that validated it. Its fields leave no padding
// between them, so that init can write every byte and spare the forward calls the zeroing of the
// whole job first (see init).
type job struct {
	dst, x    unsafe.Pointer // row 0 of the output and of the input
	w         unsafe.Pointer // the weight, nil without one (the kernels take nil for Unweighted)
	d         int            // row length
	stride    int            // elements from one row's start to the next's, in x and res (and dy)
	dstStride int            // the same in dst: DstStride resolved (Stride when it is 0)
	eps       float32
	flags     uint32 // flagNT, flagPF, flagPipe, flagAhead, flagNext: how the kernels treat memory (setMemoryFlags, setBackwardMemoryFlags); flagRN; flagOffset; flagCenter; flagFuse; flagRows (forwardRows)
	fn        uint32 // the kernel function: kernelID*numEntries + v (callKernel)

	mode   weightMode // the weight form, for the generic kernel and the float64 path
	format format     // how dst, x and res are stored
	v      variant    // the kernel body: format, weight form, residual
	pad    uint8      // always 0: written with the other fields, so that no byte of a job is left out

	res unsafe.Pointer // row 0 of the residual (h = x + res; res = h; normalize h), or nil
	inv unsafe.Pointer // where 1/rms of row r goes (inv[r]), or nil (backward: read from it)

	// LayerNorm (the Layer variants; flagCenter says whether the rows are centered).
	bias unsafe.Pointer // the bias added after the weight (len d), or nil
	mean unsafe.Pointer // where the mean of row r goes (mean[r]), or nil (backward: read from it)

	// Backward only.
	dy  unsafe.Pointer // row 0 of the output gradient (dst holds dx)
	dw  unsafe.Pointer // the weight gradient (len d), or nil
	acc unsafe.Pointer // partial sums of the weight gradient: one row of d, or one per block of the call

	rows int // rows of the call (the kernels read it: the last row closes a gradient block)

	db   unsafe.Pointer // backward: the bias gradient (len d), or nil; summed like dw
	accB unsafe.Pointer // partial sums of the bias gradient, laid out as acc
}

// init writes every field of j, in their order. Called on a job declared just before (var j
// job) with nothing read from memory in between, it lets the compiler drop the zeroing of j,
// since the stores cover every byte. That matters on a short row's path: its stores wait behind
// those of the previous call's kernel (see applyRows). The compiler also drops a store of a
// constant zero among the first four after the zeroing, which would leave a hole, so the fields
// that are often nil (res, inv) come after four that never are constant.
func (j *job) init(dst, x, w unsafe.Pointer, d, stride, dstStride int, eps float32, flags, fn uint32,
	mode weightMode, f format, v variant, res, inv, bias, mean unsafe.Pointer, rows int) {
	j.dst, j.x, j.w, j.d, j.stride, j.dstStride = dst, x, w, d, stride, dstStride
	j.eps, j.flags, j.fn = eps, flags, fn
	j.mode, j.format, j.v, j.pad = mode, f, v, 0
	j.res, j.inv, j.bias, j.mean = res, inv, bias, mean
	j.dy, j.dw, j.acc, j.rows, j.db, j.accB = nil, nil, nil, rows, nil, nil
}

// layer reports whether j is a LayerNorm job, of a Layer variant: its rows centered
// (flagCenter), a bias added, or (backward) a bias gradient summed.
func (j *job) layer() bool { return j.flags&flagCenter != 0 || j.bias != nil || j.db != nil }

// rn reports whether x*inv is rounded to the 16-bit format before the weight (RoundNormalized,
// flagRN).
func (j *job) rn() bool { return j.flags&flagRN != 0 }

// row returns row r of the float32 rows starting at p (x, res or dy: rows Stride apart).
func (j *job) row(p unsafe.Pointer, r int) []float32 {
	return unsafe.Slice((*float32)(unsafe.Add(p, uintptr(r*j.stride)*4)), j.d)
}

// normalizedRow returns row r of the rows the job normalizes, in the format of x: x, or res (which
// holds h) in the residual forms; float32 rows in x32, 16-bit ones in x16 (the other nil). For the
// float64 paths.
func (j *job) normalizedRow(r int) (x32 []float32, x16 []uint16) {
	src := j.x
	if j.res != nil {
		src = j.res
	}
	if j.format.in() == formatF32 {
		return j.row(src, r), nil
	}
	return nil, j.row16(src, r)
}

// dstRow returns row r of dst as float32 (rows DstStride apart).
func (j *job) dstRow(r int) []float32 {
	return unsafe.Slice((*float32)(unsafe.Add(j.dst, uintptr(r*j.dstStride)*4)), j.d)
}

// dstRow16 returns row r of dst as 16-bit elements (rows DstStride apart).
func (j *job) dstRow16(r int) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Add(j.dst, uintptr(r*j.dstStride)*2)), j.d)
}

// weight returns the weight as a slice (nil without one).
func (j *job) weight() []float32 {
	if j.w == nil {
		return nil
	}
	return unsafe.Slice((*float32)(j.w), j.d)
}

// biasOf returns the bias as a slice (nil without one).
func (j *job) biasOf() []float32 {
	if j.bias == nil {
		return nil
	}
	return unsafe.Slice((*float32)(j.bias), j.d)
}

// setInv stores 1/rms of row r when the caller asked for it.
func (j *job) setInv(r int, inv float32) {
	if j.inv != nil {
		*(*float32)(unsafe.Add(j.inv, uintptr(r)*4)) = inv
	}
}

// setMean stores the mean of row r when the caller asked for it.
func (j *job) setMean(r int, m float32) {
	if j.mean != nil {
		*(*float32)(unsafe.Add(j.mean, uintptr(r)*4)) = m
	}
}

// elemAt returns element r of the float32 array at p (Inv or Mean, read by the backward pass).
func elemAt(p unsafe.Pointer, r int) float32 { return *(*float32)(unsafe.Add(p, uintptr(r)*4)) }

// kernel returns the kernel that j.fn selects.
func (j *job) kernel() kernelID { return kernelID(j.fn / numEntries) }

// run executes rows [0, rows) of the validated job with the function j.fn selects. What it needs
// after the kernel returns it reads from j (finish takes the kernel from j.fn), so forwardRows
// and applyRows, which write it out, keep nothing live across the call.
func (j *job) run() {
	if r := callKernel(j, 0, j.rows); r < j.rows {
		j.finish(r, j.rows)
	}
}
