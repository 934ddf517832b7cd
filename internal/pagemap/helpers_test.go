package pagemap

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
	"github.com/bulkhead-llm/bulkhead/internal/loader"
	"github.com/bulkhead-llm/bulkhead/internal/model"
)

// pacedForwarder runs the real model but, while pace is on, waits a little
// after each step, so requests stay in flight long enough for a browser to
// see their pages. It sets pace, never an assertion's deadline.
type pacedForwarder struct {
	m    *model.Model
	pace atomic.Bool
}

func (f *pacedForwarder) Forward(kv model.KVStore, seqs []model.Seq) ([][]float32, error) {
	if f.pace.Load() {
		time.Sleep(15 * time.Millisecond)
	}
	return f.m.Forward(kv, seqs)
}

// newEngine builds the copy model's engine over a 64-page pool of 16 tokens.
func newEngine(t *testing.T) (*engine.Engine, *pacedForwarder) {
	t.Helper()
	m, err := loader.Load(loader.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	po := loader.PoolOptions{MaxContext: 512, KVTokens: 1024, PageSize: 16}
	pc, err := m.PoolConfig(po)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := kvcache.New(pc)
	if err != nil {
		t.Fatal(err)
	}
	fwd := &pacedForwarder{m: m.Model}
	eng, err := engine.New(engine.Config{MaxContext: m.MaxContextFor(po), VocabSize: m.Model.Config.Vocab, EOG: m.EOG()}, fwd, pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	return eng, fwd
}

// submit starts a request of tenant with a short prompt (under one page, so
// nothing is sealed in the prefix cache) generating n tokens.
func submit(t *testing.T, eng *engine.Engine, tenant string, seed int32, n int) <-chan engine.Event {
	t.Helper()
	prompt := make([]int32, 10)
	for i := range prompt {
		prompt[i] = 100 + seed*10 + int32(i)
	}
	ch, err := eng.Submit(context.Background(), engine.Request{ID: tenant, Tenant: tenant, CacheSalt: []byte(tenant),
		Prompt: prompt, MaxTokens: n, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// drain waits for a request's stream to end and returns its final event.
func drain(ch <-chan engine.Event) engine.Event {
	var last engine.Event
	for ev := range ch {
		last = ev
	}
	return last
}
