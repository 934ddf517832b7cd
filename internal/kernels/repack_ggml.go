package kernels

import "github.com/bulkhead-llm/bulkhead/internal/gguf"

// An emulation of the float order of ggml-cpu's repacked x86 kernels, for
// test comparisons with llama.cpp only (model.Options.GGMLRepack); no
// production path calls it, and the production kernels keep their own
// order (the package comment).
//
// On an x86 CPU with AVX2 (AVX-512 for Q2_K) llama.cpp repacks, at load,
// every 2-D (or expert 3-D) matrix of these types whose row count is a
// multiple of 8 into eight interleaved rows (q4_0_8x8, iq4_nl_8x8 with Q8_0
// activations; q4_K_8x8, q2_K_8x8 with Q8_K), and multiplies with its own
// GEMV (one token) and GEMM (four tokens at a time) kernels. Their integer
// sums are exact, like the plain kernels'; what differs is the float step.
// Each output element has one float32 accumulator (no eight lanes, no
// final reduction), fed by fused multiply-adds of an exact integer partial
// sum converted to float32 times the rounded product d_w×d_x:
//
//   - Q4_0, IQ4_NL (GEMV and GEMM alike): one step per 32-value block.
//   - Q4_K, Q2_K GEMV: one step per 256-value super-block for the scaled
//     sum Σ sc×q×x and, in a second accumulator, one for the min term
//     Σ m×bsum times dmin×d_x; the result is acc − accMin.
//   - Q4_K GEMM: the same, but one step per 64 values (two sub-blocks);
//     Q2_K GEMM one step per 128 values (eight sub-blocks).
//
// The activation quantization is the plain one: ggml's 4-row interleaved
// quantizers (quantize_mat q8_0 4x8 and q8_K 4x8) compute the same scales
// and values as quantize_row_q8_0 / q8_K.
//
// Which kernel a token meets depends on llama.cpp's operation: a
// mul_mat of n tokens sends the first n − n%4 to the GEMM and the rest to
// the GEMV; mul_mat_id (the MoE experts) uses the GEMV for every token.

// RepackedByGGML reports whether llama.cpp's CPU backend on an AVX-512 x86
// machine repacks a matrix of type t with rows rows (MatMulGGMLRepack).
func RepackedByGGML(t gguf.Type, rows int) bool {
	switch t {
	case gguf.Q4_0, gguf.IQ4_NL, gguf.Q4_K, gguf.Q2_K:
		return rows%8 == 0
	}
	return false
}

// MatMulGGMLRepack is MatMul in the order of ggml's repacked kernels
// (see above); gemm(b) reports whether token b went to the GEMM kernel.
// m must be a type RepackedByGGML accepts.
func (p *Pool) MatMulGGMLRepack(out []float32, m *Matrix, x []float32, batch int, gemm func(b int) bool) {
	if batch <= 0 || m.Rows == 0 {
		return
	}
	a := prepareActivation(m.Type, x, batch, m.Cols, nil)
	defer putActivation(a)
	useGEMM := make([]bool, batch)
	for b := range useGEMM {
		useGEMM[b] = gemm(b)
	}
	p.Parallel(m.Rows, func(r int) {
		w := m.row(r)
		for b := 0; b < batch; b++ {
			out[b*m.Rows+r] = dotRepackGGML(m.Type, w, a, b, useGEMM[b])
		}
	})
}

// dotRepackGGML is one (row, token) product in the repacked kernels' order.
func dotRepackGGML(t gguf.Type, w []byte, a *activation, b int, gemm bool) float32 {
	cols := a.cols
	xq := a.qs[b*cols : (b+1)*cols]
	if a.block == 32 {
		nb := cols / 32
		return dotQ32Blocks(t, w, xq, a.d[b*nb:(b+1)*nb])
	}
	nb := cols / 256
	xd := a.d[b*nb : (b+1)*nb]
	bsum := a.bsum[b*cols/16 : (b+1)*cols/16]
	span := 256 // values per float step
	if gemm {
		span = 64
		if t == gguf.Q2_K {
			span = 128
		}
	}
	var k kBlock
	var acc, accMin float32
	for s := 0; s < nb; s++ {
		decodeK(t, w[t.BlockBytes()*s:t.BlockBytes()*(s+1)], &k)
		x := xq[256*s : 256*s+256]
		dd, dm := k.dw*xd[s], k.dmw*xd[s]
		for g := 0; g < 256; g += span {
			var A, M int32
			for j := g / 16; j < (g+span)/16; j++ {
				var p int32
				for e := 16 * j; e < 16*j+16; e++ {
					p += int32(k.q[e]) * int32(x[e])
				}
				A += k.sv[j] * p
				M += k.mv[j] * int32(bsum[16*s+j])
			}
			acc = fma32(float32(A), dd, acc)
			accMin = fma32(float32(M), dm, accMin)
		}
	}
	return acc - accMin
}

// MatMulGGMLQ8 is MatMul for a Q8_0 matrix in the order of llama.cpp's
// plain Q8_0 vec_dot, which its x86 CPU backend uses (it does not repack
// Q8_0): eight integer lanes per block, each fused into its own float
// lane, then hsum8 (dotQ32Ref). For test comparisons with llama.cpp only
// (model.Options.GGMLRepack); production Q8_0 takes dotQ32Blocks' order.
// On amd64 the pre-packing Q8_0 row kernels compute it, from m.Data.
func (p *Pool) MatMulGGMLQ8(out []float32, m *Matrix, x []float32, batch int) {
	if batch <= 0 || m.Rows == 0 {
		return
	}
	a := prepareActivation(m.Type, x, batch, m.Cols, p)
	defer putActivation(a)
	const chunk = 64
	p.Parallel((m.Rows+chunk-1)/chunk, func(i int) {
		ggmlQ8Rows(out, m, a, i*chunk, min(m.Rows, (i+1)*chunk))
	})
}

// ggmlQ8RowsRef is MatMulGGMLQ8's rows in Go.
func ggmlQ8RowsRef(out []float32, m *Matrix, a *activation, r0, r1 int) {
	nb := a.cols / 32
	for r := r0; r < r1; r++ {
		for b := 0; b < a.batch; b++ {
			out[b*m.Rows+r] = dotQ32Ref(m.Type, m.row(r), a.qs[b*a.cols:(b+1)*a.cols], a.d[b*nb:(b+1)*nb], nil)
		}
	}
}
