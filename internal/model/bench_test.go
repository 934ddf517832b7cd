package model

import (
	"math/rand/v2"
	"os"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// benchModel loads $BULKHEAD_BENCH_MODEL (e.g. a file written by
// "bulkhead mkmodel --shape smollm2-135m") or builds that shape in memory
// with a smaller vocabulary.
func benchModel(b *testing.B) *Model {
	b.Helper()
	if path := os.Getenv("BULKHEAD_BENCH_MODEL"); path != "" {
		f, err := gguf.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		m, err := Load(f, Options{Threads: 2})
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	sh := Shapes["smollm2-135m"]
	sh.Vocab = 8192
	return buildModel(b, sh, gguf.Q8_0, 1, 2)
}

// BenchmarkPrefill512 runs one 512-token prompt in one forward (pp512).
func BenchmarkPrefill512(b *testing.B) {
	m := benchModel(b)
	kv, _ := NewSimpleKV(&m.Config, 32, 16, gguf.F16)
	tokens := randomTokens(rand.New(rand.NewPCG(1, 1)), 512, m.Config.Vocab)
	pages := seqIndexes32(32)
	b.ResetTimer()
	for b.Loop() {
		if _, err := m.Forward(kv, []Seq{{Tokens: tokens, Pages: pages}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(512*b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkDecodeFromEmpty runs single-token steps of a sequence that
// starts empty and is restarted every 128 tokens (llama-bench's tg128).
func BenchmarkDecodeFromEmpty(b *testing.B) {
	m := benchModel(b)
	kv, _ := NewSimpleKV(&m.Config, 8, 16, gguf.F16)
	tokens := randomTokens(rand.New(rand.NewPCG(1, 1)), 128, m.Config.Vocab)
	pages := seqIndexes32(8)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		pos := i % 128
		if _, err := m.Forward(kv, []Seq{{Tokens: tokens[pos : pos+1], Pos: pos, Pages: pages}}); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkDecodeAt512 runs single-token steps after a 512-token prompt,
// where attention over the cache is a visible share of the step.
func BenchmarkDecodeAt512(b *testing.B) {
	m := benchModel(b)
	kv, _ := NewSimpleKV(&m.Config, 48, 16, gguf.F16)
	tokens := randomTokens(rand.New(rand.NewPCG(1, 1)), 640, m.Config.Vocab)
	pages := seqIndexes32(48)
	if _, err := m.Forward(kv, []Seq{{Tokens: tokens[:512], Pages: pages}}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		pos := 512 + i%128
		if _, err := m.Forward(kv, []Seq{{Tokens: tokens[pos : pos+1], Pos: pos, Pages: pages}}); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkDecodeBatch16 runs one step of 16 sequences each decoding one
// token at position 256: the weights are read once for all of them.
func BenchmarkDecodeBatch16(b *testing.B) {
	m := benchModel(b)
	kv, _ := NewSimpleKV(&m.Config, 16*17, 16, gguf.F16)
	seqs := make([]Seq, 16)
	for i := range seqs {
		pages := make([]int32, 17)
		for j := range pages {
			pages[j] = int32(i*17 + j)
		}
		seqs[i] = Seq{Tokens: []int32{int32(i)}, Pos: 256, Pages: pages}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := m.Forward(kv, seqs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(16*b.N)/b.Elapsed().Seconds(), "tokens/s")
}
