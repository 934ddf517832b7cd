package model

import (
	"math/rand/v2"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// testShape is a small model whose every dimension differs, so a
// transposed or mis-strided access shows up as a wrong answer.
func testShape() Shape {
	return Shape{Name: "test", Arch: "llama", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FF: 96,
		Vocab: 50, Context: 256, RopeBase: 10000, NormEps: 1e-5, WeightStd: 0.15, NormJitter: 0.2}
}

// buildFile writes sh as a GGUF held in memory and parses it back.
func buildFile(t testing.TB, sh Shape, typ gguf.Type, seed uint64) *gguf.File {
	t.Helper()
	w := gguf.NewWriter()
	if err := WriteRandom(w, sh, typ, seed, nil); err != nil {
		t.Fatalf("WriteRandom: %v", err)
	}
	b, err := w.Bytes()
	if err != nil {
		t.Fatalf("Bytes: %v", err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return f
}

func buildModel(t testing.TB, sh Shape, typ gguf.Type, seed uint64, threads int) *Model {
	t.Helper()
	m, err := Load(buildFile(t, sh, typ, seed), Options{Threads: threads})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	t.Cleanup(m.Close)
	return m
}

func randomTokens(rng *rand.Rand, n, vocab int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(rng.IntN(vocab))
	}
	return out
}

// pagesFor returns a page table of n pages drawn without repeats from
// [0, total) in shuffled order, so logical and physical order differ.
func pagesFor(rng *rand.Rand, used map[int32]bool, n, total int) []int32 {
	out := make([]int32, 0, n)
	for len(out) < n {
		p := int32(rng.IntN(total))
		if !used[p] {
			used[p] = true
			out = append(out, p)
		}
	}
	return out
}

// runPrompt feeds tokens to a fresh sequence in chunks of chunk tokens and
// returns the logits of every token.
func runPrompt(t testing.TB, m *Model, kv KVStore, pages []int32, tokens []int32, chunk int) [][]float32 {
	t.Helper()
	var all [][]float32
	for p := 0; p < len(tokens); p += chunk {
		end := min(p+chunk, len(tokens))
		out, err := m.Forward(kv, []Seq{{Tokens: tokens[p:end], Pos: p, Pages: pages, AllLogits: true}})
		if err != nil {
			t.Fatalf("Forward: %v", err)
		}
		V := m.Config.Vocab
		for i := 0; i < end-p; i++ {
			all = append(all, append([]float32(nil), out[0][i*V:(i+1)*V]...))
		}
	}
	return all
}

// runPromptThenDecode runs tokens[:prompt] as one batch and the rest one
// token per step, as llama.cpp runs a prompt then decodes, returning every
// position's logits: the batch sizes choose ggml's attention path.
func runPromptThenDecode(t testing.TB, m *Model, kv KVStore, pages []int32, tokens []int32, prompt int) [][]float32 {
	t.Helper()
	// Only the prompt's last logits, as llama.cpp computes them (the count
	// of output tokens picks ggml's product path for the last layer).
	out, err := m.Forward(kv, []Seq{{Tokens: tokens[:prompt], Pages: pages}})
	if err != nil {
		t.Fatalf("Forward: %v", err)
	}
	all := make([][]float32, prompt-1, len(tokens))
	all = append(all, append([]float32(nil), out[0]...))
	for p := prompt; p < len(tokens); p++ {
		out, err := m.Forward(kv, []Seq{{Tokens: tokens[p : p+1], Pos: p, Pages: pages}})
		if err != nil {
			t.Fatalf("Forward: %v", err)
		}
		all = append(all, append([]float32(nil), out[0]...))
	}
	return all
}
