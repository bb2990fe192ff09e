package rmsnorm

import "github.com/gosimd/rmsnorm/internal/streamrule"

// How the kernels treat memory. Non-temporal stores write dst around the caches; they pay off
// only when the rows would not stay in the cache anyway. Below that the next operation (usually a
// matmul reading dst) wants dst in cache, so ordinary stores are used. Rows that come from memory
// are prefetched by the assembly kernels; the generic kernel reads float32 rows without a
// residual once in order first (touchRow). streamBytes, the threshold, is in memory_asm.go (from
// cpuid, by the rule of internal/streamrule, with the measurements behind it) and memory_noasm.go.
//
// Prefetching (the generator, asm/amd64/kernel.go: prefetch, pfOffset): PREFETCHT0, in the scale
// pass of a row, of the row after it (eight rows on for rows of at most 512 elements; on Zen 5 not
// for float32 rows of 8192 and longer out of place whose x stays in the L3, nor for those of 16384
// and longer (avx2: 12288, into float32 alone) wherever x is, which the hardware prefetchers serve
// better, nor, on avx512, for float32 rows of 4096 and longer with a residual, out of place,
// whose x is at most the streaming threshold: hardwareRows, streamrule.Hardware); the
// sum pass of float32 rows prefetches nothing (but on the paths of Zen 3 below), that of 16-bit
// rows two rows ahead. A float32 row of 4096, its weight and the next row are 48 KiB, Zen 5's L1d;
// the sum pass used to prefetch two rows ahead as well, and dropping that measured, Zen 5, Forward,
// benchstat of six interleaved runs: 16384x4096 -15% (avx512) and -26% (avx2), 2048x4096 -3% and
// -5%, 32768x128 and 1x4096 unchanged. On Zen 4 (32 KiB of L1d) fewer rows in flight can only leave
// more of the cache to the row being summed; it was not measured there. On Zen 3 the AVX2 kernel's
// pipe (flagPipe; AVX-512's on Sapphire Rapids and Emerald Rapids) sums the next row inside the
// scale pass of the row before, where it would otherwise prefetch it, so that memory is not idle
// while a row is summed from the cache (streamrule.Pipe has the measurements); the pipe prefetches
// that row 1 KiB ahead of its own loads (aheadBytes in the generator, with its measurements).
// LayerNorm's pipe sums the next row's elements for its mean, and its centered pass, which then
// reads that row from the cache, prefetches only the first 4 KiB of the row after (pipePrefetch in
// the generator). On Zen 3 and Zen 5, streamed float32 rows of 64 and 128 (out of place; on Zen 5
// with the avx512 kernel up to 384) go one at a time through the one-row path's streamed loop,
// whose sum pass prefetches 8 KiB ahead (rowsAheadBytes in the generator; forwardRows sets flagRows
// on them beside these flags: setStreamFlags, streamrule.Rows).

// setMemoryFlags picks how the kernels treat memory for the validated job:
//   - rows that fill the cache come from memory, so the rows ahead are prefetched while a row is
//     summed and scaled; out of place, dst also goes out with non-temporal stores (in place, the
//     rows are in cache already and ordinary stores write them back at no extra cost);
//   - rows far apart (a stride) defeat the hardware prefetchers, so they are prefetched too;
//   - on Zen 5, streamed float32 rows with a residual (out of place) of the lengths of
//     nextResidual also take flagNext: the scale pass of a row prefetches the next row of x
//     beside that of h (streamrule.NextResidual has the measurements), unless hardwareRows
//     takes them (below);
//   - on Zen 5, streamed float32 rows out of place, back to back (RMSNorm's, into float32, and on
//     avx512 into 16-bit rows too) that hardwareRows takes (long rows whose x stays in the L3,
//     and still longer ones wherever x is; on avx512, rows of 4096 and longer with
//     a residual, into float32, whose x is at most the threshold) take flagNT without flagPF or
//     flagNext: the scale pass leaves the next rows to the hardware prefetchers (leftToHardware;
//     streamrule.Hardware has the measurements);
//   - on Zen 3, streamed float32 rows (out of place) also take the AVX2 kernel's pipe (pipes):
//     into float32 rows, and into float16 ones (without RoundNormalized) when they are longer
//     than streamrule.PipeMinTo16; so do float16 rows into float16 ones (without
//     RoundNormalized); on Sapphire Rapids and Emerald Rapids the AVX-512 kernel's, float32 rows
//     into float32, RMSNorm's longer than pipeAbove.
//
// The generic kernel ignores flagNT, flagPipe and flagNext, and for flagPF reads a float32 row
// without a residual once in order before summing it (touchRow).
func (j *job) setMemoryFlags() {
	if j.stride != j.d {
		j.flags |= flagPF
	}
	if j.fromMemory() {
		j.flags |= flagPF
		if j.dst != j.x {
			j.flags |= flagNT
			if pipeRows && j.pipes() {
				j.flags |= flagPipe
			}
			if j.res != nil && j.format.in() == formatF32 && within(nextResidual, j.d) {
				j.flags |= flagNext
			}
			if j.leftToHardware() {
				j.flags &^= flagPF | flagNext
			}
		}
	}
}

// leftToHardware reports whether the streamed job j, out of place, leaves its rows to the hardware
// prefetchers (flagNT without flagPF or flagNext): RMSNorm's float32 rows, back to back (rows a
// stride apart keep flagPF: see setMemoryFlags), that its kernel's rule in hardwareRows takes by
// their length and the bytes of x, or by their length alone from the rule's Long: into float32,
// and into 16-bit rows where the rule says To16; with a residual, float32 rows into float32 by
// the rule's Residual bounds. The rule is the assembly kernels' (the functions
// that choose their non-temporal loops by flagPF); the generic kernel keeps flagPF for touchRow.
func (j *job) leftToHardware() bool {
	if j.format.in() != formatF32 || j.layer() || j.stride != j.d {
		return false
	}
	r := hardwareOf(kernelID(j.fn / numEntries))
	if j.res != nil {
		return j.format == formatF32 && r.TakesResidual(j.d, j.rows*j.d*4)
	}
	return (j.format == formatF32 || r.To16) && r.Takes(j.d, j.rows*j.d*4)
}

// hardwareOf returns kernel k's rule in hardwareRows: [1] for the avx512 kernel, [0] for avx2, and
// none for the others (generic; neon, whose rule would be empty anyway).
func hardwareOf(k kernelID) streamrule.HardwareRows {
	if !wide(k) && k != kernelAVX2 {
		return streamrule.HardwareRows{}
	}
	return hardwareRows[b2i(wide(k))]
}

// pipes reports whether the rows of a streamed job can go through the kernels' pipe (flagPipe,
// on the CPUs of streamrule.Pipe), whose loop has no tail and no residual: d a multiple of 64
// above groupMax (one row at a time), dst rows 32-byte aligned for the non-temporal stores (the
// AVX-512 functions pipe the rows whose dst is 64-byte aligned and take the others without it),
// no residual. The float32 functions have the pipe, LayerNorm's (for a Norm with Center) and
// RMSNorm's for rows longer than pipeAbove, and so do the AVX2 ApplyToF16 ones (without
// RoundNormalized) for rows longer than streamrule.PipeMinTo16 as well, and the AVX2 ApplyF16
// ones (float16 rows in and out, without RoundNormalized); the others (bfloat16 rows, AVX-512's
// 16-bit rows) ignore the flag.
func (j *job) pipes() bool {
	return j.res == nil && j.d%64 == 0 && j.d > groupMax && uintptr(j.dst)%32 == 0 &&
		uintptr(j.dstStride)*j.format.out().size()%32 == 0 &&
		(j.format != formatToF16 || j.d > streamrule.PipeMinTo16) &&
		(j.flags&flagCenter != 0 || j.d > pipeAbove)
}

// fromMemory reports whether the rows of the forward job j fill the cache (streamBytes): the
// kernels then treat them as coming from memory (setMemoryFlags, setGroups).
func (j *job) fromMemory() bool { return j.rowBytes()*uintptr(j.rows) >= uintptr(streamBytes) }

// rowBytes is the memory one row of a forward job moves: x, dst unless it is x, and the residual.
func (j *job) rowBytes() uintptr {
	in, out := j.format.in().size(), j.format.out().size()
	b := in // x
	if j.dst != j.x {
		b += out
	}
	if j.res != nil {
		b += in
	}
	return b * uintptr(j.d)
}

// setBackwardMemoryFlags is setMemoryFlags for a backward job: when x, dy and dx fill the cache,
// dx goes out with non-temporal stores, unless it is dy (in place, its lines are in cache
// already) or there is no DX (its scratch row stays in L1), and flagPF is set; on Zen 3 and on
// Sapphire Rapids and Emerald Rapids (aheadRows) also flagAhead and flagNext, with which the
// kernels' sum passes prefetch the rows they read 1 KiB ahead of their loads and their dx pass,
// when dx goes out with non-temporal stores, the next row (streamrule.Ahead has the
// measurements); on Zen 5 flagNext alone, for rows of 1024-6144 (nextRows; streamrule.Next has
// the measurements); and on Zen 3 (backPipe) flagPipe where backwardPipes holds (out of place, and
// in place): the dx loop of the AVX2 RMSNorm functions then forms the next row's sums too
// (streamrule.BackwardPipe).
//
// On a Zen 5 the next row's prefetch in the dx pass gains 4-19% on rows of 1536-6144 on avx512
// and 8-38% on avx2, and loses on rows of 128 (38-49%: each row costs as many prefetches as
// loads) and, with DW, on rows of 8192 and more; the sum passes' prefetches gain nothing there on
// top of it. On Zen 3 the two together measured 2-17% faster, and on Sapphire Rapids and Emerald
// Rapids 0-8% (avx512). The LayerNorm ones on amd64 read x twice from cache (its centered
// squares) before they first read dy: with flagPF that pass prefetches the row's dy, so that
// memory is not idle through it; 2048x4096 measured 5-20% faster on a Zen 5 (avx512 and avx2,
// ten interleaved runs). Their pass over x and dy, from the cache too, prefetches the next row's
// x: 8-18% faster again. NEON's do not prefetch.
func (j *job) setBackwardMemoryFlags() {
	if 3*uintptr(j.rows)*uintptr(j.d)*4 >= uintptr(streamBytes) {
		j.flags |= flagPF
		if j.dst != nil && j.dst != j.dy {
			j.flags |= flagNT
		}
		if aheadRows {
			j.flags |= flagAhead
		}
		if j.flags&flagNT != 0 && (aheadRows || within(nextRows, j.d)) {
			j.flags |= flagNext
		}
		if backPipe && j.backwardPipes() {
			j.flags |= flagPipe
		}
	}
}

// within reports whether lo <= d <= hi for r = [lo, hi], a range of row lengths of a rule
// (nextRows, nextResidual; empty when lo > hi).
func within(r [2]int, d int) bool { return r[0] <= d && d <= r[1] }

// span is [lo, hi], a rule's range of row lengths as within takes it.
func span(lo, hi int) [2]int { return [2]int{lo, hi} }

// backwardPipes reports whether the rows of a streamed backward job can go through the AVX2
// RMSNorm functions' pipe (flagPipe, on the CPUs of streamrule.BackwardPipe), whose loop has no
// head and no tail: d a multiple of 64, dx rows 32-byte aligned, neither Center nor DB (the Layer
// functions have no pipe), and either dx out with non-temporal stores (flagNT) or in place (DX is
// DY, ordinary stores), d above backPipeAbove's limit for each. The other functions ignore the
// flag.
func (j *job) backwardPipes() bool {
	if j.flags&flagCenter != 0 || j.db != nil || j.d%64 != 0 ||
		uintptr(j.dst)%32 != 0 || uintptr(j.dstStride)*4%32 != 0 {
		return false
	}
	switch {
	case j.flags&flagNT != 0:
		return j.d > backPipeAbove[0]
	case j.dst != nil && j.dst == j.dy:
		return j.d > backPipeAbove[1]
	}
	return false
}
