package main

import (
	"github.com/gosimd/rmsnorm/asm/internal/spec"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The scale pass of the avx512bf16 functions (bfloat16 output; RMSNorm's and LayerNorm's)
// classifies every pair of vectors before VCVTNE2PS2BF16 narrows it (packCvt), so that subnormal
// and NaN lanes take the exact integer rounding. On a Zen 5 that classification is a fifth of
// ForwardBF16's time at 1x4096: VFPCLASSPS runs on the pipes that multiply, which bound the loop
// (bf16cvt.go).
//
// Rows whose output does not overwrite what the scale pass reads (x, or h in Residual with a
// residual) take loops without it. Each pair of vectors goes through one VMAXPS instead, whose
// result is not used: under the MXCSR Go sets (every exception masked, DAZ and FTZ clear, round to
// nearest; the kernels assume the last three as Go code does, and clearFlags checks the first for
// the two exceptions below), VMAXPS sets MXCSR's invalid-operation flag (IE) when a lane is a NaN,
// quiet or signalling, and its denormal flag (DE) when a lane is subnormal (Intel's SDM and AMD's
// manual both list a quiet NaN operand as invalid for MAXPS). VMAXPS runs on the pipes that add,
// beside the multiplies. After the row's unrolled loop one STMXCSR reads the two flags; when either
// is set the row's loop runs again from its start with the classification, the output written so
// far overwritten (the flags cleared first). The rest of the row (the tail) is narrowed with the
// classification either way. The flags can only be set too often (a subnormal x or weight raises DE
// in the multiplies too; so does a subnormal x in the row's sum pass), never too rarely, and a row
// redone gives the classified loop's bits: the contract holds whatever the flags say.
//
// The flags are sticky and shared by everything that runs on the thread, so the function clears
// them on the way in when they are set (one STMXCSR per call, LDMXCSR only then), in every call
// whose rows are longer than spec.GroupMax, or than rnFlagsAbove with RoundNormalized (those in
// place or streamed too), and after a flagged
// row: flags raised on the thread before such a call are lost, though the call's own arithmetic (a
// redo, a subnormal x) may raise them again. Go has no access to MXCSR's flags, and its goroutines
// share a thread's MXCSR without saving it, so no Go code can rely on them; C code on the same
// thread that tests flags it raised before calling into Go may find them cleared. The signal
// handlers of the runtime return through the kernel's restore of the interrupted MXCSR, and the
// functions are not preempted asynchronously (assembly has no safe points), so nothing else reaches
// the flags between the loop and its STMXCSR.
//
// The loops serve rows longer than spec.GroupMax, those grouped four at a time included, and rows
// of 257-512 with RoundNormalized (rnFlagsAbove); the rows of float32 that prefetch (flagPF:
// strided rows, say) have their own (tag "pf"; ApplyToBF16 on 8 rows of 1024 and of 4096, Stride
// d+32, in cache: -4.5% and -8.9% against the classified loops, eight alternated runs, benchstat). A row that takes one classified loop from memory
// (flagNT) keeps it, as does a row normalized in place without a residual (dst being x: its input
// is gone once the row is written); with a residual the scale pass reads h from Residual, which
// never overlaps dst, so rows in place take the new loops then. STMXCSR waits for the row's
// arithmetic to retire, which shorter rows notice: a hand-edited first version that read the flags
// after every row took 8-13% longer at 1x128 (Zen 5). Measured on a Zen 5 (the test binaries of the
// code before and with these loops alternated eight times, benchstat): ForwardBF16 1x1024 89.5 ->
// 82.9 ns (-7.5%), 1x4096 244.4 -> 205.7 (-16%); with RoundNormalized, whose rounding of x*inv was
// classified too, 141.3 -> 126.4 (-11%), 406.1 -> 300.5 (-26%) and 1x16384 1434 -> 1122 (-22%);
// UnitOffset 1x4096 278.8 -> 257.0 (-7.8%); ApplyToBF16 1x4096 226.5 -> 211.9 (-6.5%); 1x128,
// 1x16384 without RoundNormalized and the streamed shapes within the noise. LayerNorm's (Center,
// Weight and Bias; the bench command, -layernorm -format bf16, the two builds in turn twice):
// 1x4096 412-422 -> 403-404 ns, 16x4096 401-412 -> 382-393, 1x1024 the same; its scale pass
// subtracts the mean and adds the bias on the adder pipes, where VMAXPS and VCVTNE2PS2BF16 run too.

// mxFlags are MXCSR's invalid-operation (bit 0) and denormal (bit 1) flags, mxMasks the masks of
// those exceptions (bits 7 and 8).
const (
	mxFlags = 0b11
	mxMasks = 0b11 << 7
)

// flagsChecked reports whether the function's scale pass has the loops above: the avx512bf16
// functions whose output is bfloat16.
func (g *gen) flagsChecked() bool {
	return g.cvt && g.out() == spec.BF16
}

// rnFlagsAbove is the row length above which rows with RoundNormalized (spec.FlagRN) take
// fastLoops too; without it only rows longer than spec.GroupMax do. Rows of up to GroupMax go four
// at a time, and a STMXCSR after each row holds the next one back: with a plain weight that costs
// what the check saves (a scratch build that let every row above 256 in: 4x512 and 16x384 +2%;
// another that let in the calls of one to three such rows: those 3-9% slower, each row waiting
// for its STMXCSR; bench/results/amd-zen5-turin.txt). A row with RoundNormalized narrows each
// vector twice (x*inv, then the output), and the loops without the check classify both. Measured
// on a Zen 5 (rows in cache, out of place, the test binaries of the code without and with this
// rule alternated eight times, benchstat), with RoundNormalized: Norm.ApplyBF16 16x320 -18.5%,
// 16x384 -16.0%, 4x512 -16.0%, 16x512 -22.9%; with a residual 16x384 -8.6%, 4x512 -7.9%;
// LayerNorm (Center, Weight, Bias) 16x384 -10.5%, 4x512 -7.7%; ApplyToBF16 16x384 -19.5%, 4x512
// -14.1%; single rows 1x320 (+4.5%, p=0.07) and 1x384, and rows of 128 and 256, within the noise.
// Without RoundNormalized every shape from 1x128 to 1x1024 within the noise.
const rnFlagsAbove = 256

// clearFlags, in the prologue, decides whether the call's rows may take fastLoops, in the word
// after MXCSR's in g.mx (1 if so): rows longer than spec.GroupMax, or than rnFlagsAbove with
// RoundNormalized, and MXCSR's invalid-operation
// and denormal exceptions masked (bits 7 and 8), as Go leaves them. C code in the process may
// unmask them (feenableexcept); VMAXPS would then trap on a NaN or subnormal lane, which the
// classified loops narrow without a trap. Then it clears the flags of mxFlags when they are set.
func (g *gen) clearFlags() {
	if !g.flagsChecked() {
		return
	}
	Comment("The loops that read MXCSR's invalid and denormal flags: long rows (or above rnFlagsAbove with flagRN), those exceptions masked (bf16flags.go).")
	on := g.mx.Offset(4)
	MOVL(U32(0), on)
	CMPQ(g.d(), U32(spec.GroupMax))
	JA(LabelRef("mxread"))
	CMPQ(g.d(), U32(rnFlagsAbove))
	JBE(LabelRef("mxdone"))
	TESTL(U32(spec.FlagRN), g.flags())
	JZ(LabelRef("mxdone"))
	Label("mxread")
	STMXCSR(g.mx)
	masks := GP32()
	MOVL(g.mx, masks)
	ANDL(U32(mxMasks), masks)
	CMPL(masks, U32(mxMasks))
	JNE(LabelRef("mxdone"))
	MOVL(U32(1), on)
	TESTL(U32(mxFlags), g.mx)
	JZ(LabelRef("mxdone"))
	ANDL(U32(^uint32(mxFlags)), g.mx)
	LDMXCSR(g.mx)
	Label("mxdone")
}

// fastLoops emits, for the calls clearFlags allows, the scale loops of a row without the
// classification (g.fast) under the names scalefast+tag+loop..., each form's chosen by forms
// (see scale), and the check of MXCSR's flags after them, which goes on to the row's tail or back
// through scale+tag+checked, where the caller emits the classified loops, with i = 0. tag is ""
// for the loops of rows in cache and "pf" for those that prefetch (the functions of float32 rows,
// which have a loop for each: see oneLoop).
func (g *gen) fastLoops(tag string, src, i, pf, fl GPVirtual, forms func(name string, pf, fl GPVirtual, nt bool)) {
	if !g.flagsChecked() {
		return
	}
	checked, done := "scale"+tag+"checked", "scalefast"+tag+"done"
	CMPL(g.mx.Offset(4), U8(0))
	JE(LabelRef(checked))
	CMPQ(src, g.dst)
	JE(LabelRef(checked)) // in place
	g.fast, g.tail = true, done
	forms("scalefast"+tag+"loop", pf, fl, false)
	g.fast, g.tail = false, "scaletail"
	Label(done)
	STMXCSR(g.mx)
	TESTL(U32(mxFlags), g.mx)
	JZ(LabelRef("scaletail"))
	Comment("A NaN or a subnormal among the lanes narrowed, or one before them: the row again, classified.")
	ANDL(U32(^uint32(mxFlags)), g.mx)
	LDMXCSR(g.mx)
	XORQ(i, i)
	Label(checked)
}

// raiseFlags has VMAXPS read a and b (see above); its result is not used.
func raiseFlags(a, b VecVirtual) {
	VMAXPS(b, a, ZMM())
}
