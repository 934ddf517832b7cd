package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
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
	return model.LoadRandom(sh, gguf.Q8_0, 1, model.Options{Threads: 2})
})

const (
	benchPrompt  = 64
	benchGen     = 64
	benchContext = 2048
)

// benchPool is the engine's KV pool; the raw benchmark writes into the
// same kind of store, so the two differ by the engine alone.
func benchPool(b *testing.B, m *model.Model) *kvcache.Pool {
	pool, err := kvcache.New(kvcache.Config{DType: gguf.F16, Layers: m.Config.Layers, KVDim: m.Config.KVDim(), Tokens: 16 * benchContext})
	if err != nil {
		b.Fatal(err)
	}
	return pool
}

// timedForwarder adds up the time the engine spends inside the forward
// pass, so a benchmark can split a round's wall time into the model's share
// and the engine's own, in the same interval whatever the machine's load.
// It also keeps the start time of every call when starts is non-nil.
type timedForwarder struct {
	m     *model.Model
	busy  atomic.Int64 // nanoseconds inside Forward
	calls atomic.Int64

	mu     sync.Mutex
	starts *[]time.Time
}

func (f *timedForwarder) Forward(kv model.KVStore, seqs []model.Seq) ([][]float32, error) {
	t := time.Now()
	f.mu.Lock()
	if f.starts != nil {
		*f.starts = append(*f.starts, t)
	}
	f.mu.Unlock()
	defer func() { f.busy.Add(int64(time.Since(t))); f.calls.Add(1) }()
	return f.m.Forward(kv, seqs)
}

// stepIntervals appends the time from each forward pass's start to the
// next one's, the first (after the prefill) left out: decode steps.
func stepIntervals(dst []float64, starts []time.Time) []float64 {
	for i := 2; i < len(starts); i++ {
		dst = append(dst, starts[i].Sub(starts[i-1]).Seconds())
	}
	return dst
}

func median(v []float64) float64 {
	slices.Sort(v)
	mid := len(v) / 2
	if len(v)%2 == 0 {
		return (v[mid-1] + v[mid]) / 2
	}
	return v[mid]
}

func benchEngine(b *testing.B) (*model.Model, *Engine, *timedForwarder) {
	m, err := benchModel()
	if err != nil {
		b.Fatal(err)
	}
	fwd := &timedForwarder{m: m}
	e, err := New(Config{MaxContext: benchContext, VocabSize: m.Config.Vocab, TokenBudget: 2048, MaxRunning: 16}, fwd, benchPool(b, m))
	if err != nil {
		b.Fatal(err)
	}
	return m, e, fwd
}

func randomPrompt(rng *rand.Rand, vocab int) []int32 {
	p := make([]int32, benchPrompt)
	for i := range p {
		p[i] = int32(rng.IntN(vocab))
	}
	return p
}

// engineRound runs seqs concurrent requests (64-token prompt, 64 generated
// tokens each) through e to the end of every stream.
func engineRound(b *testing.B, e *Engine, rng *rand.Rand, seqs int) {
	var wg sync.WaitGroup
	for range seqs {
		ch, err := e.Submit(context.Background(), Request{Prompt: randomPrompt(rng, e.cfg.VocabSize), MaxTokens: benchGen, IgnoreEOS: true})
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

// rawRound runs the batches the engine runs for engineRound — one prefill
// of every prompt, then benchGen-1 decode steps of one greedy token per
// sequence — straight through model.Forward on kv, pages 1.. in order.
func rawRound(b *testing.B, m *model.Model, kv model.KVStore, rng *rand.Rand, batch []model.Seq) {
	rawRoundTimed(b, m, kv, rng, batch, nil)
}

// rawRoundTimed is rawRound keeping each forward pass's start in starts.
func rawRoundTimed(b *testing.B, m *model.Model, kv model.KVStore, rng *rand.Rand, batch []model.Seq, starts *[]time.Time) {
	mark := func() {
		if starts != nil {
			*starts = append(*starts, time.Now())
		}
	}
	const pageSize = 16
	per := (benchPrompt + benchGen + pageSize - 1) / pageSize
	for s := range batch {
		pages := make([]int32, per)
		for i := range pages {
			pages[i] = int32(1 + s*per + i) // page 0 is the pool's sentinel
		}
		batch[s] = model.Seq{Tokens: randomPrompt(rng, m.Config.Vocab), Pages: pages}
	}
	mark()
	logits, err := m.Forward(kv, batch)
	if err != nil {
		b.Fatal(err)
	}
	for step := range benchGen - 1 {
		for s := range batch {
			batch[s].Pos = benchPrompt + step
			batch[s].Tokens = []int32{sample.Greedy(logits[s])}
		}
		mark()
		if logits, err = m.Forward(kv, batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecode runs seqs concurrent requests through the engine —
// scheduler, ownership checks on every page every step, sampling, event
// delivery — and reports generated tokens per second. BenchmarkDecodeRawModel
// runs the same batches straight through model.Forward on the same kind of
// KV store with no scheduler and no checks. Their speeds come from separate
// runs: on a shared machine use BenchmarkDecodeRatio, which interleaves them.
func BenchmarkDecode(b *testing.B) {
	for _, seqs := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("seqs=%d", seqs), func(b *testing.B) {
			_, e, fwd := benchEngine(b)
			defer e.Close()
			rng := rand.New(rand.NewPCG(1, 1))
			b.ResetTimer() // the pool's allocation is setup, not decode
			for range b.N {
				engineRound(b, e, rng, seqs)
			}
			b.ReportMetric(float64(b.N*seqs*benchGen)/b.Elapsed().Seconds(), "gen-tok/s")
			b.ReportMetric(time.Duration(fwd.busy.Load()).Seconds()/b.Elapsed().Seconds(), "fwd-share")
			// The raw benchmark runs benchGen forward passes a round; more
			// here means the engine split the batch (requests arriving
			// while a step ran).
			b.ReportMetric(float64(fwd.calls.Load())/float64(b.N), "fwd/round")
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
			kv := benchPool(b, m)
			rng := rand.New(rand.NewPCG(1, 1))
			batch := make([]model.Seq, seqs)
			b.ResetTimer()
			for range b.N {
				rawRound(b, m, kv, rng, batch)
			}
			b.ReportMetric(float64(b.N*seqs*benchGen)/b.Elapsed().Seconds(), "gen-tok/s")
		})
	}
}

// BenchmarkDecodeRatio runs an engine round and a raw round back to back
// (in turn first) for every op and reports engine/raw, the fraction of the
// raw forward speed the engine keeps, two ways: from each pair's round
// times (the median over the pairs), and step-engine/raw from the median
// decode step (forward start to forward start, over every pair's steps),
// which a burst of other load on the shared machine moves much less. Use
// -benchtime Nx for N pairs. fwd-share is the engine rounds' time inside
// model.Forward over their wall time.
func BenchmarkDecodeRatio(b *testing.B) {
	for _, seqs := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("seqs=%d", seqs), func(b *testing.B) {
			m, e, fwd := benchEngine(b)
			defer e.Close()
			kv := benchPool(b, m)
			rng := rand.New(rand.NewPCG(1, 1))
			batch := make([]model.Seq, seqs)
			var engine, raw time.Duration
			var ratios, engineSteps, rawSteps []float64
			var engineStarts, rawStarts []time.Time
			fwd.mu.Lock()
			fwd.starts = &engineStarts
			fwd.mu.Unlock()
			runE := func() time.Duration {
				fwd.mu.Lock()
				engineStarts = engineStarts[:0]
				fwd.mu.Unlock()
				t := time.Now()
				engineRound(b, e, rng, seqs)
				d := time.Since(t)
				fwd.mu.Lock()
				engineSteps = stepIntervals(engineSteps, engineStarts)
				fwd.mu.Unlock()
				return d
			}
			runR := func() time.Duration {
				rawStarts = rawStarts[:0]
				t := time.Now()
				rawRoundTimed(b, m, kv, rng, batch, &rawStarts)
				d := time.Since(t)
				rawSteps = stepIntervals(rawSteps, rawStarts)
				return d
			}
			b.ResetTimer()
			for i := range b.N {
				var de, dr time.Duration
				if i%2 == 0 {
					de, dr = runE(), runR()
				} else {
					dr, de = runR(), runE()
				}
				engine, raw = engine+de, raw+dr
				ratios = append(ratios, dr.Seconds()/de.Seconds())
			}
			toks := float64(b.N * seqs * benchGen)
			b.ReportMetric(toks/engine.Seconds(), "engine-tok/s")
			b.ReportMetric(toks/raw.Seconds(), "raw-tok/s")
			b.ReportMetric(median(ratios), "engine/raw")
			b.ReportMetric(median(rawSteps)/median(engineSteps), "step-engine/raw")
			b.ReportMetric(time.Duration(fwd.busy.Load()).Seconds()/engine.Seconds(), "fwd-share")
		})
	}
}

// BenchmarkDecodeSteady measures one engine decode step of seqs running
// sequences (an op is one token from every stream) once prefill is behind
// them; its allocs/op are the steady-state decode allocations of the
// engine, scheduler, pool and model together.
func BenchmarkDecodeSteady(b *testing.B) {
	for _, seqs := range []int{1, 16} {
		b.Run(fmt.Sprintf("seqs=%d", seqs), func(b *testing.B) {
			_, e, _ := benchEngine(b)
			defer e.Close()
			rng := rand.New(rand.NewPCG(1, 1))
			streams := make([]<-chan Event, seqs)
			submit := func(i int) {
				ch, err := e.Submit(context.Background(), Request{Prompt: randomPrompt(rng, e.cfg.VocabSize),
					MaxTokens: benchContext - benchPrompt, IgnoreEOS: true})
				if err != nil {
					b.Fatal(err)
				}
				streams[i] = ch
			}
			next := func(i int) {
				for {
					if ev, ok := <-streams[i]; ok && ev.Err == nil && ev.Finish == nil {
						return
					} else if ev.Err != nil {
						b.Fatal(ev.Err)
					}
					submit(i) // context full: a rare restart, amortised over ~2000 steps
				}
			}
			for i := range streams {
				submit(i)
			}
			for range 4 { // past the prefill step
				for i := range streams {
					next(i)
				}
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			for range b.N {
				for i := range streams {
					next(i)
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			// allocs/op rounds down; this keeps the fraction (restarts at a
			// full context included).
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N), "mallocs/step")
		})
	}
}
