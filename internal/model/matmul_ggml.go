package model

import (
	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kernels"
)

// An emulation of ggml's CPU products with F32 and F16 weights, for test
// comparisons with llama.cpp (Options.GGMLFloatMatMul). ggml rounds the
// activations to F16 before an F16 matrix (its vec_dot_type), then:
//
//   - an operation over two or more tokens whose rows are a whole number
//     of 16 goes to llamafile's tinyBLAS: per (row, token) one 16-lane
//     accumulator, lane l a fused multiply-add chain over elements
//     ≡ l (mod 16), reduced as _mm512_reduce_add_ps;
//   - one token (decode, and llama.cpp's last layer FFN and output, which
//     it runs only for the tokens whose logits it returns) takes
//     ggml_vec_dot_f32 / ggml_vec_dot_f16: four 16-lane accumulators over
//     whole 64-element steps (dotF16GGML's order), the F32 tail added in
//     float32 with fused steps, the F16 tail in float64.
//
// Quantized matrices keep the kernels (their order is ggml's already),
// but for Q8_0, whose production order is that of ggml's repacked kernels
// (kernels.MatMulGGMLQ8 has its plain one), and the repacked types.
// The option also computes SwiGLU as ggml_vec_swiglu_f32 (swiglu).

// matmul is m.pool.MatMul, or the emulation for F32/F16 weights when
// enabled; nOp is the number of tokens llama.cpp's operation would have.
func (m *Model) matmul(out []float32, w *kernels.Matrix, x []float32, n, nOp int) {
	if m.ggmlRP && kernels.RepackedByGGML(w.Type, w.Rows) {
		// llama.cpp's operation holds the last nOp of the n tokens; its
		// first nOp − nOp%4 go to the repacked GEMM.
		first, gemmEnd := n-nOp, n-nOp+nOp-nOp%4
		m.pool.MatMulGGMLRepack(out, w, x, n, func(b int) bool { return b >= first && b < gemmEnd })
		return
	}
	if m.ggmlRP && w.Type == gguf.Q8_0 {
		m.pool.MatMulGGMLQ8(out, w, x, n) // llama.cpp's plain vec_dot order
		return
	}
	if !m.ggmlMM || (w.Type != gguf.F16 && w.Type != gguf.F32) {
		m.pool.MatMul(out, w, x, n)
		return
	}
	cols := w.Cols
	tiny := nOp >= 2 && cols%16 == 0
	xs := make([]float32, n*cols)
	copy(xs, x[:n*cols])
	if w.Type == gguf.F16 {
		for i, v := range xs {
			xs[i] = kernels.F16ToF32(kernels.F32ToF16(v))
		}
	}
	m.pool.Parallel(w.Rows, func(r int) {
		row := make([]float32, cols)
		w.DequantizeRow(row, r)
		for b := 0; b < n; b++ {
			xb := xs[b*cols : (b+1)*cols]
			var v float32
			switch {
			case tiny:
				v = dotTinyBLAS(row, xb)
			case w.Type == gguf.F16:
				v = dotVecF16(row, xb)
			default:
				v = dotVecF32(row, xb)
			}
			out[b*w.Rows+r] = v
		}
	})
}

// dotTinyBLAS is tinyBLAS's 16-lane order (len(x) a multiple of 16).
func dotTinyBLAS(w, x []float32) float32 {
	var acc [16]float32
	for k := 0; k < len(x); k += 16 {
		for l := range acc {
			acc[l] = fma32(w[k+l], x[k+l], acc[l])
		}
	}
	return reduce16(&acc)
}

// vecAcc4 runs ggml_vec_dot's four 16-lane accumulators over the whole
// 64-element steps and reduces them (0+2, 1+3, together, then 16 lanes);
// it returns the sum and where the tail starts.
func vecAcc4(w, x []float32) (float32, int) {
	np := len(x) &^ 63
	if np == 0 {
		return 0, 0
	}
	var acc [4][16]float32
	for i := 0; i < np; i += 64 {
		for a := 0; a < 4; a++ {
			for l := 0; l < 16; l++ {
				k := i + 16*a + l
				acc[a][l] = fma32(w[k], x[k], acc[a][l])
			}
		}
	}
	var r [16]float32
	for l := range r {
		r[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l])
	}
	return reduce16(&r), np
}

// dotVecF32 is ggml_vec_dot_f32 (AVX-512).
func dotVecF32(w, x []float32) float32 {
	s, np := vecAcc4(w, x)
	for i := np; i < len(x); i++ {
		s = fma32(w[i], x[i], s)
	}
	return s
}

// dotVecF16 is ggml_vec_dot_f16 (AVX-512) on values already F16.
func dotVecF16(w, x []float32) float32 {
	s, np := vecAcc4(w, x)
	sum := float64(s)
	for i := np; i < len(x); i++ {
		sum += float64(w[i] * x[i])
	}
	return float32(sum)
}

// swiglu is kernels.SwiGLU over rows of f values, or with the emulation
// ggml_vec_swiglu_f32 (AVX-512): per row, whole 16-lane chunks take
// x/(1+ggml_v_expf(−x))·g (vexpf), the rest x/(1+expf(−x))·g.
func (m *Model) swiglu(out, gate, up []float32, f int) {
	if !m.ggmlMM {
		kernels.SwiGLU(out, gate, up)
		return
	}
	for i, x := range gate {
		e := expf(-x)
		if i%f < f&^15 {
			e = vexpf(-x)
		}
		out[i] = x / (1 + e) * up[i]
	}
}
