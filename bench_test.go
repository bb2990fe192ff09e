package rmsnorm

import (
	"slices"
	"strconv"
	"testing"
	"unsafe"

	"github.com/gosimd/rmsnorm/internal/benchutil"
)

// Benchmarks. BenchmarkForward/<kernel>/<rows>x<d> runs Forward with each available kernel, and
// BenchmarkCopy/<rows>x<d> moves the same bytes, so that one run gives the ratio to copy();
// SetBytes counts x read plus y written. BenchmarkOverhead measures what the Go side of a call
// costs on top of the kernel. What users would write instead (the textbook loop, vek, gonum,
// simd/archsimd) is in the bench/peers module. The shapes are internal/benchutil's, which the
// bench command and bench/peers use too.

// benchData returns x and w for a shape, reused across kernels.
func benchData(s benchutil.Shape) (x, w []float32) {
	r := seedFor(s.Rows, s.D)
	x = make([]float32, s.Rows*s.D)
	fill(x, normal, r)
	w = make([]float32, s.D)
	fill(w, normal, r)
	return x, w
}

// withKernel makes k the active kernel for the rest of the benchmark.
func withKernel(b *testing.B, k kernelID) {
	saved := Kernel()
	if err := SetKernel(k.name()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { SetKernel(saved) })
}

// benchShapes are the shapes of BenchmarkForward and BenchmarkForward16: the standard ones and the
// large batch.
var benchShapes = benchutil.Must(benchutil.Standard + "," + benchutil.Large)

func BenchmarkForward(b *testing.B) {
	for _, k := range available {
		b.Run(k.name(), func(b *testing.B) {
			for _, s := range benchShapes {
				x, w := benchData(s)
				y := make([]float32, len(x))
				copy(y, x) // the output's pages exist before anything is timed
				b.Run(s.String(), func(b *testing.B) {
					withKernel(b, k)
					b.SetBytes(int64(8 * len(x)))
					b.ReportAllocs()
					for b.Loop() {
						Forward(y, x, w, 1e-6)
					}
				})
			}
		})
	}
}

// BenchmarkForward16/<kernel>/<bf16|f16>/<shape> runs ForwardBF16 and ForwardF16 on the rows of
// BenchmarkForward rounded to the format; SetBytes counts the 16-bit x read and y written, so
// that BenchmarkCopy16 gives the ratio to copy() and BenchmarkForward the ratio to float32 rows.
// bf16RN and f16RN are Norm.ApplyBF16 and Norm.ApplyF16 with RoundNormalized on the same rows,
// bf16UO and f16UO with UnitOffset (the weight form 1+w).
func BenchmarkForward16(b *testing.B) {
	for _, k := range available {
		b.Run(k.name(), func(b *testing.B) {
			for _, fr := range []struct {
				f      format
				rn, uo bool
			}{{formatBF16, false, false}, {formatF16, false, false}, {formatBF16, true, false}, {formatF16, true, false},
				{formatBF16, false, true}, {formatF16, false, true}} {
				f := fr.f
				name := map[format]string{formatBF16: "bf16", formatF16: "f16"}[f]
				if fr.rn {
					name += "RN"
				}
				if fr.uo {
					name += "UO"
				}
				b.Run(name, func(b *testing.B) {
					for _, s := range benchShapes {
						x32, w := benchData(s)
						x := narrowAll(x32, f)
						y := slices.Clone(x)
						fwd := map[format]func(dst, x []uint16, w []float32, eps float32){formatBF16: ForwardBF16, formatF16: ForwardF16}[f]
						if fr.rn || fr.uo {
							n := Norm{Weight: w, Eps: 1e-6, RoundNormalized: fr.rn, UnitOffset: fr.uo}
							apply := map[format]func(Rows16){formatBF16: n.ApplyBF16, formatF16: n.ApplyF16}[f]
							fwd = func(dst, x []uint16, _ []float32, _ float32) { apply(Rows16{Dst: dst, X: x}) }
						}
						b.Run(s.String(), func(b *testing.B) {
							withKernel(b, k)
							b.SetBytes(int64(4 * len(x)))
							b.ReportAllocs()
							for b.Loop() {
								fwd(y, x, w, 1e-6)
							}
						})
					}
				})
			}
		})
	}
}

// BenchmarkUnweighted/<kernel>/<form>/<shape> runs Norm.Apply, ApplyBF16 and ApplyF16 without a
// weight (form f32, bf16, f16), and with a residual (f32Add, bf16Add, f16Add), on the rows of
// BenchmarkForward (rounded to the format); SetBytes counts x read and y written, and res read and
// written too with a residual.
func BenchmarkUnweighted(b *testing.B) {
	for _, k := range available {
		b.Run(k.name(), func(b *testing.B) {
			for _, f := range []format{formatF32, formatBF16, formatF16} {
				for _, add := range []bool{false, true} {
					name := map[format]string{formatF32: "f32", formatBF16: "bf16", formatF16: "f16"}[f]
					if add {
						name += "Add"
					}
					b.Run(name, func(b *testing.B) {
						for _, s := range benchShapes {
							x32, _ := benchData(s)
							n := Norm{Dim: s.D, Eps: 1e-6}
							var apply func()
							bytes := 2 * len(x32)
							if add {
								bytes *= 2
							}
							if f == formatF32 {
								y, res := slices.Clone(x32), slices.Clone(x32)
								r := Rows{Dst: y, X: x32}
								if add {
									r.Residual = res
								}
								apply, bytes = func() { n.Apply(r) }, 4*bytes
							} else {
								x := narrowAll(x32, f)
								r := Rows16{Dst: slices.Clone(x), X: x}
								if add {
									r.Residual = slices.Clone(x)
								}
								apply16 := map[format]func(Rows16){formatBF16: n.ApplyBF16, formatF16: n.ApplyF16}[f]
								apply, bytes = func() { apply16(r) }, 2*bytes
							}
							b.Run(s.String(), func(b *testing.B) {
								withKernel(b, k)
								b.SetBytes(int64(bytes))
								b.ReportAllocs()
								for b.Loop() {
									apply()
								}
							})
						}
					})
				}
			}
		})
	}
}

func BenchmarkCopy(b *testing.B) {
	for _, s := range benchShapes {
		x, _ := benchData(s)
		y := make([]float32, len(x))
		b.Run(s.String(), func(b *testing.B) {
			b.SetBytes(int64(8 * len(x)))
			for b.Loop() {
				copy(y, x)
			}
		})
	}
}

// BenchmarkCopy16 is BenchmarkCopy for 16-bit rows.
func BenchmarkCopy16(b *testing.B) {
	for _, s := range benchShapes {
		x32, _ := benchData(s)
		x := narrowAll(x32, formatBF16)
		y := slices.Clone(x) // both buffers' pages exist (an untouched x would be the zero page)
		b.Run(s.String(), func(b *testing.B) {
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				copy(y, x)
			}
		})
	}
}

// BenchmarkOverhead/<kernel>/<api>/<shape> puts the public entry points next to the kernel they
// end in: direct is the kernel function itself (the assembly, or the generic kernel's entry)
// called with a job validated once outside the loop; row is the row function that Forward,
// Norm.Forward and Apply call for one float32 row whose length is a multiple of 64 (callRow, the
// avx512 and avx2 kernels), called straight with the row's arguments; Forward, NormForward
// (Norm.Forward), Apply (a Norm with a plain weight) and ApplyResidual (with Rows.Residual, next
// to its own directResidual) validate and dispatch on every call. The difference is the cost of
// the API per call.
//
// Apply and ApplyResidual pass a Rows literal, as callers usually write the call. The compiler
// builds the literal with 8-byte stores and copies it into the call's arguments with 16-byte
// loads, which the CPU cannot forward from those stores: the copy, and everything after it, wait
// for every store ahead of them, the previous call's rows included, to reach the cache. That
// wait is the caller's, and it hides the package's own work in its shadow. So ApplyReused and
// ApplyResidualReused pass one Rows built before the loop, which waits for nothing:
// ApplyReused - direct and ApplyResidualReused - directResidual are the package's own cost.
// directRows and directResidualRows are direct plus the literal: the Rows passed by value (14
// words) to a function that only returns the pointers of its Dst, X and Residual, which the
// kernel then uses, as Apply's kernel uses the rows it was given.
func BenchmarkOverhead(b *testing.B) {
	for _, k := range available {
		b.Run(k.name(), func(b *testing.B) {
			for _, api := range []string{"direct", "row", "directRows", "Forward", "NormForward", "Apply", "ApplyReused", "directResidual", "directResidualRows", "ApplyResidual", "ApplyResidualReused", "NormForwardWorkers", "ApplyReusedWorkers"} {
				b.Run(api, func(b *testing.B) {
					for _, s := range benchutil.Must(benchutil.Overhead) {
						x, w := benchData(s)
						y := make([]float32, len(x))
						res := make([]float32, len(x))
						n := Norm{Weight: w, Eps: 1e-6}
						b.Run(s.String(), func(b *testing.B) {
							withKernel(b, k)
							b.ReportAllocs()
							switch api {
							case "direct", "directResidual":
								// The job Apply builds, built by hand once.
								j := job{dst: ptr(y), x: ptr(x), w: ptr(w), d: s.D, stride: s.D, dstStride: s.D, rows: s.Rows,
									eps: 1e-6, mode: weighted, v: vWeighted}
								if api == "directResidual" {
									j.res, j.v = ptr(res), vAddWeighted
								}
								j.setMemoryFlags()
								callDirect(b, k, &j)
							case "row":
								// The row function Forward and Apply call for one float32 row (callRow),
								// called straight: what those calls cost beyond it is their checks.
								if s.Rows != 1 || !hasRowFunc(k) {
									b.Skip("the row functions take one row, on the kernels that have them")
								}
								if callRow(ptr(y), ptr(x), nil, ptr(w), s.D, 1e-6, k) != rowDone {
									b.Fatalf("%s declined the row: the loop would time noRow", k)
								}
								for b.Loop() {
									callRow(ptr(y), ptr(x), nil, ptr(w), s.D, 1e-6, k)
								}
							case "directRows":
								j := job{dst: ptr(y), x: ptr(x), w: ptr(w), d: s.D, stride: s.D, dstStride: s.D, rows: s.Rows,
									eps: 1e-6, mode: weighted, v: vWeighted}
								j.setMemoryFlags()
								j.fn = uint32(k)*numEntries + uint32(j.v)
								for b.Loop() {
									j.dst, j.x, j.res = n.takeRows(Rows{Dst: y, X: x})
									callKernel(&j, 0, j.rows)
								}
							case "directResidualRows":
								j := job{dst: ptr(y), x: ptr(x), res: ptr(res), w: ptr(w), d: s.D, stride: s.D, dstStride: s.D,
									rows: s.Rows, eps: 1e-6, mode: weighted, v: vAddWeighted}
								j.setMemoryFlags()
								j.fn = uint32(k)*numEntries + uint32(j.v)
								for b.Loop() {
									j.dst, j.x, j.res = n.takeRows(Rows{Dst: y, X: x, Residual: res})
									callKernel(&j, 0, j.rows)
								}
							case "Forward":
								for b.Loop() {
									Forward(y, x, w, 1e-6)
								}
							case "NormForward":
								for b.Loop() {
									n.Forward(y, x)
								}
							case "Apply":
								for b.Loop() {
									n.Apply(Rows{Dst: y, X: x})
								}
							case "NormForwardWorkers", "ApplyReusedWorkers":
								// Workers 2 on calls too small to split: they stay on one goroutine,
								// on the paths of Workers 0.
								nw, r := n, Rows{Dst: y, X: x}
								nw.Workers = 2
								for b.Loop() {
									if api == "NormForwardWorkers" {
										nw.Forward(y, x)
									} else {
										nw.Apply(r)
									}
								}
							case "ApplyResidual":
								for b.Loop() {
									n.Apply(Rows{Dst: y, X: x, Residual: res})
								}
							case "ApplyReused", "ApplyResidualReused":
								r := Rows{Dst: y, X: x}
								if api == "ApplyResidualReused" {
									r.Residual = res
								}
								for b.Loop() {
									n.Apply(r)
								}
							}
						})
					}
				})
			}
		})
	}
}

// takeRows receives a Rows the way Apply does and returns the pointers of its Dst, X and
// Residual (BenchmarkOverhead).
//
//go:noinline
func (n Norm) takeRows(r Rows) (dst, x, res unsafe.Pointer) {
	return ptr(r.Dst), ptr(r.X), ptr(r.Residual)
}

// BenchmarkResidual compares the fused residual add (one pass: h = x + res, res = h,
// dst = RMSNorm(h)) with the same work done as a separate add loop followed by Forward. Bytes
// count x and res read plus res and dst written.
func BenchmarkResidual(b *testing.B) {
	for _, s := range benchutil.Must("1x4096,2048x4096") {
		x, w := benchData(s)
		res := make([]float32, len(x))
		copy(res, x)
		y := make([]float32, len(x))
		n := Norm{Weight: w, Eps: 1e-6}
		b.Run("fused/"+s.String(), func(b *testing.B) {
			b.SetBytes(int64(16 * len(x)))
			b.ReportAllocs()
			for b.Loop() {
				n.Apply(Rows{Dst: y, X: x, Residual: res})
			}
		})
		b.Run("separate/"+s.String(), func(b *testing.B) {
			b.SetBytes(int64(16 * len(x)))
			for b.Loop() {
				for i, v := range x {
					res[i] += v
				}
				Forward(y, res, w, 1e-6)
			}
		})
	}
}

// The fused QKV buffer of BenchmarkQKNorm and BenchmarkDstStride: 2048 tokens of 16 q, 8 k and 8
// v heads of 128.
const qkTokens, qkHeads, qkHeadDim, qkWidth = 2048, 16, 128, 32 * 128

// qkData returns the fused QKV buffer and a Norm for its heads.
func qkData() ([]float32, Norm) {
	qkv := make([]float32, qkTokens*qkWidth)
	fill(qkv, normal, seedFor(qkTokens, qkWidth))
	w := make([]float32, qkHeadDim)
	fill(w, normal, seedFor(qkHeadDim))
	return qkv, Norm{Weight: w, Eps: 1e-6}
}

// BenchmarkQKNorm normalizes 2048 tokens x 16 heads of 128 inside a fused QKV buffer (16 q, 8 k
// and 8 v heads per token, so rows are 4096 floats apart) one head at a time, against the same
// 32768 rows of 128 stored back to back.
func BenchmarkQKNorm(b *testing.B) {
	const tokens, heads, headDim, width = qkTokens, qkHeads, qkHeadDim, qkWidth
	qkv, n := qkData()
	b.Run("strided/32768x128", func(b *testing.B) {
		b.SetBytes(int64(8 * tokens * heads * headDim))
		b.ReportAllocs()
		for b.Loop() {
			for h := 0; h < heads; h++ {
				q := qkv[h*headDim:]
				n.Apply(Rows{Dst: q, X: q, N: tokens, Stride: width})
			}
		}
	})
	// The same rows token by token: a token's q heads are contiguous, so each call is 16 rows
	// back to back.
	b.Run("pertoken/32768x128", func(b *testing.B) {
		b.SetBytes(int64(8 * tokens * heads * headDim))
		b.ReportAllocs()
		for b.Loop() {
			for t := 0; t < tokens; t++ {
				q := qkv[t*width : t*width+heads*headDim]
				n.Forward(q, q)
			}
		}
	})
	// copy() of the q regions token by token: what the memory system gives for this layout.
	out := make([]float32, tokens*width)
	b.Run("copy-pertoken/32768x128", func(b *testing.B) {
		b.SetBytes(int64(8 * tokens * heads * headDim))
		for b.Loop() {
			for t := 0; t < tokens; t++ {
				copy(out[t*width:t*width+heads*headDim], qkv[t*width:t*width+heads*headDim])
			}
		}
	})
	flat := make([]float32, tokens*heads*headDim)
	copy(flat, qkv)
	b.Run("contiguous/32768x128", func(b *testing.B) {
		b.SetBytes(int64(8 * len(flat)))
		b.ReportAllocs()
		for b.Loop() {
			n.Forward(flat, flat)
		}
	})
	flat2 := make([]float32, len(flat))
	b.Run("copy-contiguous/32768x128", func(b *testing.B) {
		b.SetBytes(int64(8 * len(flat)))
		for b.Loop() {
			copy(flat2, flat)
		}
	})
}

// BenchmarkApplyTo16/<kernel>/<form>/<shape> runs the norm in front of a 16-bit matmul on float32
// rows: f32 is Apply (float32 out), toBF16 and toF16 are ApplyToBF16 and ApplyToF16 (one pass),
// twoPassBF16 is Apply into a float32 buffer followed by Float32ToBF16. SetBytes counts x read
// and a float32 y written for every form, so MB/s compare as speed-ups over the float32 call.
func BenchmarkApplyTo16(b *testing.B) {
	for _, k := range available {
		b.Run(k.name(), func(b *testing.B) {
			for _, form := range []string{"f32", "toBF16", "toF16", "twoPassBF16"} {
				b.Run(form, func(b *testing.B) {
					for _, s := range benchutil.Must("1x128,1x4096,2048x4096") {
						x, w := benchData(s)
						n := Norm{Weight: w, Eps: 1e-6}
						y := slices.Clone(x) // the output's pages exist before anything is timed
						y16 := narrowAll(x, formatBF16)
						var call func()
						switch form {
						case "f32":
							call = func() { n.Apply(Rows{Dst: y, X: x}) }
						case "toBF16":
							call = func() { n.ApplyToBF16(RowsTo16{Dst: y16, X: x}) }
						case "toF16":
							call = func() { n.ApplyToF16(RowsTo16{Dst: y16, X: x}) }
						case "twoPassBF16":
							call = func() { n.Apply(Rows{Dst: y, X: x}); Float32ToBF16(y16, y) }
						}
						b.Run(s.String(), func(b *testing.B) {
							withKernel(b, k)
							b.SetBytes(int64(8 * len(x)))
							b.ReportAllocs()
							for b.Loop() {
								call()
							}
						})
					}
				})
			}
		})
	}
}

// BenchmarkDstStride normalizes the 16 q heads of 2048 tokens from a fused QKV buffer (rows 4096
// floats apart, as in BenchmarkQKNorm) into a head-major buffer (head h of token t at
// (h*2048+t)*128): DstStride 128, one call per head (headmajor; headmajorBF16 with ApplyToBF16).
// strided writes the same rows into another buffer of the QKV layout (DstStride 0: Stride), the
// plain strided call DstStride is compared with.
func BenchmarkDstStride(b *testing.B) {
	const tokens, heads, headDim, width = qkTokens, qkHeads, qkHeadDim, qkWidth
	qkv, n := qkData()
	out := make([]float32, heads*tokens*headDim)
	out16 := make([]uint16, len(out))
	outQKV := make([]float32, len(qkv))
	for _, o := range [][]float32{out, outQKV} {
		copy(o, qkv) // the output's pages exist before anything is timed
	}
	Float32ToBF16(out16, out)
	for _, form := range []string{"strided", "headmajor", "headmajorBF16"} {
		b.Run(form+"/32768x128", func(b *testing.B) {
			b.SetBytes(int64(8 * tokens * heads * headDim))
			b.ReportAllocs()
			for b.Loop() {
				for h := 0; h < heads; h++ {
					q := qkv[h*headDim:]
					switch form {
					case "strided":
						n.Apply(Rows{Dst: outQKV[h*headDim:], X: q, N: tokens, Stride: width})
					case "headmajor":
						n.Apply(Rows{Dst: out[h*tokens*headDim:], X: q, N: tokens, Stride: width, DstStride: headDim})
					default:
						n.ApplyToBF16(RowsTo16{Dst: out16[h*tokens*headDim:], X: q, N: tokens, Stride: width, DstStride: headDim})
					}
				}
			}
		})
	}
}

// convertSizes are the element counts of BenchmarkConvert: in L1, in L2, in L3 and in memory.
var convertSizes = []int{4096, 65536, 1 << 20, 16 << 20}

// BenchmarkConvert/<kernel>/<op>/<n> runs each conversion on n elements with each kernel, and
// BenchmarkConvert/copy/<f32|u16>/<n> copies the destination's bytes; SetBytes counts the bytes
// written in both, so MB/s compare directly with copy() of the destination.
func BenchmarkConvert(b *testing.B) {
	ops := []struct {
		name string
		op   convOp
	}{{"bf16-to-f32", convWidenBF16}, {"f16-to-f32", convWidenF16}, {"f32-to-bf16", convNarrowBF16}, {"f32-to-f16", convNarrowF16}}
	for _, k := range available {
		b.Run(k.name(), func(b *testing.B) {
			for _, o := range ops {
				b.Run(o.name, func(b *testing.B) {
					for _, n := range convertSizes {
						f32 := make([]float32, n)
						fill(f32, normal, seedFor(n, 1))
						u16 := narrowAll(f32, formatBF16) // both buffers written: no zero pages
						b.Run(strconv.Itoa(n), func(b *testing.B) {
							withKernel(b, k)
							widen := o.op == convWidenBF16 || o.op == convWidenF16
							b.SetBytes(int64(map[bool]int{true: 4, false: 2}[widen] * n))
							for b.Loop() {
								switch o.op {
								case convWidenBF16:
									BF16ToFloat32(f32, u16)
								case convWidenF16:
									F16ToFloat32(f32, u16)
								case convNarrowBF16:
									Float32ToBF16(u16, f32)
								case convNarrowF16:
									Float32ToF16(u16, f32)
								}
							}
						})
					}
				})
			}
		})
	}
	b.Run("copy", func(b *testing.B) {
		for _, n := range convertSizes {
			src := make([]float32, n)
			fill(src, normal, seedFor(n, 1)) // an untouched src would read the zero page
			dst := slices.Clone(src)
			b.Run("f32/"+strconv.Itoa(n), func(b *testing.B) {
				b.SetBytes(int64(4 * n))
				for b.Loop() {
					copy(dst, src)
				}
			})
			s16 := narrowAll(src, formatBF16)
			d16 := slices.Clone(s16)
			b.Run("u16/"+strconv.Itoa(n), func(b *testing.B) {
				b.SetBytes(int64(2 * n))
				for b.Loop() {
					copy(d16, s16)
				}
			})
		}
	})
}

// BenchmarkBackward/<kernel>/<shape> runs Norm.Backward with Inv from the forward pass and DW,
// the call of a training step; SetBytes counts x and dy read and dx written. The targets
// compare it with BenchmarkForward of the same kernel and shape.
func BenchmarkBackward(b *testing.B) {
	for _, k := range available {
		b.Run(k.name(), func(b *testing.B) {
			benchBackward(b, k, func(w []float32, d int) Norm { return Norm{Weight: w, Eps: 1e-6} })
		})
	}
}

// BenchmarkBackwardForms/<kernel>/<form>/<shape> is BenchmarkBackward for the other weight forms:
// offset (UnitOffset, with DW) and unweighted (no weight, so no DW). The backward kernel has a
// main loop per form and shares the rest between them, so a change to one form's code shows here.
func BenchmarkBackwardForms(b *testing.B) {
	forms := []struct {
		name string
		norm func(w []float32, d int) Norm
	}{
		{"offset", func(w []float32, d int) Norm { return Norm{Weight: w, Eps: 1e-6, UnitOffset: true} }},
		{"unweighted", func(w []float32, d int) Norm { return Norm{Dim: d, Eps: 1e-6} }},
	}
	for _, k := range available {
		b.Run(k.name(), func(b *testing.B) {
			for _, f := range forms {
				b.Run(f.name, func(b *testing.B) { benchBackward(b, k, f.norm) })
			}
		})
	}
}

// benchBackward runs Norm.Backward with kernel k on every shape of benchShapes, for the Norm that
// norm makes of the shape's weight and row length: with Inv from the forward pass, and with DW
// when the Norm has a weight.
func benchBackward(b *testing.B, k kernelID, norm func(w []float32, d int) Norm) {
	for _, s := range benchShapes {
		x, w := benchData(s)
		dy := slices.Clone(x)
		fill(dy, normal, seedFor(s.Rows, s.D, 1))
		dx := slices.Clone(dy)
		inv := make([]float32, s.Rows)
		n := norm(w, s.D)
		var dw []float32
		if n.Weight != nil {
			dw = make([]float32, s.D)
		}
		n.Apply(Rows{Dst: dx, X: x, Inv: inv})
		b.Run(s.String(), func(b *testing.B) {
			withKernel(b, k)
			b.SetBytes(int64(12 * len(x)))
			b.ReportAllocs()
			for b.Loop() {
				n.Backward(Grad{DX: dx, X: x, DY: dy, Inv: inv, DW: dw})
			}
		})
	}
}

// BenchmarkWorkers/<workers>/<shape>/<forward|backward> runs Norm.Apply and Norm.Backward with
// Norm.Workers set, on the active kernel; "2-always" splits every call over two goroutines,
// whatever its size, which shows what a split costs where the threshold keeps calls on one
// goroutine (the README's Workers table comes from this benchmark).
func BenchmarkWorkers(b *testing.B) {
	shapes := benchutil.Must("16x4096,64x4096,128x4096,256x4096,512x4096,1024x4096,2048x4096,16384x4096,32768x128")
	for _, wk := range []string{"1", "2", "2-always"} {
		b.Run(wk, func(b *testing.B) {
			workers := 1
			if wk != "1" {
				workers = 2
			}
			for _, s := range shapes {
				x, w := benchData(s)
				y := slices.Clone(x)
				dy := slices.Clone(x)
				fill(dy, normal, seedFor(s.Rows, s.D, 1))
				dx := slices.Clone(dy)
				inv := make([]float32, s.Rows)
				dw := make([]float32, s.D)
				n := Norm{Weight: w, Eps: 1e-6, Workers: workers}
				n.Apply(Rows{Dst: y, X: x, Inv: inv})
				b.Run(s.String(), func(b *testing.B) {
					if wk == "2-always" {
						splitAll(b)
					}
					b.Run("forward", func(b *testing.B) {
						b.SetBytes(int64(8 * len(x)))
						for b.Loop() {
							n.Apply(Rows{Dst: y, X: x, Inv: inv})
						}
					})
					b.Run("backward", func(b *testing.B) {
						b.SetBytes(int64(12 * len(x)))
						for b.Loop() {
							n.Backward(Grad{DX: dx, X: x, DY: dy, Inv: inv, DW: dw})
						}
					})
				})
			}
		})
	}
}

// BenchmarkBF16Zeros/<kernel>/<form>/<row> narrows rows with exact zeros to bfloat16: a row of
// ordinary values, one with every twentieth element zero and an all-zero row (a padding token),
// 4096 elements, with ApplyToBF16 (float32 rows in) and ApplyBF16 (bfloat16 rows in). The
// narrowing of the avx512bf16 functions must not slow down on zeros, which a check of its output
// words would (see asm/amd64/bf16cvt.go).
func BenchmarkBF16Zeros(b *testing.B) {
	s := benchutil.Must("1x4096")[0]
	x, w := benchData(s)
	n := Norm{Weight: w, Eps: 1e-6}
	some := slices.Clone(x)
	for i := 0; i < len(some); i += 20 {
		some[i] = 0
	}
	rows := []struct {
		name string
		x    []float32
	}{{"values", x}, {"zeros5pct", some}, {"allZero", make([]float32, len(x))}}
	for _, k := range available {
		b.Run(k.name(), func(b *testing.B) {
			for _, form := range []string{"toBF16", "bf16"} {
				b.Run(form, func(b *testing.B) {
					for _, r := range rows {
						x16 := narrowAll(r.x, formatBF16)
						y16 := slices.Clone(x16)
						call := func() { n.ApplyToBF16(RowsTo16{Dst: y16, X: r.x}) }
						bytes := 6 * len(r.x) // float32 read, bfloat16 written
						if form == "bf16" {
							call = func() { n.ApplyBF16(Rows16{Dst: y16, X: x16}) }
							bytes = 4 * len(r.x)
						}
						b.Run(r.name, func(b *testing.B) {
							withKernel(b, k)
							b.SetBytes(int64(bytes))
							b.ReportAllocs()
							for b.Loop() {
								call()
							}
						})
					}
				})
			}
		})
	}
}
