package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// BenchmarkTypes is one 2048×2048 matrix (a Llama-3.2-1B projection) per
// weight type on one thread, decode (batch 1) and prefill (batch 64), for
// the assembly path ("fast") and the pure-Go reference ("ref"), reporting
// weight bandwidth: MB/s (wall clock) and GB/cpu-s (per CPU-second of this
// process, steadier on the shared machine). Compare fast and ref within one
// run only.
func BenchmarkTypes(b *testing.B) {
	r := rand.New(rand.NewPCG(31, 32))
	p := NewPool(1)
	defer p.Close()
	for _, typ := range []gguf.Type{gguf.Q5_K, gguf.Q5_0, gguf.Q8_0, gguf.IQ4_XS, gguf.Q4_1, gguf.Q5_1,
		gguf.IQ4_NL, gguf.Q3_K, gguf.Q2_K, gguf.Q4_0, gguf.Q4_K, gguf.Q6_K} {
		m := randMatrix(b, r, typ, 2048, 2048)
		for _, batch := range []int{1, 64} {
			x := randVec(r, batch*2048, 1)
			out := make([]float32, batch*2048)
			for _, impl := range []string{"fast", "ref"} {
				b.Run(fmt.Sprintf("%s/b%d/%s", typ, batch, impl), func(b *testing.B) {
					b.SetBytes(int64(len(m.Data)))
					c0 := cpuTime()
					for b.Loop() {
						if impl == "fast" {
							p.MatMul(out, m, x, batch)
						} else {
							MatMulRef(out, m, x, batch)
						}
					}
					if d := cpuTime() - c0; d > 0 {
						b.ReportMetric(float64(len(m.Data))*float64(b.N)/d.Seconds()/1e9, "GB/cpu-s")
					}
				})
			}
		}
	}
}
