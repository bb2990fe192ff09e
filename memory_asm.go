//go:build (amd64 || arm64) && gc && !purego && !noasm

package rmsnorm

import "github.com/gosimd/rmsnorm/internal/streamrule"

// streamBytes is the size of the rows a call reads and writes (x, dst when it is not x, the
// residual) from which kernels stream, as streamrule decides from cpuid: the last-level cache,
// half of it on Zen 3, four times the L2 on Sapphire Rapids and Emerald Rapids. Virtual machines
// often report no L3; elsewhere their L2 would then stream rows of a few MiB around an L3 that
// holds them, so the fallback is streamrule.Fallback instead.
var streamBytes, _ = streamrule.Bytes(streamrule.Host()) // a variable so that tests can force either kind of store

// pipeRows is whether streamed float32 rows (and, on AVX2, float16 rows) go through the kernels'
// pipe (flagPipe; see setMemoryFlags), as streamrule decides from cpuid: on Zen 3 (AVX2), and on
// Sapphire Rapids and Emerald Rapids (AVX-512). A variable so that tests can run the kernels both
// ways.
var pipeRows = streamrule.Pipe(streamrule.Host())

// pipeAbove is the row length above which RMSNorm's rows are piped where pipeRows holds:
// streamrule.PipeAbove. A variable so that tests can set it.
var pipeAbove = streamrule.PipeAbove(streamrule.Host())

// rowRules say which calls of float32 rows, d a multiple of 64, go through the kernels' one-row
// path one row at a time (flagRows; see forwardRows), as streamrule decides from cpuid: [1] for
// the avx512 kernel, [0] for the avx2 one (ruleOf). In cache: on Sapphire Rapids and Emerald
// Rapids every call of two rows or more of at most rowsMax; on Zen 5 the same with the avx512
// kernel for rows of up to 384 (its rule's Short), and with the avx2 one those of fewer than 4
// rows of at most rowsMax; on Zen 3 those of fewer than 4 or of 64 rows and more, and every call
// of rows longer than groupMax. Streamed out of place (with flagNT and flagPF; streamsOneByOne):
// on Zen 3 and Zen 5 rows of at most rowsMax, and on Zen 5 of up to 384 with the avx512 kernel.
// None elsewhere. Only forwardRows sets the flag (oneByOne, streamsOneByOne): in Forward,
// and in Norm.Forward and Apply by a Norm with a weight, neither UnitOffset, Center nor Bias, and
// Workers 0 or 1 or x under half a goroutine's share (Norm.oneGoroutine), Apply with rows back to
// back and no Inv, Mean or residual. Only the amd64
// functions with the one-row path read it. A variable so that tests can run the kernels both ways.
var rowRules = [2]streamrule.RowRule{
	streamrule.Rows(streamrule.Host(), false),
	streamrule.Rows(streamrule.Host(), true),
}

// avx512LayerGroups is the shortest row that the AVX-512 Layer functions take four at a time, up to
// longGroupMax in cache and groupMax from memory (flagGroups, set by setGroups), as
// streamrule.LayerGroups decides from cpuid: 128 on Zen 5, 0 (never) elsewhere. The AVX2 ones
// always do. A variable so that tests can run the kernels both ways.
var avx512LayerGroups = streamrule.LayerGroups(streamrule.Host())

// avx512LongGroups is whether the AVX-512 RMSNorm functions take rows longer than groupMax four
// at a time, up to longGroupMax in cache (flagGroups, set by setGroups): 16-bit rows (in, out or
// both: float32 rows into 16-bit ones too), and float32 ones where f32Groups takes them; as
// streamrule.LongGroups decides from cpuid: on Zen 5. A variable so that tests can run the
// kernels both ways.
var avx512LongGroups = streamrule.LongGroups(streamrule.Host())

// f32Groups says which calls of float32 rows longer than groupMax, up to longGroupMax, the
// AVX-512 RMSNorm function takes four at a time with avx512LongGroups (flagGroups, set by
// setGroups), by the row length and the bytes the call moves (x and dst together, x alone in
// place), as streamrule.GroupsF32 decides from cpuid: on Zen 5 every call within the L1d and
// rows of 832 and more within the L2, none elsewhere. A variable so that tests can run the
// kernels both ways.
var f32Groups = streamrule.GroupsF32(streamrule.Host())

// aheadRows is whether the backward kernels prefetch rows from memory 1 KiB ahead of their
// sum passes' loads (flagAhead), and the next row in the dx pass when dx goes out with
// non-temporal stores (flagNext) at every row length (see setBackwardMemoryFlags), as streamrule
// decides from cpuid: on Zen 3, Sapphire Rapids and Emerald Rapids. A variable so that tests can
// run the kernels both ways.
var aheadRows = streamrule.Ahead(streamrule.Host())

// nextRows are the row lengths, nextRows[0] <= d <= nextRows[1], for which the backward kernels'
// dx pass prefetches the next row where aheadRows does not hold (flagNext alone), as
// streamrule.Next decides from cpuid: 1024-6144 on Zen 5, none elsewhere. A variable so that
// tests can run the kernels both ways.
var nextRows = span(streamrule.Next(streamrule.Host()))

// nextResidual are the row lengths, nextResidual[0] <= d <= nextResidual[1], for which the scale
// pass of streamed float32 rows with a residual prefetches the next row of x beside that of h
// (flagNext on a forward job; see setMemoryFlags), as streamrule.NextResidual decides from cpuid:
// up to 4096 on Zen 5, none elsewhere; the rows hardwareRows leaves to the hardware lose it. A
// variable so that tests can run the kernels both ways.
var nextResidual = span(streamrule.NextResidual(streamrule.Host()))

// hardwareRows are the rules that say which streamed calls of float32 rows out of place (RMSNorm's)
// are left to the hardware prefetchers: flagNT without flagPF or flagNext (see setMemoryFlags,
// leftToHardware), as streamrule.Hardware decides from cpuid: [1] for the avx512 kernel, [0] for
// avx2 (hardwareOf); on Zen 5, rows of 8192 (avx512, into float32 or 16-bit rows) or 12288 (avx2,
// into float32) and longer whose x takes at most three quarters of the streaming threshold (the L3,
// or streamrule.Fallback), rows of 16384 (avx512, into float32 or 16-bit rows) or 12288 (avx2, into
// float32) and longer wherever x is (Long), and with a residual (avx512, into float32) rows of 4096
// and longer whose x takes at most the threshold; none elsewhere. A variable so that tests can run
// the kernels both ways.
var hardwareRows = [2]streamrule.HardwareRows{
	streamrule.Hardware(streamrule.Host(), false),
	streamrule.Hardware(streamrule.Host(), true),
}

// backPipe is whether streamed backward rows go through the AVX2 RMSNorm backward functions' pipe
// (flagPipe on a backward job; see setBackwardMemoryFlags), as streamrule decides from cpuid: on
// Zen 3, rows longer than backPipeAbove[0] out of place and than backPipeAbove[1] in place.
// Variables so that tests can run the kernels both ways.
var (
	backPipe      = streamrule.BackwardPipe(streamrule.Host())
	backPipeAbove = [2]int{streamrule.BackwardPipeAbove, streamrule.BackwardPipeInPlaceAbove}
)

// workerBytes is the least memory of rows (read and written) a goroutine of a call split by
// Norm.Workers moves, as streamrule decides from cpuid (see workers.go). A variable so that tests
// can split small calls.
var workerBytes = workerShares(streamrule.Workers(streamrule.Host()))

// f16Buffer are the row lengths, f16Buffer[0] <= d <= f16Buffer[1], for which a single float16
// row in cache takes the row function through a float32 copy of the row (callRowF16Buf; rowOf16),
// as streamrule.F16Buffer decides from cpuid: 2048-4096 on Zen 5, none elsewhere. A variable so
// that tests can run the kernels both ways.
var f16Buffer = span(streamrule.F16Buffer(streamrule.Host()))
