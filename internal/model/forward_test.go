package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// TestForwardMatchesNaiveReference runs prefill and decode of random
// models of each supported variant and compares every logit with the
// float64 whole-sequence reference.
func TestForwardMatchesNaiveReference(t *testing.T) {
	base := testShape()
	with := func(f func(*Shape)) Shape { s := base; f(&s); return s }
	cases := []struct {
		name  string
		shape Shape
		caps  [2]float32 // attention, final logit soft-capping (Gemma)
	}{
		{"llama_gqa_untied", base, [2]float32{}},
		{"llama_tied_embeddings", with(func(s *Shape) { s.Tied = true }), [2]float32{}},
		{"llama_multi_head_no_gqa", with(func(s *Shape) { s.KVHeads = s.Heads }), [2]float32{}},
		{"llama_multi_query", with(func(s *Shape) { s.KVHeads = 1 }), [2]float32{}},
		{"mistral", with(func(s *Shape) { s.Arch = "mistral" }), [2]float32{}},
		{"qwen2_neox_rope_and_qkv_biases", with(func(s *Shape) { s.Arch = "qwen2" }), [2]float32{}},
		{"defaults_when_optional_keys_absent", with(func(s *Shape) { s.OmitOptionalKeys = true; s.KVHeads = s.Heads }), [2]float32{}},
		{"rope_base_100000", with(func(s *Shape) { s.RopeBase = 100000 }), [2]float32{}},
		{"linear_rope_scaling", with(func(s *Shape) { s.RopeScaling = "linear"; s.RopeScalingFactor = 4 }), [2]float32{}},
		{"llama3_rope_scaling", with(func(s *Shape) { s.RopeScaling = "llama3"; s.RopeScalingFactor = 8; s.Context = 64 }), [2]float32{}},
		// Caps below the typical score and logit sizes, so capping changes them.
		{"logit_soft_capping", base, [2]float32{0.05, 0.2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := buildFile(t, tc.shape, gguf.F32, 7)
			m, err := Load(f, Options{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			m.Config.AttnSoftcap, m.Config.FinalSoftcap = tc.caps[0], tc.caps[1]
			nm := naiveLoad(t, f, m.Config)
			rng := rand.New(rand.NewPCG(1, 2))
			tokens := randomTokens(rng, 20, m.Config.Vocab)
			want := nm.logits(tokens)
			kv, err := NewSimpleKV(&m.Config, 8, 4, gguf.F32)
			if err != nil {
				t.Fatal(err)
			}
			pages := pagesFor(rng, map[int32]bool{}, 5, 8)
			// 13 tokens of prefill in one chunk, then single-token decode.
			got := runPrompt(t, m, kv, pages, tokens[:13], 13)
			for i := 13; i < len(tokens); i++ {
				out, err := m.Forward(kv, []Seq{{Tokens: tokens[i : i+1], Pos: i, Pages: pages}})
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, append([]float32(nil), out[0]...))
			}
			maxDiff, maxAbs := 0.0, 0.0
			for i := range want {
				for j := range want[i] {
					maxDiff = math.Max(maxDiff, math.Abs(float64(got[i][j])-want[i][j]))
					maxAbs = math.Max(maxAbs, math.Abs(want[i][j]))
				}
			}
			if maxAbs < 0.05 {
				t.Fatalf("reference logits are all below %g: the test would not notice mistakes", maxAbs)
			}
			if maxDiff > 1e-4*(1+maxAbs) {
				t.Errorf("max |logit − reference| = %g (max |logit| %g)", maxDiff, maxAbs)
			}
			t.Logf("max diff %.3g, max |logit| %.3g", maxDiff, maxAbs)
		})
	}
}
