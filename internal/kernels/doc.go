// Package kernels holds bulkhead's CPU compute kernels: matrix–vector and
// matrix–matrix products over GGML weight encodings (F32, F16, BF16, Q8_0,
// Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS), the
// small vector operations of a Llama layer, and the F16 conversions of the
// KV cache.
//
// Every operation has a pure-Go reference. On amd64 CPUs with AVX2, FMA and
// F16C a Go-assembly fast path is chosen once, at package initialisation —
// the "avx512" set where AVX-512 F/BW/VL/VNNI is present (its decode row
// kernels in rows_avx512_amd64.s, and F16 rows on a copy packed four rows
// to a line, f16pack.go), else "avx2"; other machines run the
// reference. BULKHEAD_KERNELS=avx512|avx2|ref forces a set (select.go).
//
// Batch invariance (DESIGN.md I8) is built into the arithmetic, not checked
// after the fact. The reduction order of one (row, token) dot product is
// fixed by a single definition shared by both paths:
//
//   - Q8_0 has one float32 accumulator: per 32-value block the exact
//     integer sum of the block's products, converted, times d_w×d_x, in
//     one fused multiply-add (dotQ32Blocks; llama.cpp's repacked-kernel
//     order). Its row kernels read the matrix repacked at load, eight rows
//     to a vector (q8pack.go).
//   - The other types accumulate into eight float32 lanes with fused
//     multiply-adds. For float weights lane l takes elements l, l+8, l+16, ….
//     For the other 32-value block types, lane l takes the exact integer sum of
//     elements 4l..4l+3 times d_w×d_x, and Q4_1/Q5_1's min term m_w×s_x
//     goes to one scalar sum added after the lanes (dotQ32Ref). For the
//     K-quants, per 256-value super-block, lane l takes the exact integer
//     sum over the eight 32-value groups of (sub-block scale × elements
//     4l..4l+3) times d×d_x, and the min/offset term goes to one scalar
//     accumulator subtracted at the end (dotKRef) — except Q6_K, whose
//     offset 32×(sc[2l]·bsum[2l] + sc[2l+1]·bsum[2l+1]) is subtracted from
//     lane l's integer before the conversion, with no scalar accumulator
//     (ggml_vec_dot_q6_K_q8_K). These are the lanes of ggml's AVX2 vec_dot
//     kernels.
//   - The eight lanes are then summed pairwise in one fixed tree
//     ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), and any columns left over past a
//     multiple of eight are added one by one with fused multiply-adds.
//   - Quantized weights are multiplied with the activation quantized per
//     token as ggml quantizes it for that weight type (Q8_0 with an F16
//     scale, Q8_1, or Q8_K; see activation.go); integer sums are exact, so
//     only the float steps above carry rounding.
//
// The reference emulates a correctly rounded float32 fused multiply-add
// (fma32), so the assembly and the reference agree bit for bit — no
// tolerances anywhere — and a (row, token) result does not depend on the
// batch it ran in, its position there, the tile shape that computed it
// (8, 4 or 1 tokens; 1, 2, 3 or 8 rows) or the number of threads.
//
// Softmax and SwiGLU use exp32, a float32 exponential (Cephes polynomial,
// within a few ulps of e^x) whose vector form is likewise bit-identical to
// the scalar one.
//
// Files: blocks.go (GGML block layouts, Matrix, dequantization),
// quantize.go (encoders), activation.go (per-token int8 activations),
// dequant.go (the later types' layouts), dot_ref.go (the reference dot
// products), fma.go (fma32, hsum8), ops.go
// and exp.go (vector operations), f16.go (conversions), pool.go and
// matmul.go (threads and MatMul), dispatch.go and cpu_*.go (the one-time
// choice); *_amd64.s the assembly and rows*_amd64.go, matk_amd64.go its
// tiling (rowsx_amd64.go unpacks the later types for it).
// Build with -tags noasm to run the reference on amd64.
package kernels
