package model

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// TestZooDiag prints per-step worst |Δ logprob| for BULKHEAD_DIAG files.
func TestZooDiag(t *testing.T) {
	names := os.Getenv("BULKHEAD_DIAG")
	if names == "" {
		t.Skip("BULKHEAD_DIAG unset")
	}
	for _, stem := range strings.Split(names, ",") {
		f, err := gguf.Open(filepath.Join(zooDir, stem+".gguf"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := Load(f, Options{Threads: 2, GGMLFlashAttention: true, GGMLRope: os.Getenv("BULKHEAD_DIAG_ROPE") != "0", GGMLFloatMatMul: os.Getenv("BULKHEAD_DIAG_MM") != "0", GGMLRepack: os.Getenv("BULKHEAD_DIAG_RP") != "0"})
		if err != nil {
			t.Fatal(err)
		}
		ref := readZooRef(t, stem+".reference.json")
		for _, r := range ref.Results {
			tokens := append(append([]int32(nil), r.PromptTokens...), r.GeneratedTokens...)
			kv, _ := NewSimpleKV(&m.Config, 1, 512, gguf.F16)
			var all [][]float32
			if os.Getenv("BULKHEAD_DIAG_ONE") == "1" {
				all = runPromptThenDecode1(t, m, kv, []int32{0}, tokens, len(r.PromptTokens))
			} else {
				all = runPromptThenDecode(t, m, kv, []int32{0}, tokens, len(r.PromptTokens))
			}
			line := ""
			worst := 0.0
			for j, st := range r.Steps {
				logits := all[len(r.PromptTokens)-1+j]
				w := 0.0
				for _, top := range st.Top {
					w = math.Max(w, math.Abs(logSoftmaxAt(logits, top.ID)[0]-top.Logprob))
				}
				line += fmt.Sprintf(" %.0e", w)
				worst = math.Max(worst, w)
			}
			if os.Getenv("BULKHEAD_DIAG_BRIEF") == "1" {
				line = ""
			}
			t.Logf("%s n=%d: worst %.2g%s", stem, len(r.PromptTokens), worst, line)
		}
		f.Close()
	}
}

func runPromptThenDecode1(t testing.TB, m *Model, kv KVStore, pages []int32, tokens []int32, prompt int) [][]float32 {
	all := runPrompt(t, m, kv, pages, tokens[:prompt], prompt)
	rest := runPromptFromAll(t, m, kv, pages, tokens, prompt)
	return append(all, rest...)
}

func runPromptFromAll(t testing.TB, m *Model, kv KVStore, pages []int32, tokens []int32, from int) [][]float32 {
	var out [][]float32
	for i := from; i < len(tokens); i++ {
		res, err := m.Forward(kv, []Seq{{Tokens: tokens[i : i+1], Pos: i, Pages: pages}})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, append([]float32(nil), res[0]...))
	}
	return out
}
