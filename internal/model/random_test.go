package model

import (
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// TestQ4KMGivesQ6KWhereLlamaCppDoes checks the recipe on the 16 layers of
// the llama-1b shape: Q6_K attn_v and ffn_down in layers 0, 1, 4, 7, 10,
// 13, 14 and 15 (the first and last two, and every third from layer 4), as
// llama.cpp's Q4_K_M files of Llama-3.2-1B have them; the tied token_embd
// is the output and gets Q6_K.
func TestQ4KMGivesQ6KWhereLlamaCppDoes(t *testing.T) {
	want := map[int]bool{0: true, 1: true, 4: true, 7: true, 10: true, 13: true, 14: true, 15: true}
	for i := range 16 {
		for _, role := range []string{"attn_v", "ffn_down", "attn_q", "ffn_up"} {
			got := Q4KM.Type(role, i, 16, true)
			exp := gguf.Q4_K
			if want[i] && (role == "attn_v" || role == "ffn_down") {
				exp = gguf.Q6_K
			}
			if got != exp {
				t.Errorf("layer %d %s: %s, want %s", i, role, got, exp)
			}
		}
	}
	if got := Q4KM.Type("token_embd", -1, 16, true); got != gguf.Q6_K {
		t.Errorf("tied token_embd: %s, want Q6_K", got)
	}
	if got := Q4KM.Type("token_embd", -1, 16, false); got != gguf.Q4_K {
		t.Errorf("untied token_embd: %s, want Q4_K", got)
	}
}
