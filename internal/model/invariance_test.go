package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"pgregory.net/rapid"
)

// sameBits reports the first index where a and b differ in any bit.
func sameBits(a, b []float32) (int, bool) {
	if len(a) != len(b) {
		return -1, false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i, false
		}
	}
	return 0, true
}

// seqPlan is one sequence of a batch-invariance trial: its prompt, the
// chunk size its prefill runs in, and its decode tokens.
type seqPlan struct {
	prompt, decode []int32
	chunk          int
}

// runAlone runs one sequence by itself: prefill in chunks, then decode,
// and returns the logits of its last prompt token and of every decode
// token.
func runAlone(t *rapid.T, m *Model, kv KVStore, pages []int32, sp seqPlan) [][]float32 {
	var out [][]float32
	for p := 0; p < len(sp.prompt); p += sp.chunk {
		end := min(p+sp.chunk, len(sp.prompt))
		res, err := m.Forward(kv, []Seq{{Tokens: sp.prompt[p:end], Pos: p, Pages: pages}})
		if err != nil {
			t.Fatal(err)
		}
		if end == len(sp.prompt) {
			out = append(out, append([]float32(nil), res[0]...))
		}
	}
	for i, tok := range sp.decode {
		res, err := m.Forward(kv, []Seq{{Tokens: []int32{tok}, Pos: len(sp.prompt) + i, Pages: pages}})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, append([]float32(nil), res[0]...))
	}
	return out
}

// runBatched runs all sequences together: each step takes the next chunk
// of every sequence still prefilling and the next decode token of every
// sequence past its prompt, in the order given by perm.
func runBatched(t *rapid.T, m *Model, kv KVStore, pages [][]int32, plans []seqPlan, perm []int) [][][]float32 {
	out := make([][][]float32, len(plans))
	done := make([]int, len(plans)) // tokens already run
	for {
		var seqs []Seq
		var who []int
		for _, i := range perm {
			sp := plans[i]
			total := len(sp.prompt) + len(sp.decode)
			if done[i] >= total {
				continue
			}
			var toks []int32
			if done[i] < len(sp.prompt) {
				toks = sp.prompt[done[i]:min(done[i]+sp.chunk, len(sp.prompt))]
			} else {
				toks = sp.decode[done[i]-len(sp.prompt) : done[i]-len(sp.prompt)+1]
			}
			seqs = append(seqs, Seq{Tokens: toks, Pos: done[i], Pages: pages[i]})
			who = append(who, i)
		}
		if len(seqs) == 0 {
			return out
		}
		res, err := m.Forward(kv, seqs)
		if err != nil {
			t.Fatal(err)
		}
		for k, i := range who {
			done[i] += len(seqs[k].Tokens)
			if done[i] >= len(plans[i].prompt) {
				out[i] = append(out[i], append([]float32(nil), res[k]...))
			}
		}
	}
}

// TestBatchInvariance is DESIGN I8 for the forward pass: a sequence's
// logits are bit-identical run alone (with its prefill in one chunk) or
// batched with random others, in a random order, with a random chunking of
// every prefill, on 1 or 2 threads, with F16 or F32 KV and quantized or
// float weights.
func TestBatchInvariance(t *testing.T) {
	type variant struct {
		name string
		typ  gguf.Type
		kv   gguf.Type
		arch string
	}
	variants := []variant{
		{"q8_0_weights_f16_kv", gguf.Q8_0, gguf.F16, "llama"},
		{"f16_weights_f32_kv_qwen2", gguf.F16, gguf.F32, "qwen2"},
		{"q4_0_weights_f16_kv", gguf.Q4_0, gguf.F16, "llama"},
	}
	if os.Getenv("BULKHEAD_SHORT") == "1" {
		variants = variants[:1] // the race pass: one variant is enough
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			sh := testShape()
			sh.Arch = v.arch
			f := buildFile(t, sh, v.typ, 11)
			m1, err := Load(f, Options{Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			m2, err := Load(f, Options{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			rapid.Check(t, func(rt *rapid.T) {
				n := rapid.IntRange(1, 5).Draw(rt, "seqs")
				plans := make([]seqPlan, n)
				seed := rapid.Uint64().Draw(rt, "seed")
				rng := rand.New(rand.NewPCG(seed, 3))
				for i := range plans {
					plans[i] = seqPlan{
						prompt: randomTokens(rng, rapid.IntRange(1, 40).Draw(rt, fmt.Sprintf("prompt%d", i)), sh.Vocab),
						decode: randomTokens(rng, rapid.IntRange(0, 4).Draw(rt, fmt.Sprintf("decode%d", i)), sh.Vocab),
						chunk:  rapid.IntRange(1, 41).Draw(rt, fmt.Sprintf("chunk%d", i)),
					}
				}
				ps := rapid.SampledFrom([]int{1, 3, 16}).Draw(rt, "pageSize")
				perm := rapid.Permutation(seqIndexes(n)).Draw(rt, "order")
				const totalPages = 64 * 3
				kvB, _ := NewSimpleKV(&m1.Config, totalPages, ps, v.kv)
				used := map[int32]bool{}
				pages := make([][]int32, n)
				for i, sp := range plans {
					pages[i] = pagesFor(rng, used, (len(sp.prompt)+len(sp.decode)+ps-1)/ps, totalPages)
				}
				batched := runBatched(rt, m2, kvB, pages, plans, perm)
				for i, sp := range plans {
					alone := sp
					alone.chunk = len(sp.prompt)
					kvA, _ := NewSimpleKV(&m1.Config, 48, 1, v.kv)
					want := runAlone(rt, m1, kvA, seqIndexes32(len(sp.prompt)+len(sp.decode)), alone)
					if len(want) != len(batched[i]) {
						rt.Fatalf("seq %d: %d logit rows alone, %d batched", i, len(want), len(batched[i]))
					}
					for j := range want {
						if k, ok := sameBits(want[j], batched[i][j]); !ok {
							rt.Fatalf("seq %d row %d: logit %d differs alone (%v) vs batched (%v)", i, j, k, want[j][k], batched[i][j][k])
						}
					}
				}
			})
		})
	}
}

func seqIndexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func seqIndexes32(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}
