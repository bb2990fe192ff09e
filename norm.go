package rmsnorm

// Norm is one RMSNorm layer, or with Center a LayerNorm one: its weight, epsilon and weight form. It holds no state besides its
// fields, so one Norm may serve any number of goroutines at once.
//
// The variants are fields of Norm and of Rows rather than separate functions; every combination
// runs on every kernel and gives the generic kernel's bits.
type Norm struct {
	// Weight scales the normalized row element by element; its length is the row length d.
	// A nil Weight means no weight: y[i] = x[i]*inv, and Dim gives d (the v_norm of Gemma 3n and
	// Gemma 4, which normalizes each value head without a scale).
	Weight []float32
	// Dim is the row length when Weight is nil. With a Weight it must be 0 or len(Weight).
	Dim int
	// Eps is added to the mean of squares inside the square root. It must be finite and >= 0;
	// there is no default: take it from the model's configuration (rms_norm_eps in a Hugging Face
	// config; the package documentation's Models lists the exceptions).
	Eps float32
	// UnitOffset scales by 1 + Weight[i] instead of Weight[i], with 1 + Weight[i] rounded to
	// float32 (never to bfloat16, which would lose small weights). Gemma 1, 2 and 3 and Qwen3-Next
	// store their norm weights centred on zero and need it; Gemma 3n and Gemma 4 store a plain
	// weight that starts at one and do not.
	UnitOffset bool
	// RoundNormalized, for 16-bit output (ForwardBF16, ForwardF16, ApplyBF16, ApplyF16, and
	// ApplyToBF16 and ApplyToF16 from float32 rows), rounds x*inv to the output format before the
	// weight multiply: n = round16(x*inv);
	// y = round16(n*w). That is the cast order of Hugging Face transformers' LlamaRMSNorm and the
	// models that copy it (LLaMA 2 to 4, Qwen 2 and 3, Mistral, DeepSeek V2 and V3), and of vLLM's
	// RMSNorm on its PyTorch and CUDA paths. Without it (the default) y = round16((x*inv)*w), one
	// rounding, as PyTorch's F.rms_norm, the vLLM and sglang CPU kernels, GPT-OSS, OLMo 2, Gemma 3n
	// and Gemma 4 compute it, and as Gemma 1 to 3 compute (x*inv)*(1+w). It has no effect on
	// float32 output or without a weight.
	RoundNormalized bool
	// Center subtracts the row's mean before normalizing: with it a Norm is LayerNorm,
	// y[i] = (x[i]-mean)/sqrt(var + Eps) * w'[i] (+ Bias[i]), var the mean of the centered
	// squares (the biased variance of PyTorch's layer_norm and ONNX LayerNormalization), w' the
	// weight form. The package documentation's LayerNorm gives the exact arithmetic.
	Center bool
	// Bias, when set (len d), is added after the weight, with or without Center: y[i] + Bias[i]
	// (the beta of LayerNorm). It must not overlap an output buffer of the call.
	Bias []float32
	// Workers is the most goroutines one call may use. 0 or 1: the calling goroutine only; a
	// negative value panics. Above a size threshold (see the package documentation), Apply,
	// Forward, ForwardBF16, ForwardF16, ApplyBF16, ApplyF16, ApplyToBF16, ApplyToF16 and Backward
	// split the rows over up to Workers goroutines, the calling one included; below it the call
	// stays on the calling goroutine, and a call whose x is under half of one goroutine's share
	// takes the same path as with Workers 0, at the same cost. Results are bit-identical for every
	// value of Workers.
	//
	// A call that splits allocates nothing once a few have run: the state its goroutines share
	// and Backward's partial sums of the weight gradient (d floats per 32 rows) come from pools,
	// and the goroutines it starts reuse those of calls that have returned. It allocates what a
	// pool cannot give it: on the first split calls, when more split calls run at once than
	// before, after garbage collections have emptied the pools, and for a Backward call with more
	// blocks of 32 rows than the pooled buffers hold.
	Workers int
}

// Rows says where the rows of one call are and what else to do with them.
type Rows struct {
	// X holds the input rows and Dst receives the output rows, at the same positions. Dst is
	// either X itself (same first element: in place) or shares no memory with X.
	Dst, X []float32
	// N is the number of rows. Zero means len(X)/d: the rows fill X back to back, len(X) must be
	// a multiple of d and len(Dst) must equal len(X).
	N int
	// Stride is the distance in elements between the starts of consecutive rows in X and
	// Residual, and in Dst unless DstStride says otherwise; zero means d. It must be >= d, and a
	// stride other than d needs N. The elements between rows are neither read nor written, so
	// the q or k heads inside a fused QKV buffer can be normalized in place. They still count as
	// the memory of X (and of Residual and Dst) for the package doc's rules on overlap: a buffer
	// that may not share memory with X may not lie between its rows either.
	Stride int
	// DstStride is the distance in elements between the starts of consecutive rows of Dst; zero
	// means Stride. It must be >= d, and like Stride a value other than d needs N. With it the
	// q or k heads of a fused QKV buffer go straight into a head-major buffer of their own. In
	// place (Dst is X) needs DstStride equal to Stride.
	DstStride int
	// Residual, when set, fuses the residual add of a pre-norm block: for each element
	// h = X + Residual (a float32 add), Residual = h, and the row normalized is h. It must not
	// overlap X, Dst, the weight, the bias, Inv or Mean (the package doc has every overlap rule).
	Residual []float32
	// Inv, when set, receives 1/rms of each row (the inv of the package documentation) for a
	// backward pass: Inv[r] for row r. It needs room for every row.
	Inv []float32
	// Mean, when set, receives the mean a Norm with Center subtracted from each row (Mean[r] for
	// row r), for a backward pass: ONNX LayerNormalization's Mean output, as Inv is its
	// InvStdDev. It needs room for every row and a Norm with Center, and must not overlap another
	// buffer of the call.
	Mean []float32
}

// Forward normalizes the rows of x into dst with this Norm: x holds len(x)/d rows of d floats.
// It is Apply(Rows{Dst: dst, X: x}), and panics under the same rules.
//
//go:noinline
func (n Norm) Forward(dst, x []float32) {
	if n.plain(sizeOf(x)) {
		// A plain weight on one goroutine: the call is rmsnorm.Forward's, on its shorter path.
		forwardRows(&normForwardNames, formatF32, dst, x, n.Weight, n.Eps, useActive)
		return
	}
	n.forward(dst, x)
}

// plain reports whether n has a plain weight (Dim 0 or its length, no UnitOffset) and runs a call
// whose x holds xBytes on one goroutine: its rows back to back need only what rmsnorm.Forward
// does.
func (n *Norm) plain(xBytes uintptr) bool { return !n.UnitOffset && n.weighted(xBytes) }

// layer reports whether n is a LayerNorm (Center or a Bias): the general-path methods test it
// inline before they call packedLayer, so that RMSNorm's calls on those paths pay a test of two
// fields and no call.
func (n *Norm) layer() bool { return n.Center || n.Bias != nil }

// packs reports whether n has a weight, Dim 0 or its length, and runs a call whose X holds
// xBytes on one goroutine (oneGoroutine): the calls of packedRows, RMSNorm's (weighted) and
// LayerNorm's (packedLayer).
func (n *Norm) packs(xBytes uintptr) bool {
	return n.Weight != nil && (n.Dim == 0 || n.Dim == len(n.Weight)) && n.oneGoroutine(xBytes)
}

// oneGoroutine reports whether a forward call of n whose X holds xBytes of rows back to back runs
// on the calling goroutine alone: Workers 0 or 1, or a call too small for runWorkers to split. That
// splits a call from two workerBytes.forward of memory moved, and a call moves at most four times
// its x (x read; dst, no wider than x, written, or x written back in place; a residual read and
// written), so a call whose x is below half of one share stays whole. Such calls take the short
// paths as Workers 0 does; the larger ones that would not split either (the rest of the way to
// two shares) take the general path, whose cost is small beside theirs. Workers is compared
// unsigned first, one comparison for the common Norms, so that a negative value is not taken for
// one goroutine: it goes to the general path, which panics.
func (n *Norm) oneGoroutine(xBytes uintptr) bool {
	return uint(n.Workers) <= 1 || n.Workers > 0 && xBytes < workerBytes.forward/2
}

// weighted reports whether n is an RMSNorm Norm of packedRows for a call whose X holds xBytes:
// packs, and neither Center nor Bias. A LayerNorm goes to the general-path methods, which take
// its calls of rows back to back through packedLayer.
func (n *Norm) weighted(xBytes uintptr) bool { return n.packs(xBytes) && !n.layer() }

// backToBack reports whether r holds rows back to back (N, Stride and DstStride 0) without Inv
// or Mean: the calls packedRows takes. (A Mean goes to the general path, which writes it or,
// without Center, panics.)
func backToBack[D, T elem](r *rowsOf[D, T]) bool {
	return r.N|r.Stride|r.DstStride == 0 && r.Inv == nil && r.Mean == nil
}

// packable reports whether the call of n on r is one packedRows takes, by the rules its caller
// checks: rows back to back and an RMSNorm Norm with a weight, the call on one goroutine.
func packable[D, T elem](n *Norm, r *rowsOf[D, T]) bool {
	return backToBack(r) && n.weighted(sizeOf(r.X))
}

// flags returns the job flags of n's weight form and rounding for rows in format f, for a Norm
// whose fields agree (UnitOffset only with a weight): flagOffset for 1+w (the kernels have one
// function for every weight form, and tell Unweighted by its nil weight), flagRN for
// RoundNormalized on 16-bit rows with a weight.
func (n *Norm) flags(f format) uint32 {
	var fl uint32
	if n.UnitOffset {
		fl = flagOffset
	}
	if n.RoundNormalized && f != formatF32 && n.Weight != nil {
		fl |= flagRN
	}
	return fl
}

// forward is Norm.Forward for the other Norms: UnitOffset, and LayerNorm with a weight on one
// goroutine (packedLayer), on Apply's short path (packedRows); no weight, and Workers above 1 on
// an x of half a goroutine's share or more (oneGoroutine), on its general path. A call of its own, so that Forward does not save the
// Norm for the address this one takes.
//
//go:noinline
func (n Norm) forward(dst, x []float32) {
	var r rowsOf[float32, float32] // set field by field: a literal would be built aside and copied
	r.Dst, r.X = dst, x
	// r holds rows back to back without Inv: of packable's rules, only the Norm's are left.
	if n.weighted(sizeOf(x)) && packedRows(&r, formatF32, n.Weight, n.Eps, n.flags(formatF32), nil, useActive) {
		return
	}
	if n.layer() && packedLayer(&n, &r, formatF32) {
		return
	}
	if !applyRows(&n, &r, formatF32, useActive) {
		panic(explainApply(&n, &normForwardNames, &r))
	}
}

// Apply normalizes the rows r describes. For row x of length d, with
// inv = 1/sqrt(mean(x^2) + Eps) computed as the package documentation specifies:
//
//	y[i] = (x[i]*inv)*Weight[i]         (default)
//	y[i] = (x[i]*inv)*(1 + Weight[i])   (UnitOffset)
//	y[i] = x[i]*inv                     (Weight nil)
//
// With Center, x[i] - mean takes the place of x[i] (and inv is 1/sqrt(var + Eps)); with Bias,
// Bias[i] is added to y[i]. r.Mean receives the mean of each row (Center).
//
// With r.Residual set, x is first replaced by h = x + Residual, which is also stored back into
// Residual. Apply panics, before writing anything, if the lengths, the stride, Eps or the overlaps
// break the rules of Norm and Rows.
//
// The methods that take a Norm are never inlined: inlined into another package, the call to the
// generic validation would move the Norm to the heap; and a Rows literal is copied once into the
// arguments of a call instead of twice into an inlined copy of them.
//
//go:noinline
func (n Norm) Apply(r Rows) {
	// Rows back to back without Inv, a weight, one goroutine: the common calls take a short path,
	// which leaves the rest and the calls that break a rule to the general one.
	if packable(&n, (*rowsOf[float32, float32])(&r)) {
		if r.Residual == nil && !n.UnitOffset {
			// Nothing else: rmsnorm.Forward's call, as in Norm.Forward.
			forwardRows(&applyNames, formatF32, r.Dst, r.X, n.Weight, n.Eps, useActive)
			return
		}
		if packedRows((*rowsOf[float32, float32])(&r), formatF32, n.Weight, n.Eps, n.flags(formatF32), nil, useActive) {
			return
		}
	}
	n.apply(&r)
}

// apply is Apply on the general path (strided rows, Inv, no weight, Workers above 1 on an x of
// half a goroutine's share or more, and the calls that break a rule), in a call of its own: that measured a little faster for the calls above. A
// LayerNorm's calls of rows back to back go to packedRows from here (packedLayer).
//
//go:noinline
func (n Norm) apply(r *Rows) {
	if n.layer() && packedLayer(&n, (*rowsOf[float32, float32])(r), formatF32) {
		return
	}
	if !applyRows(&n, (*rowsOf[float32, float32])(r), formatF32, useActive) {
		panic(explainApply(&n, &applyNames, (*rowsOf[float32, float32])(r)))
	}
}

// Rows16 is Rows for rows stored in 16 bits: Dst, X and Residual hold raw bfloat16 or binary16
// bits (the format is the method's: ApplyBF16 or ApplyF16); Inv stays float32. The rules of Rows
// apply unchanged.
type Rows16 struct {
	// Dst receives the output rows, in the method's format, at the positions of the rows of X. It
	// is either X itself (the same first element: in place) or shares no memory with X.
	Dst []uint16
	// X holds the input rows, raw bits of the method's format.
	X []uint16
	// N is the number of rows. Zero means len(X)/d: the rows fill X back to back, len(X) must be
	// a multiple of d and len(Dst) must equal len(X).
	N int
	// Stride is the distance in elements between the starts of consecutive rows in X and
	// Residual, and in Dst unless DstStride says otherwise; zero means d. It must be >= d, and a
	// stride other than d needs N.
	Stride int
	// DstStride is the distance in elements between the starts of consecutive rows of Dst; zero
	// means Stride. As in Rows.
	DstStride int
	// Residual, when set, holds the residual stream in the format of X: for each element
	// h = round16(X + Residual) (a float32 add, then one rounding) is stored back into Residual,
	// and h is the row normalized. It has the layout of X and must not overlap X, Dst, the weight,
	// the bias, Inv or Mean.
	Residual []uint16
	// Inv, when set, receives 1/rms of each row as float32 (Inv[r] for row r), the inv the
	// output was computed with, for a backward pass. It needs room for every row.
	Inv []float32
	// Mean, when set, receives the mean of each row (Norm with Center), as in Rows.
	Mean []float32
}

// ApplyBF16 is Apply on bfloat16 rows. Each row (h = round16(x + Residual) with a residual) is
// widened to float32 exactly and normalized as for float32 rows; the output is rounded to
// bfloat16 once, or twice with RoundNormalized (see Norm).
//
//go:noinline
func (n Norm) ApplyBF16(r Rows16) {
	if packable(&n, (*rowsOf[uint16, uint16])(&r)) &&
		packedRows((*rowsOf[uint16, uint16])(&r), formatBF16, n.Weight, n.Eps, n.flags(formatBF16), nil, useActive) {
		return
	}
	n.apply16(&r, formatBF16, &applyBF16Names)
}

// ApplyF16 is ApplyBF16 for IEEE 754 binary16 (float16) rows.
//
//go:noinline
func (n Norm) ApplyF16(r Rows16) {
	if packable(&n, (*rowsOf[uint16, uint16])(&r)) &&
		packedRows((*rowsOf[uint16, uint16])(&r), formatF16, n.Weight, n.Eps, n.flags(formatF16), nil, useActive) {
		return
	}
	n.apply16(&r, formatF16, &applyF16Names)
}

// apply16 is apply for ApplyBF16 and ApplyF16, rows in format f.
//
//go:noinline
func (n Norm) apply16(r *Rows16, f format, nm *names) {
	if n.layer() && packedLayer(&n, (*rowsOf[uint16, uint16])(r), f) {
		return
	}
	if !applyRows(&n, (*rowsOf[uint16, uint16])(r), f, useActive) {
		panic(explainApply(&n, nm, (*rowsOf[uint16, uint16])(r)))
	}
}

// ForwardBF16 normalizes the bfloat16 rows of x into dst with this Norm, as Forward does float32
// rows: x holds len(x)/d rows of d raw bfloat16 bits, back to back. It is
// ApplyBF16(Rows16{Dst: dst, X: x}), and panics under the same rules.
//
//go:noinline
func (n Norm) ForwardBF16(dst, x []uint16) {
	if n.plain(sizeOf(x)) && !n.RoundNormalized {
		// A plain weight, one rounding, one goroutine: rmsnorm.ForwardBF16's call and path.
		forwardRows(&normForwardBF16Names, formatBF16, dst, x, n.Weight, n.Eps, useActive)
		return
	}
	n.forward16(dst, x, formatBF16, &normForwardBF16Names)
}

// ForwardF16 is ForwardBF16 for IEEE 754 binary16 (float16) rows: ApplyF16(Rows16{Dst: dst, X: x}).
//
//go:noinline
func (n Norm) ForwardF16(dst, x []uint16) {
	if n.plain(sizeOf(x)) && !n.RoundNormalized {
		forwardRows(&normForwardF16Names, formatF16, dst, x, n.Weight, n.Eps, useActive)
		return
	}
	n.forward16(dst, x, formatF16, &normForwardF16Names)
}

// forward16 is forward for ForwardBF16 and ForwardF16, rows in format f: UnitOffset and
// RoundNormalized (which forwardRows does not apply), and LayerNorm with a weight on one goroutine
// (packedLayer), on packedRows; no weight, and Workers above 1 on an x of half a goroutine's
// share or more, on applyRows; nm names the caller in the panics.
//
//go:noinline
func (n Norm) forward16(dst, x []uint16, f format, nm *names) {
	var r rowsOf[uint16, uint16] // set field by field, as in forward
	r.Dst, r.X = dst, x
	if n.weighted(sizeOf(x)) && packedRows(&r, f, n.Weight, n.Eps, n.flags(f), nil, useActive) {
		return
	}
	if n.layer() && packedLayer(&n, &r, f) {
		return
	}
	if !applyRows(&n, &r, f, useActive) {
		panic(explainApply(&n, nm, &r))
	}
}

// RowsTo16 describes float32 rows (and a float32 residual stream) normalized into 16-bit rows:
// the norm in front of a bfloat16 or float16 matmul, in one pass instead of Apply into a float32
// buffer followed by Float32ToBF16. The rules of Rows apply unchanged; Dst never shares memory
// with X (no in place: the types differ).
type RowsTo16 struct {
	// Dst receives the output rows as raw bits of the method's format (bfloat16 for ApplyToBF16,
	// binary16 for ApplyToF16), at the positions of the rows of X (DstStride apart).
	Dst []uint16
	// X holds the float32 input rows, as in Rows.
	X []float32
	// N is the number of rows, as in Rows: zero means len(X)/d rows back to back, and then
	// len(Dst) must equal len(X).
	N int
	// Stride is the distance in elements between the starts of consecutive rows in X and
	// Residual, and in Dst unless DstStride says otherwise; as in Rows.
	Stride int
	// DstStride is the distance in elements between the starts of consecutive rows of Dst; zero
	// means Stride. As in Rows.
	DstStride int
	// Residual, when set, is the float32 residual stream, as in Rows: h = X + Residual (a float32
	// add), stored back into Residual unrounded, and h is the row normalized.
	Residual []float32
	// Inv, when set, receives 1/rms of each row (Inv[r] for row r), as in Rows.
	Inv []float32
	// Mean, when set, receives the mean of each row (Norm with Center), as in Rows.
	Mean []float32
}

// ApplyToBF16 normalizes float32 rows into bfloat16 ones. Its output is exactly the bfloat16
// rounding of what Apply computes for the same rows and Norm (Apply into a float32 buffer, then
// Float32ToBF16), in one pass; with RoundNormalized and a weight, x*inv is rounded to bfloat16
// before the weight, as ApplyBF16 does. The residual sum, Residual and Inv are Apply's, in
// float32. It panics under the rules of Apply.
//
//go:noinline
func (n Norm) ApplyToBF16(r RowsTo16) {
	if packable(&n, (*rowsOf[uint16, float32])(&r)) &&
		packedRows((*rowsOf[uint16, float32])(&r), formatToBF16, n.Weight, n.Eps, n.flags(formatToBF16), nil, useActive) {
		return
	}
	n.applyTo16(&r, formatToBF16, &applyToBF16Names)
}

// ApplyToF16 is ApplyToBF16 for IEEE 754 binary16 (float16) output: the binary16 rounding of
// what Apply computes.
//
//go:noinline
func (n Norm) ApplyToF16(r RowsTo16) {
	if packable(&n, (*rowsOf[uint16, float32])(&r)) &&
		packedRows((*rowsOf[uint16, float32])(&r), formatToF16, n.Weight, n.Eps, n.flags(formatToF16), nil, useActive) {
		return
	}
	n.applyTo16(&r, formatToF16, &applyToF16Names)
}

// applyTo16 is apply for ApplyToBF16 and ApplyToF16, output in format f.
//
//go:noinline
func (n Norm) applyTo16(r *RowsTo16, f format, nm *names) {
	if n.layer() && packedLayer(&n, (*rowsOf[uint16, float32])(r), f) {
		return
	}
	if !applyRows(&n, (*rowsOf[uint16, float32])(r), f, useActive) {
		panic(explainApply(&n, nm, (*rowsOf[uint16, float32])(r)))
	}
}
