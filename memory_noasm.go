//go:build !(amd64 || arm64) || !gc || purego || noasm

package rmsnorm

import "github.com/gosimd/rmsnorm/internal/streamrule"

// streamBytes is streamrule.Fallback: this build has no cpuid to ask for the cache size. Only the
// generic kernel runs here; of the memory flags it reads flagPF (see touchRow), and flagNT is set
// but ignored.
var streamBytes = streamrule.Fallback // a variable so that tests can force either way

// pipeRows is false: flagPipe is for the assembly kernels, which this build does not have.
var pipeRows = false

// pipeAbove goes with pipeRows (see memory_asm.go).
var pipeAbove = 0

// rowRules send no call one row at a time: flagRows is for the assembly kernels, which this build
// does not have.
var rowRules [2]streamrule.RowRule

// avx512LayerGroups is 0, avx512LongGroups false and f32Groups takes nothing: flagGroups is for
// the assembly kernels, which this build does not have.
var (
	avx512LayerGroups = 0
	avx512LongGroups  = false
	f32Groups         streamrule.F32Groups
)

// aheadRows is false, nextRows and nextResidual empty, and hardwareRows take nothing: flagAhead
// and flagNext, and flagNT without flagPF, are for the assembly kernels, which this build does
// not have.
var (
	aheadRows    = false
	nextRows     = span(1, 0)
	nextResidual = span(1, 0)
	hardwareRows [2]streamrule.HardwareRows
	f16Buffer    = span(1, 0) // no row functions either
)

// backPipe is false: flagPipe is for the assembly kernels, which this build does not have.
var (
	backPipe      = false
	backPipeAbove = [2]int{streamrule.BackwardPipeAbove, streamrule.BackwardPipeInPlaceAbove}
)

// workerBytes is streamrule.Workers' rule for a CPU it knows nothing of (see memory_asm.go).
var workerBytes = workerShares(streamrule.Workers(streamrule.CPU{}))
