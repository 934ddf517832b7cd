package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
	"github.com/bulkhead-llm/bulkhead/internal/model"
	"github.com/bulkhead-llm/bulkhead/internal/sample"
)

// benchModel is a mid-sized random model: big enough that a step's matmuls
// dominate, small enough to build in a second.
var benchModel = sync.OnceValues(func() (*model.Model, error) {
	sh := model.Shape{Name: "bench", Arch: "llama", Embd: 512, Layers: 6, Heads: 8, KVHeads: 4, FF: 1536,
		Vocab: 8192, Context: 2048, RopeBase: 10000, NormEps: 1e-5, Tied: true}
	w := gguf.NewWriter()
	if err := model.WriteRandom(w, sh, gguf.Q8_0, 1, nil); err != nil {
		return nil, err
	}
	b, err := w.Bytes()
	if err != nil {
		return nil, err
	}
	f, err := gguf.Parse(b)
	if err != nil {
		return nil, err
	}
	return model.Load(f, model.Options{Threads: 2})
})

const (
	benchPrompt = 64
	benchGen    = 64
)

// BenchmarkDecode runs seqs concurrent requests (64-token prompts, 64
// generated tokens each) through the engine — scheduler, ownership checks
// on every page every step, sampling, event delivery — and reports
// generated tokens per second. BenchmarkDecodeRawModel runs the same
// batches straight through model.Forward with no scheduler and no checks;
// the ratio of the two is the engine's whole overhead.
func BenchmarkDecode(b *testing.B) {
	for _, seqs := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("seqs=%d", seqs), func(b *testing.B) {
			m, err := benchModel()
			if err != nil {
				b.Fatal(err)
			}
			pool, err := kvcache.New(kvcache.Config{DType: gguf.F16, Layers: m.Config.Layers, KVDim: m.Config.KVDim(), Tokens: 16 * 2048})
			if err != nil {
				b.Fatal(err)
			}
			e, err := New(Config{MaxContext: 2048, VocabSize: m.Config.Vocab, TokenBudget: 2048, MaxRunning: 16}, m, pool)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			rng := rand.New(rand.NewPCG(1, 1))
			start := time.Now()
			for range b.N {
				var wg sync.WaitGroup
				for range seqs {
					prompt := make([]int32, benchPrompt)
					for i := range prompt {
						prompt[i] = int32(rng.IntN(m.Config.Vocab))
					}
					ch, err := e.Submit(context.Background(), Request{Prompt: prompt, MaxTokens: benchGen, IgnoreEOS: true})
					if err != nil {
						b.Fatal(err)
					}
					wg.Go(func() {
						for range ch {
						}
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(b.N*seqs*benchGen)/time.Since(start).Seconds(), "gen-tok/s")
		})
	}
}

func BenchmarkDecodeRawModel(b *testing.B) {
	for _, seqs := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("seqs=%d", seqs), func(b *testing.B) {
			m, err := benchModel()
			if err != nil {
				b.Fatal(err)
			}
			const pageSize = 16
			per := (benchPrompt + benchGen + pageSize - 1) / pageSize
			kv, err := model.NewSimpleKV(&m.Config, seqs*per, pageSize, gguf.F16)
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 1))
			batch := make([]model.Seq, seqs)
			start := time.Now()
			for range b.N {
				for s := range batch {
					prompt := make([]int32, benchPrompt)
					for i := range prompt {
						prompt[i] = int32(rng.IntN(m.Config.Vocab))
					}
					pages := make([]int32, per)
					for i := range pages {
						pages[i] = int32(s*per + i)
					}
					batch[s] = model.Seq{Tokens: prompt, Pages: pages}
				}
				logits, err := m.Forward(kv, batch)
				if err != nil {
					b.Fatal(err)
				}
				for step := range benchGen - 1 {
					for s := range batch {
						batch[s].Pos = benchPrompt + step
						if step == 0 {
							batch[s].Pos = benchPrompt
						}
						batch[s].Tokens = []int32{sample.Greedy(logits[s])}
					}
					if logits, err = m.Forward(kv, batch); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N*seqs*benchGen)/time.Since(start).Seconds(), "gen-tok/s")
		})
	}
}
