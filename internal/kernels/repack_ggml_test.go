package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// TestMatMulGGMLRepack checks the emulation of ggml's repacked kernels
// (repack_ggml.go): the same exact integer sums as the reference, so the
// results agree with MatMulRef to float rounding; a token's result does not
// depend on the other tokens of the batch; and Q4_0/IQ4_NL, whose GEMM and
// GEMV take one step per block alike, give the same bits on both paths,
// while Q4_K and Q2_K (one step per 64/128 values in the GEMM, 256 in the
// GEMV) do not.
func TestMatMulGGMLRepack(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 15))
	p := NewPool(2)
	defer p.Close()
	const rows, cols, batch = 16, 512, 5
	for _, typ := range []gguf.Type{gguf.Q4_0, gguf.IQ4_NL, gguf.Q4_K, gguf.Q2_K} {
		if !RepackedByGGML(typ, rows) || RepackedByGGML(typ, rows+4) {
			t.Fatalf("%s: RepackedByGGML must require rows divisible by 8", typ)
		}
		m := randMatrix(t, r, typ, rows, cols)
		x := randVec(r, batch*cols, 1)
		ref := make([]float32, batch*rows)
		MatMulRef(ref, m, x, batch)
		gemm := make([]float32, batch*rows)
		gemv := make([]float32, batch*rows)
		p.MatMulGGMLRepack(gemm, m, x, batch, func(int) bool { return true })
		p.MatMulGGMLRepack(gemv, m, x, batch, func(int) bool { return false })
		differ := 0
		for i := range ref {
			scale := math.Max(1, math.Abs(float64(ref[i])))
			if d := math.Abs(float64(gemm[i]-ref[i])) / scale; d > 1e-5 {
				t.Errorf("%s [%d]: repack GEMM %g, reference %g", typ, i, gemm[i], ref[i])
			}
			if !sameBits(gemm[i], gemv[i]) {
				differ++
			}
		}
		one := make([]float32, rows)
		p.MatMulGGMLRepack(one, m, x[3*cols:4*cols], 1, func(int) bool { return true })
		for j := range one {
			if !sameBits(one[j], gemm[3*rows+j]) {
				t.Fatalf("%s: token 3 alone %g, in the batch %g", typ, one[j], gemm[3*rows+j])
			}
		}
		sameOrder := typ == gguf.Q4_0 || typ == gguf.IQ4_NL
		if sameOrder && differ > 0 || !sameOrder && differ == 0 {
			t.Errorf("%s: GEMM and GEMV differ on %d of %d results", typ, differ, len(ref))
		}
	}
}
