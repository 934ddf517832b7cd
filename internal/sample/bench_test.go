package sample

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkSample50k samples from a 50k-token vocabulary with typical
// OpenAI-style settings.
func BenchmarkSample50k(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	logits := make([]float32, 50000)
	for i := range logits {
		logits[i] = float32(rng.NormFloat64() * 3)
	}
	for _, tc := range []struct {
		name string
		p    Params
	}{
		{"temperature_only", Params{Temperature: 0.8}},
		{"top_p_0.95", Params{Temperature: 0.8, TopP: 0.95}},
		{"top_k_40_min_p_0.05", Params{Temperature: 0.8, TopK: 40, MinP: 0.05}},
		{"greedy", Params{}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s, _ := New(tc.p)
			for b.Loop() {
				s.Sample(logits)
			}
		})
	}
}
