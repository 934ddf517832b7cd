package model

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

const sharedModels = "../../../shared/testdata/models"

type llamaCppReference struct {
	Results []struct {
		Prompt          string  `json:"prompt"`
		PromptTokens    []int32 `json:"prompt_tokens"`
		GeneratedTokens []int32 `json:"generated_tokens"`
		Steps           []struct {
			ID     int32   `json:"id"`
			Margin float64 `json:"top1_top2_margin"`
			Top    []struct {
				ID      int32   `json:"id"`
				Logprob float64 `json:"logprob"`
			} `json:"top"`
		} `json:"steps"`
	} `json:"results"`
}

// openTinyRandom loads llama-2-tiny-random.gguf and its llama.cpp
// reference outputs, skipping when the shared test data is absent.
func openTinyRandom(t *testing.T) (*gguf.File, *llamaCppReference) {
	t.Helper()
	path := filepath.Join(sharedModels, "llama-2-tiny-random.gguf")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("shared test data absent (%v): llama.cpp reference comparison skipped", err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	b, err := os.ReadFile(filepath.Join(sharedModels, "llama-2-tiny-random.reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref llamaCppReference
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	return f, &ref
}

func argmax(x []float32) int32 {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return int32(best)
}

func logSoftmaxAt(x []float32, ids ...int32) []float64 {
	mx := math.Inf(-1)
	for _, v := range x {
		mx = math.Max(mx, float64(v))
	}
	sum := 0.0
	for _, v := range x {
		sum += math.Exp(float64(v) - mx)
	}
	out := make([]float64, len(ids))
	for i, id := range ids {
		out[i] = float64(x[id]) - mx - math.Log(sum)
	}
	return out
}

// TestMatchesLlamaCppOnTinyRandom checks greedy tokens and top-5
// log-probabilities against llama.cpp's recorded outputs, for both KV
// cache types.
func TestMatchesLlamaCppOnTinyRandom(t *testing.T) {
	f, ref := openTinyRandom(t)
	m, err := Load(f, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.RopeBase != 10000 || m.Config.RopeDim != 4 || m.Config.TiedOutput {
		t.Fatalf("config %+v: want llama.cpp's defaults (rope base 10000, rope dims = head dim 4) and an untied output", m.Config)
	}
	for _, dt := range []gguf.Type{gguf.F16, gguf.F32} {
		for _, r := range ref.Results {
			t.Run(dt.String()+"/"+r.Prompt, func(t *testing.T) {
				kv, err := NewSimpleKV(&m.Config, 4, 16, dt)
				if err != nil {
					t.Fatal(err)
				}
				pages := []int32{2, 0, 3, 1}
				// Greedy: our own picks, compared while llama.cpp's margin is safe.
				out, err := m.Forward(kv, []Seq{{Tokens: r.PromptTokens, Pages: pages}})
				if err != nil {
					t.Fatal(err)
				}
				pos := len(r.PromptTokens)
				for j, st := range r.Steps {
					if st.Margin < 1e-3 {
						t.Logf("step %d: margin %.2g below 1e-3, greedy comparison stops", j, st.Margin)
						break
					}
					got := argmax(out[0])
					if got != r.GeneratedTokens[j] {
						t.Fatalf("step %d: greedy token %d, llama.cpp %d (margin %.3g)", j, got, r.GeneratedTokens[j], st.Margin)
					}
					if out, err = m.Forward(kv, []Seq{{Tokens: []int32{got}, Pos: pos, Pages: pages}}); err != nil {
						t.Fatal(err)
					}
					pos++
				}
				// Teacher-forced: llama.cpp's tokens, compare top-5 logprobs.
				kv2, _ := NewSimpleKV(&m.Config, 4, 16, dt)
				tokens := append(append([]int32(nil), r.PromptTokens...), r.GeneratedTokens...)
				all := runPrompt(t, m, kv2, pages, tokens, 5)
				worst := 0.0
				for j, st := range r.Steps {
					logits := all[len(r.PromptTokens)-1+j]
					for _, top := range st.Top {
						lp := logSoftmaxAt(logits, top.ID)[0]
						worst = math.Max(worst, math.Abs(lp-top.Logprob))
						if math.Abs(lp-top.Logprob) > 1e-3 {
							t.Errorf("step %d token %d: logprob %.6f, llama.cpp %.6f", j, top.ID, lp, top.Logprob)
						}
					}
				}
				t.Logf("worst logprob difference %.3g", worst)
			})
		}
	}
}
