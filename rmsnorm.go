// Package rmsnorm computes RMSNorm, the normalization in front of every attention and MLP block of
// LLaMA, Qwen, DeepSeek and Gemma, on float32, bfloat16 or float16 rows with SIMD kernels
// (AVX-512, AVX2, NEON) and a pure-Go kernel that all give the same bits. For each row x of
// length d and a weight w of length d, y[i] = x[i] / sqrt(mean(x^2) + eps) * w[i]. With
// Norm.Center it computes LayerNorm (BERT, Whisper, ViT, GPT-2): the row's mean is subtracted
// first, and Norm.Bias adds a bias (see LayerNorm).
//
// Requires Go 1.26 or later.
//
// # Quick start
//
// One row of d = 2; more rows follow each other in x:
//
//	x := []float32{3, 4}
//	w := []float32{1, 1}
//	y := make([]float32, len(x))
//	rmsnorm.Forward(y, x, w, 1e-6) // y = [0.8485281 1.1313708]
//
// A Norm is one layer's weight and settings. Its Apply runs the norm of a pre-norm block,
// x = x + Attention(RMSNorm(x)), with the residual add fused: one pass adds the block's output
// into the residual stream and normalizes the sum into the next block's input.
//
//	// out: a block's output, stream: the residual stream, each rows of len(w) back to back
//	norm := rmsnorm.Norm{Weight: w, Eps: 1e-6}                   // Eps from the model's config
//	norm.Apply(rmsnorm.Rows{Dst: out, X: out, Residual: stream}) // stream += out; out = RMSNorm(stream)
//
// Models gives each model's settings; Lengths and layouts the rules on the slices, whose breach
// panics with an "rmsnorm:" message before anything is written.
//
// # Models
//
// The settings that reproduce a model's reference RMSNorm (Hugging Face transformers unless
// another implementation is named). Weight is the form of the checkpoint's norm weight: "Weight"
// a plain scale (the reference initialises it to ones), "UnitOffset" a weight centred on zero that
// scales by 1 + w (initialised to zeros), "none" a Norm with Dim and no Weight. RoundNormalized is
// the reference's cast order on bfloat16 and float16 rows: "yes" where it rounds x*inv to the
// row's format before multiplying by the weight, "no" where it multiplies in float32 and rounds
// once (on float32 rows both orders are the same). Eps is the model's configuration value
// (rms_norm_eps) unless the table says otherwise: a Norm has no default.
//
//	model                                  Weight      RoundNormalized  Eps
//	LLaMA 2, LLaMA 3                       Weight      yes              from config
//	LLaMA 4                                Weight      yes              from config
//	LLaMA 4 q/k norm (RoPE layers)         none        -                from config
//	Qwen 2, 2.5, 3 (and Qwen 3 q/k norm)   Weight      yes              from config
//	Mistral                                Weight      yes              from config
//	GPT-OSS                                Weight      no               from config
//	OLMo 2 (and its q/k norm, whose row is Weight      no               from config
//	  every head at once)
//	DeepSeek V2, V3                        Weight      yes              from config; 1e-6 for
//	                                                                    q_a_layernorm, kv_a_layernorm
//	Gemma 1, 2, 3 (Gemma 3 q/k norm)       UnitOffset  no               from config
//	Gemma 3n, Gemma 4 (and their q/k norm) Weight      no               from config
//	Gemma 3n, Gemma 4: v_norm;             none        -                from config
//	  Gemma 4: the MoE router's norm
//	Qwen3-Next                             UnitOffset  no               from config
//	Qwen3-Next gated norm                  Weight      yes              from config; the caller then
//	  (linear attention)                                                multiplies by silu(gate)
//	PyTorch F.rms_norm                     Weight      no               as passed; eps=None is 2^-23
//	vLLM RMSNorm, PyTorch path and CUDA    Weight      yes              from config
//	vLLM and sglang CPU kernels            Weight      no               from config
//	vLLM GemmaRMSNorm                      UnitOffset  no               from config
//
// Gemma changed its weight form between generations: Gemma 1, 2 and 3 store a weight centred on
// zero and scale by 1 + w (UnitOffset); Gemma 3n and Gemma 4 store a plain weight that starts at
// one. The same settings leave the summation order of the reference different, which moves a
// 16-bit output by one unit in the last place now and then (go test -run CastOrder -v counts
// them). Which of its paths vLLM runs depends on its custom-op settings.
//
// # Numeric contract
//
// Every kernel on every architecture computes exactly the following, so results never depend on
// the CPU, the kernel, the batch size, a row's position in the batch, the alignment of the slices
// or the GOAMD64 level the program is built for (NaN payloads aside: where one kernel gives NaN,
// all do; a NaN that the arithmetic makes from inputs without NaN, such as Inf*0, is negative on
// x86 (amd64, 386) and positive on the other architectures, a sign that float32 and float16 outputs
// keep: 0xfe00 against 0x7e00; where NaNs reach the inputs (a NaN of either sign in dy, say, summed
// into DW), which of them a step passes on, and so the result's sign, can differ between kernels;
// bfloat16 outputs are always 0x7fc0). For one row x[0..d):
//
//  1. Sum of squares in 64 float32 partial sums p[0..64), all starting at +0. Element i goes to
//     p[i%64] as p = p + float32(x[i]*x[i]): the square is rounded to float32, then added, in
//     increasing i. No fused multiply-add changes a result: a kernel fuses the two only where the
//     square is exact (float16 rows; see 16-bit storage), and the Go code rounds each product
//     itself, where the compiler would fuse (arm64 and others; amd64 from GOAMD64=v3).
//  2. The partials are combined by a fixed halving tree: for h = 32, 16, 8, 4, 2, 1,
//     p[j] = p[j] + p[j+h] for j < h. The sum is ss = p[0].
//  3. t = ss/float32(d) + eps and inv = 1/sqrt(t), each operation rounded to float32 (IEEE
//     division and a correctly rounded square root).
//  4. y[i] = (x[i]*inv)*w[i], rounded after each multiply.
//  5. A row whose t is not in [2^-100, MaxFloat32] (that is: ss or ss/d + eps overflowed to
//     +Inf, the row holds an Inf or a NaN, or its mean square plus eps is below 2^-100, the
//     squares perhaps underflowed; a NaN t is not in it either) is recomputed entirely in float64
//     by one shared Go routine: exact squares summed in increasing i, inv = 1/sqrt(ss/d + eps)
//     with eps widened exactly and every operation a float64 one (IEEE division, a correctly
//     rounded square root), y[i] = float32((x[i]*inv)*w[i]) rounded to float32 once. Ordinary
//     rows never get there: the test is one comparison per row.
//
// Consequences: a row of finite values with eps >= 0 always gets finite normalized values
// x[i]*inv, at least as accurate as an ordinary row's, except an all-zero row with eps == 0, which
// gives NaN (the weight, a bias or a 16-bit format's range can still take y past the largest
// finite value, to ±Inf; and Rows.Inv, float32(inv), is +Inf for a row whose root mean square
// is below about 2^-128 when eps == 0). For example [3e30 4e30] (whose float32 values are
// 2.9999999e30 and 4.0000001e30) gives [0.8485281 1.1313709], the correctly rounded result, where
// [3 4] gives [0.8485281 1.1313708].
// An all-zero row gives zeros when eps > 0. A NaN anywhere in a row makes the whole row NaN. An
// Inf gives NaN at its own position and signed zeros elsewhere in its row.
//
// # LayerNorm
//
// A Norm with Center is LayerNorm: y[i] = (x[i]-mean)/sqrt(var + eps) * w'[i] + Bias[i], var the
// mean of the centered squares (the biased variance, as PyTorch's F.layer_norm and ONNX
// LayerNormalization compute it), w' the weight form. Bias, with or without Center, is added after
// the weight. For a row x[0..d) with Center, every operation rounded to float32, no fused
// multiply-add:
//
//  1. s = the sum of x[i] in 64 partials and the halving tree of steps 1-2 above (x[i] goes to
//     p[i%64] as p = p + x[i], in increasing i); m = s/float32(d).
//  2. c[i] = x[i] - m; ss = the sum of c[i]*c[i] (each square rounded) in the 64 partials and the
//     halving tree.
//  3. t = ss/float32(d) + eps and inv = 1/sqrt(t), as in step 3 above.
//  4. y[i] = (c[i]*inv)*w'[i], then y[i] + Bias[i] when Bias is set (without a weight: c[i]*inv,
//     then the bias).
//  5. A row whose s is not finite, or whose t is outside [2^-100, MaxFloat32], takes the float64
//     path: the mean (the float64 sum of x in increasing i from +0, over d), c, ss, inv and y in
//     float64 from the exact x, y rounded to float32 once.
//
// Without Center, a Bias adds step 4's + Bias[i] to RMSNorm's y (on the float64 path, in float64
// before the one rounding). Rows.Mean (and Rows16.Mean, RowsTo16.Mean) receives m of each row
// (float32(mean) on the float64 path) as Inv receives inv: ONNX LayerNormalization's Mean and
// InvStdDev outputs. Mean needs Center. A Norm with Center or Bias never takes the kernels'
// one-row path (the short path of single rows and short batches). The avx512, avx2 and neon
// kernels have LayerNorm functions of their own, forward and backward (Center or DB). Every
// kernel gives the same bits.
//
// The accuracy on rows far from zero is what a float32 mean allows: its rounding, a few units in
// the last place of the row's values, shifts every centered value. Against the float64 definition,
// the largest error of a row's outputs, for rows of 64 to 4096 elements, is about 1.5e-7 of its
// largest output for N(0,1) rows, 4e-6 to 1.1e-5 for 100 + N(0,1) and 5e-4 to 1.2e-3 for
// 1e4 + N(0,1); very short rows do worse (at d = 2, up to 2.4e-2 for 1e4 + N(0,1)) (go test -run
// TestLayerNormAccuracy -v).
//
// # Variants
//
// Norm and Rows add what inference engines need, on every kernel and with the same contract: no
// weight (y[i] = x[i]*inv), the 1 + w of Gemma 1 to 3 and Qwen3-Next (UnitOffset:
// y[i] = (x[i]*inv)*(1+w[i]), 1+w[i] rounded to float32),
// the fused residual add of a pre-norm block (h[i] = x[i] + r[i] rounded to float32, stored back
// into r, then h normalized), rows a stride apart, and 1/rms per row (inv of step 3, or the
// float64 inv rounded to float32 for rows of step 5). On the float64 path the weight forms are
// applied in float64 (1 + float64(w[i])).
//
// # 16-bit storage
//
// ForwardBF16, ForwardF16, Norm.ForwardBF16, Norm.ForwardF16, Norm.ApplyBF16 and Norm.ApplyF16
// take rows of raw bfloat16 or IEEE 754 binary16 bits ([]uint16); the weight and Inv stay
// float32. They extend the contract:
//
//   - Widening to float32 is exact (a float16 NaN comes out quiet, its sign and payload kept).
//     x (and the residual) are widened, and steps 1-5 run unchanged on the widened row, the
//     float64 path included (bfloat16 has float32's range). The square of a float16 value is
//     exact in float32, so a kernel may compute step 1's add on float16 rows as one fused
//     multiply-add; the bits are the same.
//   - With a residual, h = round16(x + r): a float32 add, then one rounding to the format. h is
//     stored into the residual and is the row that is normalized.
//   - The output is y[i] = round16((x[i]*inv)*w[i]) (or the weight form of the Norm), one rounding
//     from the float32 result of step 4. With Norm.RoundNormalized, x[i]*inv is rounded to the
//     format first: n = round16(x[i]*inv), y[i] = round16(n*w'[i]), w' the weight form (1+w[i]
//     rounded to float32 with UnitOffset). On the float64 path, the float32 results of step 5 are
//     rounded the same way; with RoundNormalized, n = round16 of float32(x[i]*inv), n*w'[i] in
//     float64 (w' = 1 + float64(w[i]) with UnitOffset), rounded to float32, then to the format.
//     A Bias, with or without Center, takes the LayerNorm rule below (without Center, m = +0).
//   - LayerNorm (Center, Bias) runs its steps 1-5 on the widened row: y[i] = round16 of its
//     float32 y, one rounding; with RoundNormalized and a weight, n = round16(c[i]*inv) first,
//     then y[i] = round16(n*w'[i] + Bias[i]), the product and the add in float32 (on the float64
//     path n = round16 of float32(c[i]*inv), the product and the add in float64, and y rounded to
//     float32 before round16, as for RMSNorm).
//   - round16 rounds to nearest, ties to even; subnormal inputs and results are kept, never
//     flushed to zero; binary16 overflows to ±Inf (from 65520 up); a NaN stays NaN (payload
//     unspecified; bfloat16 gives 0x7fc0); the sign of zero is kept.
//
// BF16ToFloat32, Float32ToBF16, F16ToFloat32 and Float32ToF16 are the same widening and rounding
// as vector loops of their own, for weights at load and activations at save.
//
// # Mixed precision
//
// Norm.ApplyToBF16 and Norm.ApplyToF16 (RowsTo16) take float32 rows and a float32 residual stream
// and write 16-bit rows: the norm in front of a bfloat16 or float16 matmul. Steps 1-5 run on the
// float32 rows exactly as Apply runs them (the residual sum h is float32 and is stored into
// Residual unrounded; Inv gets Apply's inv), and y[i] = round16 of Apply's y[i], round16 as for
// 16-bit storage. So ApplyToBF16 gives the bits of Apply into a float32 buffer followed by
// Float32ToBF16, in one pass. With RoundNormalized and a weight, n = round16(x[i]*inv) first and
// y[i] = round16(n*w'[i]), as for 16-bit rows (on the float64 path, x[i]*inv is rounded to float32
// first, and n*w'[i] is a float64 product, w' = 1 + float64(w[i]) for UnitOffset, rounded to
// float32 before round16). LayerNorm (Center, or a Bias) the same way: round16 of Apply's y, and with
// RoundNormalized and a weight n = round16(c[i]*inv), y[i] = round16(n*w'[i] + Bias[i]) as for
// 16-bit rows; Mean and Inv Apply's.
//
// # Backward
//
// Norm.Backward computes the gradient of the forward pass without a residual, for training. For
// row x with output gradient dy, inv the forward's inv bit for bit (Grad.Inv, or recomputed by
// steps 1-3 when Grad.Inv is nil), and w' the weight form (w, 1+w rounded to float32, or 1):
//
//  1. g[i] = dy[i]*w'[i], rounded (g = dy without a weight).
//  2. c = the sum of g[i]*x[i] in the 64 partials and halving tree of steps 1-2 (each product
//     rounded to float32, then added to p[i%64] in increasing i).
//  3. s = ((inv*inv)*c)/float32(d), each operation rounded.
//  4. dx[i] = inv*(g[i] - x[i]*s), rounded after the multiply, the subtraction and the multiply.
//  5. The weight gradient: q[i] = dy[i]*(x[i]*inv), rounded after each multiply (x[i]*inv is
//     the forward's normalized value). The rows are cut into blocks of 32 by their index in the
//     call (rows 0-31, 32-63, ...). Within a block the q of its rows are summed in row order
//     into a partial sum P (P = q of the first row, then P = P + q); then DW[i] = DW[i] + P[i],
//     block after block in block order.
//  6. A row is classified by its own sum of squares: a row whose t (step 3 of the forward) lies
//     outside [2^-100, MaxFloat32] takes the float64 path of the forward, and its backward is
//     computed in float64 too (inv recomputed in float64, whatever Grad.Inv holds; g, c, s and dx
//     in float64 as above, with w' = 1 + float64(w[i]) for UnitOffset as on the forward's
//     float64 path and c summed from +0 in increasing i, dx rounded to float32 once;
//     q[i] = float32(dy[i]*(x[i]*inv)) summed into the blocks like any row's).
//
// With Center (LayerNorm) the steps are, for row x with m and inv the forward's bit for bit
// (Grad.Mean and Grad.Inv, or recomputed by the LayerNorm steps 1-3 when nil, each on its own: a
// given Mean or Inv is used as it is, and a nil one is recomputed from X whatever the other holds;
// the row's class, float32 or float64 path, by its own recomputed s and t):
//
//  1. n[i] = (x[i]-m)*inv and g[i] = dy[i]*w'[i], each operation rounded.
//  2. sg = the sum of g[i], and sgn = the sum of g[i]*n[i] (each product rounded), each in the 64
//     partials and halving tree.
//  3. a = sg/float32(d) and b = sgn/float32(d).
//  4. dx[i] = inv*((g[i] - a) - n[i]*b): g[i] - a rounded, n[i]*b rounded, their difference
//     rounded, the multiply by inv rounded.
//  5. DW as in step 5 above with q[i] = dy[i]*n[i] (rounded); DB (Grad.DB, which needs a Bias)
//     sums dy[i] in the same blocks: P = dy of the block's first row, then P = P + dy, then
//     DB[i] = DB[i] + P[i] block after block.
//  6. A row on the float64 path recomputes m and inv in float64 (whatever Grad.Mean and Grad.Inv
//     hold); n, g, both means and dx are float64 (w' = 1 + float64(w[i]) for UnitOffset, the
//     sums from +0 in increasing i; dx[i] = inv*((g[i]-a) - n[i]*b), rounded once);
//     q[i] = float32(dy[i]*n[i]) and dy go into the blocks like any row's.
//
// A Bias without Center leaves dx and DW those of RMSNorm; DB sums dy as in step 5.
//
// No fused multiply-add is used. So DX, DW and DB have the same bits on every kernel, for any
// Workers and any way the rows of the call are split, and DW and DB the same with or without DX.
// With UnitOffset the gradient of w is the gradient of 1+w, the same sums.
//
// # Lengths and layouts
//
// A row has d elements: len(w) for Forward, ForwardBF16 and ForwardF16; len(Weight) for a Norm with
// a weight (Dim is then 0 or len(Weight)); Dim for a Norm without one. Every row buffer of a call
// follows the layout of X (Rows16 counts in 16-bit elements):
//
//   - Back to back (Rows.N = 0, and always for the Forward functions and methods): X holds
//     len(X)/d rows, so len(X) must be a multiple of d; len(Dst) must equal len(X); Stride must
//     be 0 or d.
//   - Strided (Rows.N > 0): N rows whose starts lie Stride elements apart (Stride 0 means d, else
//     Stride >= d). X must hold at least (N-1)*Stride + d elements; the elements between rows and
//     after the last one are neither read nor written.
//   - Dst follows X's layout, unless DstStride (Rows, Rows16 and RowsTo16) gives its rows a
//     stride of their own: DstStride 0 means Stride, else DstStride >= d, and like Stride it needs
//     N (with N = 0 it must be 0 or d). Dst must hold at least (N-1)*DstStride + d elements; the
//     elements between its rows are neither read nor written.
//   - Rows.Residual, when set, has the layout of X: len(Residual) == len(X) back to back, at least
//     (N-1)*Stride + d strided.
//   - Rows.Inv, when set, needs len(Inv) >= the number of rows; Inv[r] is written for row r only.
//     Rows.Mean the same, and it needs a Norm with Center.
//   - Norm.Bias, when set, has exactly d elements.
//   - Grad: DX and DY have the layout of X (len(DX) == len(DY) == len(X) back to back, at least
//     (N-1)*Stride + d strided); a nil DX asks for DW alone. Grad.Inv needs len(Inv) >= the
//     number of rows, Grad.Mean too (and a Norm with Center); Grad.DW, when set, has exactly d
//     elements and needs a Norm with a weight; Grad.DB exactly d and a Norm with a Bias.
//   - An optional buffer (Residual, Inv, Mean, Bias, DW, DB; a Weight, DX) is set when it is not
//     nil: an empty slice that is not nil is checked for its length like any other.
//   - N, Stride, DstStride and Norm.Workers must not be negative, Eps must be finite and >= 0
//     (eps for Forward), and a row length of 0 (no Weight and Dim 0, or an empty w) is only
//     allowed for a call without rows; Dim must not be negative, and UnitOffset needs a Weight.
//
// Memory, counted over each buffer's rows from the first row's start to the last row's end (the
// gaps of strided rows included), over Inv[0:rows] and Mean[0:rows] (one element per row), and
// over the d elements of the weight, the bias, DW and DB (what lies past these is not the call's,
// and may be anything): Dst (dst) is either X (x) itself, the same first element and the same
// stride (DstStride equal to Stride) for an in-place call, or shares none with it, and shares none
// with the weight (RowsTo16's Dst, 16-bit where X is float32, is never X); Residual shares none
// with X, Dst or the weight; Inv none with X, Dst, the weight or Residual. The bias, read only like
// the weight, shares none with an output (Dst, Residual, Inv; in Backward DX, DW, DB, not
// Grad.Inv, which Backward reads); Mean shares none with any buffer of the call. In Backward, DX
// is DY itself or shares none with it, and shares none with X, the weight, Inv or DW; DW shares
// none with X, DY, the weight or Inv; DB none with X, DY, DX, the weight, Inv or DW. Buffers these
// rules do not keep apart may share memory: those a call only reads, X, the weight and the bias,
// and in Backward DY and Grad.Inv too. A call that breaks a rule panics with a message starting
// "rmsnorm:" before it writes anything. A call without rows writes nothing; every rule of the list
// above is checked all the same, the memory rules (memory it neither reads nor writes) are not.
//
// # Workers
//
// Norm.Workers lets one call use several goroutines. Rows are normalized independently, so the
// forward forms split them at any row; Backward splits them at the blocks of step 5 and adds the
// blocks' partial sums to DW (and DB) in block order afterwards. A call uses one goroutine per 12 MiB
// of rows it reads and writes (on Zen 3, 16 MiB for the forward forms and 6 MiB for Backward), up
// to Workers: waking a goroutine costs microseconds, more than the work it would take over below
// that (README: Workers). A call whose x is under half of that share cannot split, and runs as
// with Workers 0.
//
// # Kernels
//
// At init the package picks the first kernel the CPU and the operating system support, in this
// order: "avx512" (AVX-512F and BW; where the CPU has AVX512_BF16 and AVX512DQ too, it rounds to
// bfloat16 with VCVTNE2PS2BF16, to the same bits), "avx2" (AVX2 and F16C), "neon" (arm64) or
// "generic" (pure Go, always present). Kernel reports the choice, Kernels lists the candidates and SetKernel
// switches at run time. The environment variable RMSNORM_KERNEL=<name> picks one at init. The
// build tags purego and noasm compile the generic kernel only.
package rmsnorm

// The Models table above was checked against these sources. Hugging Face transformers,
// src/transformers/models/<model>/modeling_<model>.py: llama LlamaRMSNorm, qwen2 Qwen2RMSNorm,
// qwen3 Qwen3RMSNorm (input, post-attention, q_norm and k_norm), mistral MistralRMSNorm,
// deepseek_v2 DeepseekV2RMSNorm and deepseek_v3 DeepseekV3RMSNorm (q_a_layernorm and kv_a_layernorm
// built without an eps argument: the class default), gemma GemmaRMSNorm, gemma2 Gemma2RMSNorm,
// gemma3 Gemma3RMSNorm, gemma3n Gemma3nRMSNorm (v_norm with_scale=False), gemma4 Gemma4RMSNorm
// (v_norm and Gemma4TextRouter's norm with_scale=False), qwen3_next Qwen3NextRMSNorm and
// Qwen3NextRMSNormGated (its PyTorch form; transformers uses FusedRMSNormGated when that is
// installed). PyTorch: aten/src/ATen/native/layer_norm.cpp rms_norm_composite (float32 math, one
// cast at the end; eps defaults to the float32 epsilon). vLLM:
// vllm/model_executor/layers/layernorm.py RMSNorm.forward_static and vllm/ir/ops/layernorm.py
// rms_norm (cast to the input dtype, then the weight), csrc/layernorm_kernels.cu rms_norm_kernel
// (the same order), csrc/cpu/layernorm.cpp (one rounding), GemmaRMSNorm (1 + w in float32, one
// rounding). sglang: sgl-kernel/csrc/cpu/norm.cpp rmsnorm_kernel_impl (one rounding).

//go:generate go run -C asm ./gospec -out ../gospec.go
//go:generate go run -C asm ./amd64 -out ../rmsnorm_amd64.s -go ../rmsnorm_amd64.go
//go:generate go run -C asm ./arm64 -out ../rmsnorm_arm64.s -go ../rmsnorm_arm64.go

// Forward normalizes the rows of x into dst: x holds len(x)/len(w) rows of d = len(w) floats
// each, and row r of dst becomes RMSNorm(row r of x) scaled element-wise by w, as the package
// documentation specifies bit for bit.
//
// dst must have the length of x and be either x itself (in place) or share no memory with x or
// w. An empty x writes nothing, its lengths and eps checked all the same. Forward panics, before
// writing anything, when len(w) is 0 with a non-empty x, len(x) is not a multiple of len(w),
// len(dst) != len(x), eps is negative, NaN or +Inf, dst partially overlaps x, or dst overlaps w.
func Forward(dst, x, w []float32, eps float32) {
	forwardRows(&forwardNames, formatF32, dst, x, w, eps, useActive)
}

// ForwardBF16 is Forward on bfloat16 rows: x and dst hold raw bfloat16 bits (the top half of a
// float32); the weight stays float32 (a bfloat16 weight widens to float32 exactly, once, with
// BF16ToFloat32 at load). Each row is widened exactly, normalized as the package documentation
// specifies, and y[i] = round16((x[i]*inv)*w[i]) is rounded to bfloat16 once. It panics under the
// same rules as Forward.
func ForwardBF16(dst, x []uint16, w []float32, eps float32) {
	forwardRows(&forwardBF16Names, formatBF16, dst, x, w, eps, useActive)
}

// ForwardF16 is ForwardBF16 for IEEE 754 binary16 (float16) rows. The squares and their sum are
// float32, so rows with |x| > 256, whose squares would overflow in binary16, come out right.
func ForwardF16(dst, x []uint16, w []float32, eps float32) {
	forwardRows(&forwardF16Names, formatF16, dst, x, w, eps, useActive)
}
