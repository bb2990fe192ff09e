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
// whose rows may take the loops (below; calls of longer rows in place or streamed too), and after a
// flagged row or group: flags raised on the thread before such a call are lost, though the call's
// own arithmetic (a redo, a subnormal x) may raise them again. Go has no access to MXCSR's flags,
// and its goroutines share a thread's MXCSR without saving it, so no Go code can rely on them; C
// code on the same thread that tests flags it raised before calling into Go may find them cleared.
// The signal handlers of the runtime return through the kernel's restore of the interrupted MXCSR,
// and the functions are not preempted asynchronously (assembly has no safe points), so nothing else
// reaches the flags between the loop and its STMXCSR.
//
// The loops serve rows longer than spec.GroupMax, alone or grouped four at a time, each checked
// after its loop; rows of up to GroupMax grouped four at a time, the group checked once after its
// fourth row and redone a row at a time when flagged (groupFlags); and rows of 257-512 alone with
// RoundNormalized (rnFlagsAbove). The rows of float32 that prefetch (flagPF: strided rows, say)
// have their own (tag "pf"; ApplyToBF16 on 8 rows of 1024 and of 4096, Stride d+32, in cache: -4.5%
// and -8.9% against the classified loops, eight alternated runs, benchstat). A row that takes one
// classified loop from memory (flagNT) keeps it, as does a row normalized in place without a
// residual (dst being x: its input is gone once the row is written); with a residual the scale pass
// reads h from Residual, which never overlaps dst, so rows in place take the new loops then.
// STMXCSR waits for the row's arithmetic to retire, which shorter rows notice: a hand-edited first
// version that read the flags after every row took 8-13% longer at 1x128 (Zen 5). Measured on a
// Zen 5 (the test binaries of the code before and with these loops alternated eight times,
// benchstat): ForwardBF16 1x1024 89.5 -> 82.9 ns (-7.5%), 1x4096 244.4 -> 205.7 (-16%); with
// RoundNormalized, whose rounding of x*inv was classified too, 141.3 -> 126.4 (-11%),
// 406.1 -> 300.5 (-26%) and 1x16384 1434 -> 1122 (-22%); UnitOffset 1x4096 278.8 -> 257.0 (-7.8%);
// ApplyToBF16 1x4096 226.5 -> 211.9 (-6.5%); 1x128, 1x16384 without RoundNormalized and the
// streamed shapes within the noise. LayerNorm's (Center, Weight and Bias; the bench command,
// -layernorm -format bf16, the two builds in turn twice): 1x4096 412-422 -> 403-404 ns, 16x4096
// 401-412 -> 382-393, 1x1024 the same; its scale pass subtracts the mean and adds the bias on the
// adder pipes, where VMAXPS and VCVTNE2PS2BF16 run too.

// mxFlags are MXCSR's invalid-operation (bit 0) and denormal (bit 1) flags, mxMasks the masks of
// those exceptions (bits 7 and 8).
const (
	mxFlags = 0b11
	mxMasks = 0b11 << 7
)

// mxSingle and mxGroups are the bits of the word after MXCSR's in g.mx that clearFlags sets for
// the call: rows alone may take fastLoops (mxSingle), rows in a group may (mxGroups).
const (
	mxSingle = 1 << 0
	mxGroups = 1 << 1
)

// flagsChecked reports whether the function's scale pass has the loops above: the avx512bf16
// functions whose output is bfloat16.
func (g *gen) flagsChecked() bool {
	return g.cvt && g.out() == spec.BF16
}

// rnFlagsAbove is the row length above which rows of up to spec.GroupMax that go alone take
// fastLoops, with RoundNormalized (spec.FlagRN) only; in groups of four they take them whatever
// their length and form (groupFlags). A row alone waits for its STMXCSR, which waits for the
// row's arithmetic: calls of one to three plain-weight rows of 257-512 were 3-9% slower with the
// check (bench/results/amd-zen5-turin.txt). A row with RoundNormalized narrows each vector twice
// (x*inv, then the output), and the loops without the check classify both, which pays for it.
// Measured on a Zen 5 (rows in cache, out of place, the test binaries of the code without and with
// this rule alternated eight times, benchstat; all four rows of a group checked one by one then):
// with RoundNormalized, Norm.ApplyBF16 16x320 -18.5%, 16x384 -16.0%, 4x512 -16.0%, 16x512
// -22.9%; with a residual, whose rows go alone, 16x384 -8.6%, 4x512 -7.9%; LayerNorm (Center,
// Weight, Bias) 16x384 -10.5%, 4x512 -7.7%; ApplyToBF16 16x384 -19.5%, 4x512 -14.1%; single rows
// 1x320 (+4.5%, p=0.07) and 1x384, and rows of 128 and 256, within the noise.
const rnFlagsAbove = 256

// clearFlags, in the prologue, decides which of the call's rows may take fastLoops, in the word
// after MXCSR's in g.mx: rows longer than spec.GroupMax (mxSingle and mxGroups); rows of up to
// GroupMax alone with RoundNormalized above rnFlagsAbove (mxSingle), and in groups when the call
// has a group's rows, out of place and without a residual (mxGroups); none unless MXCSR's
// invalid-operation and denormal exceptions are masked (bits 7 and 8), as Go leaves them. C code
// in the process may unmask them (feenableexcept); VMAXPS would then trap on a NaN or subnormal
// lane, which the classified loops narrow without a trap. A call whose rows may take the loops
// clears the flags of mxFlags when they are set; the others do not read MXCSR at all.
func (g *gen) clearFlags() {
	if !g.flagsChecked() {
		return
	}
	Comment("The loops that read MXCSR's invalid and denormal flags (bf16flags.go): which rows may take them, if those exceptions are masked.")
	on := g.mx.Offset(4)
	MOVL(U32(0), on)
	want := GP32()
	MOVL(U32(mxSingle|mxGroups), want)
	CMPQ(g.d(), U32(spec.GroupMax))
	JA(LabelRef("mxread"))
	// Rows of up to GroupMax: alone only with RoundNormalized above rnFlagsAbove; in groups
	// (checked once per group: groupFlags) when the call has a group's rows.
	MOVL(U32(0), want)
	CMPQ(g.d(), U32(rnFlagsAbove))
	JBE(LabelRef("mxgroups"))
	TESTL(U32(spec.FlagRN), g.flags())
	JZ(LabelRef("mxgroups"))
	MOVL(U32(mxSingle), want)
	Label("mxgroups")
	// Groups: not in place (no row could be redone), nor with a residual (whose rows go alone),
	// nor streamed (flagNT: the loops that classify); for the Layer functions under FlagGroups
	// only (pickRows).
	CMPQ(g.field(spec.Job.Res), U8(0))
	JNE(LabelRef("mxany"))
	TESTL(U32(spec.FlagNT), g.flags())
	JNZ(LabelRef("mxany"))
	if g.v.Layer {
		TESTL(U32(spec.FlagGroups), g.flags())
		JZ(LabelRef("mxany"))
	}
	xp := GP64()
	MOVQ(g.field(spec.Job.X), xp)
	CMPQ(xp, g.field(spec.Job.Dst))
	JE(LabelRef("mxany"))
	rows := Load(Param("from"), GP64()).(GPVirtual)
	NEGQ(rows)
	ADDQ(g.to(), rows)
	CMPQ(rows, U8(group))
	JB(LabelRef("mxany"))
	ORL(U32(mxGroups), want)
	Label("mxany")
	TESTL(want, want)
	JZ(LabelRef("mxdone"))
	Label("mxread")
	g.readMXCSR("mxdone")
	MOVL(want, on)
	g.clearSetFlags("mxdone", "")
	Label("mxdone")
}

// readMXCSR stores MXCSR in g.mx and jumps to unmasked unless the invalid-operation and denormal
// exceptions are masked (mxMasks), as Go leaves them.
func (g *gen) readMXCSR(unmasked string) {
	STMXCSR(g.mx)
	masks := GP32()
	MOVL(g.mx, masks)
	ANDL(U32(mxMasks), masks)
	CMPL(masks, U32(mxMasks))
	JNE(LabelRef(unmasked))
}

// fastLoops emits, for the rows clearFlags allows (a row alone under mxSingle, a group's under
// mxGroups), the scale loops of a row without the classification (g.fast) under the names
// scalefast+tag+loop..., each form's chosen by forms (see scale), and the check of MXCSR's flags
// after them (but for a group's rows of up to spec.GroupMax, which groupFlags checks together),
// which goes on to the row's tail or back through scale+tag+checked, where the caller emits the
// classified loops, with i = 0. tag is "" for the loops of rows in cache and "pf" for those that
// prefetch (the functions of float32 rows, which have a loop for each: see oneLoop).
func (g *gen) fastLoops(tag string, src, i, pf, fl GPVirtual, forms func(name string, pf, fl GPVirtual, nt bool)) {
	if !g.flagsChecked() {
		return
	}
	checked, done := "scale"+tag+"checked", "scalefast"+tag+"done"
	grouped, open := "scalefast"+tag+"grouped", "scalefast"+tag+"open"
	on := g.mx.Offset(4)
	CMPQ(g.pend, U8(1))
	JNE(LabelRef(grouped))
	TESTL(U32(mxSingle), on)
	JZ(LabelRef(checked))
	JMP(LabelRef(open))
	Label(grouped)
	TESTL(U32(mxGroups), on)
	JZ(LabelRef(checked))
	Label(open)
	CMPQ(src, g.dst)
	JE(LabelRef(checked)) // in place
	g.fast, g.tail = true, done
	forms("scalefast"+tag+"loop", pf, fl, false)
	g.fast, g.tail = false, "scaletail"
	Label(done)
	g.unlessGroupChecked(done + "row")
	JMP(LabelRef("scaletail")) // checked with its group (groupFlags)
	Label(done + "row")
	g.takeFlags("scaletail", "A NaN or a subnormal among the lanes narrowed, or one before them: the row again, classified.")
	XORQ(i, i)
	Label(checked)
}

// groupFlags, after the rows of a group of rows of up to spec.GroupMax are scaled (scaleRows),
// reads MXCSR's flags once for the group's four rows, which took fastLoops without a check of their
// own. When one is set it clears them and sends the four rows back, to be done again a row at a
// time (skip, as invGroup does with a group that has a row out of range): the sums again, and scale
// loops that classify (a row of up to GroupMax alone takes fastLoops only with RoundNormalized
// above rnFlagsAbove, and then checks itself). Calls in place or streamed (flagNT) have no
// mxGroups, and a group never has a residual. The caller jumps to row after it. A redo does not
// clear the flags its own arithmetic raises (a subnormal x in the sum pass), so the group after it
// may be redone too: slower, never wrong. One STMXCSR per group instead of per row is what lets
// these rows take the loops: the check per row cost 4x512 and 16x384 2% with a plain weight.
// Measured on a Zen 5 (Norm.ApplyBF16 out of place, rows in cache, the test binaries of the code
// without and with the group check alternated twelve times, benchstat, +-1-2%): 40x128 -4.5%,
// 16x256 -2.9%, 16x384 -3.3%; with RoundNormalized 40x128 -12.0% (Qwen3's 32+8 heads of a token, as
// its reference rounds them), 16x256 -16.5%, 16x384 -2.2% (checked per row before); ten runs more:
// LayerNorm 40x128 -3.1%, ApplyToBF16 40x128 -2.6%; 32768x128 (16 MiB, not streamed) -4.7%, with
// RoundNormalized -8.7%; 1x128, 4x128, 2x384, 4x512, 16x4096 and rows in place within the noise.
func (g *gen) groupFlags() {
	if !g.flagsChecked() {
		return
	}
	g.unlessGroupChecked("row")
	// mxGroups is the call's: clear in place and when streamed (clearFlags). Not a test of x
	// against dst here, which point past the group: the end of a strided x may be the start of
	// a dst of its own, and the group would go unchecked.
	TESTL(U32(mxGroups), g.mx.Offset(4))
	JZ(LabelRef("row"))
	g.takeFlags("row", "A NaN or a subnormal among the group's lanes narrowed, or one before them: its rows again, one at a time.")
	t := GP64()
	MOVQ(g.strideB, t)
	SHLQ(U8(2), t) // the group's four rows
	SUBQ(t, g.x)
	SUBQ(t, g.res)
	MOVQ(g.dstStrideB, t)
	SHLQ(U8(2), t)
	SUBQ(t, g.dst)
	SUBQ(U8(group), g.done)
	MOVQ(U32(group), g.skip) // on to row
}

// unlessGroupChecked jumps to label unless the rows being scaled are a group of rows of up to
// spec.GroupMax, whose flags groupFlags reads once for the four rows (longer rows check theirs
// one by one, in a group or not).
func (g *gen) unlessGroupChecked(label string) {
	CMPQ(g.pend, U8(1))
	JE(LabelRef(label))
	CMPQ(g.d(), U32(spec.GroupMax))
	JA(LabelRef(label))
}

// takeFlags reads MXCSR's flags of mxFlags into g.mx and jumps to clean when neither is set;
// else it clears them and falls through, under comment, to the redo.
func (g *gen) takeFlags(clean, comment string) {
	STMXCSR(g.mx)
	g.clearSetFlags(clean, comment)
}

// clearSetFlags, with MXCSR in g.mx, jumps to clean when neither flag of mxFlags is set; else it
// clears them and falls through, under comment when there is one.
func (g *gen) clearSetFlags(clean, comment string) {
	TESTL(U32(mxFlags), g.mx)
	JZ(LabelRef(clean))
	if comment != "" {
		Comment(comment)
	}
	ANDL(U32(^uint32(mxFlags)), g.mx)
	LDMXCSR(g.mx)
}

// raiseFlags has VMAXPS read a and b (see above); its result is not used.
func raiseFlags(a, b VecVirtual) {
	VMAXPS(b, a, ZMM())
}

// rowFlags is clearFlags for the row function of bfloat16 rows (rowFuncBF16): its row takes the
// loop without the classification (the word after g.mx set to 1) when it is longer than
// spec.GroupMax (with RoundNormalized rnFlagsAbove), as rows alone on the job's path, not in place
// (a flagged row is done again from x), and MXCSR's invalid-operation and denormal exceptions are
// masked; such a row in place clears the flags too, as the job's functions do for such a call.
func (g *gen) rowFlags(r rowRegs) {
	Comment("The loop that reads MXCSR's invalid and denormal flags (bf16flags.go): for rows longer than GroupMax (rnFlagsAbove with RoundNormalized), out of place, if those exceptions are masked.")
	on := g.mx.Offset(4)
	MOVL(U32(0), on)
	above := spec.GroupMax
	if r.rn {
		above = rnFlagsAbove
	}
	CMPQ(r.d, U32(above))
	JBE(LabelRef("mxdone"))
	g.readMXCSR("mxdone")
	CMPQ(r.x, r.dst)
	JE(LabelRef("mxclear")) // in place: the flags cleared, the row classified
	MOVL(U32(1), on)
	Label("mxclear")
	g.clearSetFlags("mxdone", "")
	Label("mxdone")
}
