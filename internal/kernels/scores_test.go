package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// TestScoresF16EqualsMatMul checks ScoresF16 on transposed keys against
// MatMul on the same keys as the rows of an F16 matrix, bit for bit, in
// every kernel set: head sizes with and without a tail past the last
// multiple of eight (and one with no full eight), key counts around the
// sixteen-key blocks, one to seven queries (the three-query kernel and its
// remainder). Scores past n in each output row must stay untouched.
func TestScoresF16EqualsMatMul(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	forEachKernelSet(t, func(name string) {
		for _, hd := range []int{64, 128, 80, 12, 8, 4} {
			for _, n := range []int{1, 7, 15, 16, 17, 33, 100} {
				for _, nq := range []int{1, 2, 3, 4, 5, 7} {
					ld, ldo := (n+7)&^7+8, n+5
					keys := make([]byte, 2*n*hd)
					kt := make([]uint16, hd*ld)
					for k := 0; k < n; k++ {
						for d := 0; d < hd; d++ {
							h := F32ToF16(float32(r.NormFloat64()))
							binary.LittleEndian.PutUint16(keys[2*(k*hd+d):], h)
							kt[d*ld+k] = h
						}
					}
					q := randVec(r, nq*hd, 1)
					m, err := NewMatrix(gguf.F16, n, hd, keys)
					if err != nil {
						t.Fatal(err)
					}
					want := make([]float32, nq*n)
					MatMulRef(want, m, q, nq)
					got := make([]float32, nq*ldo)
					for i := range got {
						got[i] = float32(math.NaN())
					}
					ScoresF16(got, ldo, kt, ld, n, hd, q, nq)
					for i := 0; i < nq; i++ {
						for k := 0; k < ldo; k++ {
							g := got[i*ldo+k]
							if k >= n {
								if !math.IsNaN(float64(g)) {
									t.Fatalf("%s hd %d n %d nq %d: wrote out[%d][%d] past the keys", name, hd, n, nq, i, k)
								}
								continue
							}
							if w := want[i*n+k]; !sameBits(g, w) {
								t.Fatalf("%s (fast %v) hd %d n %d nq %d: score[%d][%d] = %g, MatMul %g", name, ScoresF16Fast(), hd, n, nq, i, k, g, w)
							}
						}
					}
				}
			}
		}
		t.Logf("kernel set %s (assembly scores %v): ScoresF16 bit-equal to MatMul", name, ScoresF16Fast())
	})
}

// BenchmarkScoresF16 is one attention task's scores on one thread: a
// prefill block of 32 queries or a decode step's one query against 512
// keys, head size 64; ScoresF16 on transposed keys against MatMul on
// row-major ones, in GFLOP/s.
func BenchmarkScoresF16(b *testing.B) {
	const hd, n = 64, 512
	r := rand.New(rand.NewPCG(63, 64))
	keys := make([]byte, 2*n*hd)
	kt := make([]uint16, hd*n)
	for k := 0; k < n; k++ {
		for d := 0; d < hd; d++ {
			h := F32ToF16(float32(r.NormFloat64()))
			binary.LittleEndian.PutUint16(keys[2*(k*hd+d):], h)
			kt[d*n+k] = h
		}
	}
	m, err := NewMatrix(gguf.F16, n, hd, keys)
	if err != nil {
		b.Fatal(err)
	}
	p := NewPool(1)
	defer p.Close()
	for _, nq := range []int{32, 1} {
		q := randVec(r, nq*hd, 1)
		out := make([]float32, nq*n)
		flop := float64(2 * hd * n * nq)
		b.Run(fmt.Sprintf("q%d/transposed", nq), func(b *testing.B) {
			for b.Loop() {
				ScoresF16(out, n, kt, n, n, hd, q, nq)
			}
			b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		b.Run(fmt.Sprintf("q%d/matmul", nq), func(b *testing.B) {
			for b.Loop() {
				p.MatMul(out, m, q, nq)
			}
			b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
