package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kernels"
)

// TestTransposedKeysKeepEveryBit runs prompts (in chunks spanning several
// query blocks, after earlier chunks' keys; blocks of 32 and 6 queries use
// both the three-query kernel and the one-query remainder) and decode
// steps (one query: row-major keys either way, multiQuery) with the F16
// keys gathered transposed for kernels.ScoresF16 and row by row for
// MatMul: every logit must keep its bits. Head sizes 16 and 12 (a tail
// past the last eight columns).
func TestTransposedKeysKeepEveryBit(t *testing.T) {
	if !kernels.ScoresF16Fast() {
		t.Skip("skipped: ScoresF16 has no assembly kernel on this CPU, so the model keeps MatMul's row-major keys")
	}
	for _, heads := range []int{4, 6} {
		sh := testShape()
		sh.Embd, sh.Heads, sh.KVHeads = 48+4*heads, heads, heads/2 // head size 16 or 12
		if heads == 4 {
			sh.Embd = 64
		}
		m := buildModel(t, sh, gguf.F16, 11, 2)
		rng := rand.New(rand.NewPCG(5, 6))
		tokens := randomTokens(rng, 110, m.Config.Vocab)
		pages := pagesFor(rng, map[int32]bool{}, 8, 24)
		run := func(transposed bool) [][]float32 {
			transposedKeys = transposed
			defer func() { transposedKeys = true }()
			kv, err := NewSimpleKV(&m.Config, 24, 16, gguf.F16)
			if err != nil {
				t.Fatal(err)
			}
			got := runPrompt(t, m, kv, pages, tokens[:100], 70)
			for p := 100; p < len(tokens); p++ {
				out, err := m.Forward(kv, []Seq{{Tokens: tokens[p : p+1], Pos: p, Pages: pages}})
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, append([]float32(nil), out[0]...))
			}
			return got
		}
		rowMajor, transposed := run(false), run(true)
		for i := range rowMajor {
			for j := range rowMajor[i] {
				if math.Float32bits(rowMajor[i][j]) != math.Float32bits(transposed[i][j]) {
					t.Fatalf("head size %d, token %d logit %d: %g with transposed keys, %g row by row",
						m.Config.HeadDim, i, j, transposed[i][j], rowMajor[i][j])
				}
			}
		}
		t.Logf("head size %d: %d positions, every logit bit-equal", m.Config.HeadDim, len(rowMajor))
	}
}
