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

// TestMatMulGGMLQ8 checks the llama.cpp-order Q8_0 product against
// dotQ32Ref's eight lanes, bit for bit, on every kernel set, for batches
// that meet each of its tiles (1, 4, 8 tokens and the tails), rows that are
// not a multiple of its chunk; and that it is not the production order
// (MatMul's), which would make the emulation a no-op.
func TestMatMulGGMLQ8(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 0))
	p := NewPool(2)
	defer p.Close()
	const rows, cols = 70, 256
	m := randMatrix(t, r, gguf.Q8_0, rows, cols)
	for _, batch := range []int{1, 3, 4, 8, 13, 17} {
		x := randVec(r, batch*cols, 1)
		a := prepareActivation(m.Type, x, batch, cols, nil)
		want := make([]float32, batch*rows)
		nb := cols / 32
		for row := 0; row < rows; row++ {
			for b := 0; b < batch; b++ {
				want[b*rows+row] = dotQ32Ref(gguf.Q8_0, m.row(row), a.qs[b*cols:(b+1)*cols], a.d[b*nb:(b+1)*nb], nil)
			}
		}
		putActivation(a)
		prod := make([]float32, batch*rows)
		p.MatMul(prod, m, x, batch)
		differ := 0
		for i := range want {
			if !sameBits(prod[i], want[i]) {
				differ++
			}
		}
		if differ == 0 {
			t.Errorf("batch %d: MatMul gave llama.cpp's plain Q8_0 order on all %d results", batch, len(want))
		}
		forEachKernelSet(t, func(name string) {
			got := make([]float32, batch*rows)
			p.MatMulGGMLQ8(got, m, x, batch)
			for i := range want {
				if !sameBits(got[i], want[i]) {
					t.Fatalf("%s batch %d [%d]: MatMulGGMLQ8 %g, dotQ32Ref %g", name, batch, i, got[i], want[i])
				}
			}
		})
	}
}
