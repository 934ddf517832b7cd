package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// TestTinyRandomMatchesLlamaCpp checks prompts (with and without BOS), the
// pieces and the streamed text of generated tokens against what llama.cpp
// recorded for llama-2-tiny-random.gguf.
func TestTinyRandomMatchesLlamaCpp(t *testing.T) {
	dir := needTestdata(t)
	raw, err := os.ReadFile(filepath.Join(dir, "models", "llama-2-tiny-random.reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Results []struct {
			Prompt            string  `json:"prompt"`
			PromptTokens      []int32 `json:"prompt_tokens"`
			PromptTokensNoBOS []int32 `json:"prompt_tokens_no_bos"`
			GeneratedTokens   []int32 `json:"generated_tokens"`
			GeneratedText     string  `json:"generated_text"`
			Steps             []struct {
				ID    int32 `json:"id"`
				Bytes []int `json:"bytes"`
			} `json:"steps"`
		} `json:"results"`
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Results) == 0 {
		t.Fatal("reference has no results")
	}
	f, err := gguf.Open(filepath.Join(dir, "models", "llama-2-tiny-random.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ref.Results {
		t.Run(r.Prompt, func(t *testing.T) {
			if got := tok.Encode(r.Prompt, true, true); !slices.Equal(got, r.PromptTokens) {
				t.Errorf("with BOS: got %v, want %v", got, r.PromptTokens)
			}
			if got := tok.Encode(r.Prompt, false, true); !slices.Equal(got, r.PromptTokensNoBOS) {
				t.Errorf("without BOS: got %v, want %v", got, r.PromptTokensNoBOS)
			}
			if got := tok.Decode(r.PromptTokens); got != r.Prompt {
				t.Errorf("Decode(prompt tokens) = %q, want %q", got, r.Prompt)
			}
			d := tok.NewDecoder()
			var text string
			for _, id := range r.GeneratedTokens {
				text += d.Add(id)
			}
			text += d.Flush()
			if text != r.GeneratedText {
				t.Errorf("streamed generation = %q, want %q", text, r.GeneratedText)
			}
			if len(r.Steps) != len(r.GeneratedTokens) {
				t.Fatalf("%d steps for %d generated tokens", len(r.Steps), len(r.GeneratedTokens))
			}
			for _, s := range r.Steps {
				want := make([]byte, len(s.Bytes))
				for i, b := range s.Bytes {
					want[i] = byte(b)
				}
				if got := tok.Piece(s.ID); !slices.Equal(got, want) {
					t.Errorf("Piece(%d) = %v, want %v", s.ID, got, want)
				}
			}
		})
	}
}
