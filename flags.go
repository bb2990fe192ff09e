package rmsnorm

import (
	"math"
	"math/bits"
)

// Arguments the assembly kernels take (asm/amd64/kernel.go and the arm64
// emitter read the same bits).
const (
	flagNT  = 1 // non-temporal stores
	flagRD  = 2 // rd = 1/d is exact: ss/d is computed as ss*rd
	flagPF  = 4 // prefetch the next rows while scaling
	flagNTA = 8 // prefetch them non-temporally (a batch larger than the cache)
)

// asmParams returns float32(d), 1/d when that is exact (d a power of two), and the flags.
func asmParams(j *job) (fd, rd float32, flags int) {
	fd = float32(j.d)
	if j.d&(j.d-1) == 0 {
		// 2^-k built from its exponent bits: a division would cost more than the rest of a short
		// call's setup.
		rd = math.Float32frombits(uint32(127-bits.TrailingZeros(uint(j.d))) << 23)
		flags |= flagRD
	}
	return fd, rd, flags | streamFlags(j)
}

// asmArgs returns the pointers the assembly kernels take for rows [from, j.rows), and the number
// of rows.
func (j *job) asmArgs(from int) (dst, x, w, res, inv *float32, n int) {
	o := from * j.stride
	dst, x = &j.dst[o], &j.x[o]
	if j.mode != unweighted {
		w = &j.w[0]
	}
	if j.res != nil {
		res = &j.res[o]
	}
	if j.inv != nil {
		inv = &j.inv[from]
	}
	return dst, x, w, res, inv, j.rows - from
}
