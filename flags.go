package rmsnorm

// Arguments the assembly kernels take besides the slices (asm/amd64/kernel.go and the arm64
// emitter read the same bits).
const (
	flagNT = 1 // non-temporal stores
	flagRD = 2 // rd = 1/d is exact: ss/d is computed as ss*rd
	flagPF = 4 // prefetch the next rows while scaling
)

// asmParams returns float32(d), 1/d when that is exact (d a power of two), and the flags.
func asmParams(j *job) (fd, rd float32, flags int) {
	fd = float32(j.d)
	if j.d&(j.d-1) == 0 {
		rd = 1 / fd
		flags |= flagRD
	}
	return fd, rd, flags | streamFlags(j)
}
