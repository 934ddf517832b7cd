package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
	"github.com/bulkhead-llm/bulkhead/internal/model"
	"github.com/bulkhead-llm/bulkhead/internal/sample"
)

const testVocab = 256

var (
	tinyOnce  sync.Once
	tinyModel *model.Model
	tinyErr   error
)

// tiny returns a small random-weight llama model shared by the tests.
func tiny(t testing.TB) *model.Model {
	t.Helper()
	tinyOnce.Do(func() {
		sh := model.Shapes["tiny"]
		sh.Vocab, sh.WeightStd = testVocab, 0.3
		tinyModel, tinyErr = model.LoadRandom(sh, gguf.F32, 7, model.Options{Threads: 2})
	})
	if tinyErr != nil {
		t.Fatal(tinyErr)
	}
	return tinyModel
}

func newPool(t testing.TB, m *model.Model, tokens, pageSize int) *kvcache.Pool {
	t.Helper()
	p, err := kvcache.New(kvcache.Config{PageSize: pageSize, DType: gguf.F16, Layers: m.Config.Layers,
		KVDim: m.Config.KVDim(), Tokens: tokens, PoisonFreed: true})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newEngine(t testing.TB, cfg Config, tokens, pageSize int) *Engine {
	t.Helper()
	m := tiny(t)
	if cfg.MaxContext == 0 {
		cfg.MaxContext = 256
	}
	cfg.VocabSize = m.Config.Vocab
	e, err := New(cfg, m, newPool(t, m, tokens, pageSize))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Close()
		if err := e.Pool().CheckDrained(); err != nil {
			t.Errorf("after close: %v", err)
		}
	})
	return e
}

// gatedForwarder runs the first forward step freely and every later one
// only when the test lets it (Step, or Free for all that follow), so a test
// can look at a live request without racing the engine to the request's end.
type gatedForwarder struct {
	m     *model.Model
	steps chan struct{}
	once  sync.Once
	ran   bool // touched only by the engine's loop goroutine
}

func (g *gatedForwarder) Forward(kv model.KVStore, seqs []model.Seq) ([][]float32, error) {
	if g.ran {
		<-g.steps
	}
	g.ran = true
	return g.m.Forward(kv, seqs)
}

// Step lets one forward step run; it returns once the engine has begun it.
func (g *gatedForwarder) Step() { g.steps <- struct{}{} }

// Free lets every later step run.
func (g *gatedForwarder) Free() { g.once.Do(func() { close(g.steps) }) }

// waitCancelPosted waits, while the gate holds the engine's loop, until
// context.AfterFunc's goroutine has posted a cancellation to the mailbox.
func waitCancelPosted(t *testing.T, e *Engine) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.mu.Lock()
		n := len(e.mailbox)
		e.mu.Unlock()
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the cancellation never reached the mailbox")
		}
		time.Sleep(time.Millisecond)
	}
}

// newGatedEngine is newEngine over a gatedForwarder.
func newGatedEngine(t *testing.T, tokens, pageSize int) (*Engine, *gatedForwarder) {
	t.Helper()
	m := tiny(t)
	g := &gatedForwarder{m: m, steps: make(chan struct{})}
	e, err := New(Config{MaxContext: 256, VocabSize: m.Config.Vocab}, g, newPool(t, m, tokens, pageSize))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.Free()
		e.Close()
		if err := e.Pool().CheckDrained(); err != nil {
			t.Errorf("after close: %v", err)
		}
	})
	return e, g
}

// result is everything a request produced.
type result struct {
	tokens   []int32
	logprobs []float32
	top      [][]TokenLogprob
	finish   *Finish
	err      error
}

func collect(ch <-chan Event) result {
	var r result
	for ev := range ch {
		switch {
		case ev.Err != nil:
			r.err = ev.Err
		case ev.Finish != nil:
			r.finish = ev.Finish
		default:
			r.tokens = append(r.tokens, ev.Token)
			r.logprobs = append(r.logprobs, ev.Logprob)
			r.top = append(r.top, ev.TopLogprobs)
		}
	}
	return r
}

func run(t testing.TB, e *Engine, req Request) result {
	t.Helper()
	ch, err := e.Submit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return collect(ch)
}

func randPrompt(rng *rand.Rand, n int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(rng.IntN(testVocab))
	}
	return p
}

// waitDrained polls until the engine has retired every request: events are
// delivered before the loop finishes its bookkeeping for the step.
func waitDrained(t *testing.T, e *Engine) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := e.Stats()
		err := e.Pool().CheckDrained()
		if st.Running+st.Waiting == 0 && err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not drained: %+v: %v", st, err)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestGreedyMatchesDirectForwardLoop(t *testing.T) {
	m := tiny(t)
	e := newEngine(t, Config{}, 1024, 16)
	prompt := randPrompt(rand.New(rand.NewPCG(1, 2)), 40)
	got := run(t, e, Request{Prompt: prompt, MaxTokens: 12, IgnoreEOS: true})
	if got.err != nil || got.finish == nil || got.finish.Reason != FinishLength {
		t.Fatalf("err %v finish %+v", got.err, got.finish)
	}
	// Reference: the model alone, contiguous F16 KV, one token at a time.
	kv, err := model.NewSimpleKV(&m.Config, 8, 16, gguf.F16)
	if err != nil {
		t.Fatal(err)
	}
	pages := []int32{0, 1, 2, 3, 4, 5, 6, 7}
	toks := slices.Clone(prompt)
	var want []int32
	for len(want) < 12 {
		pos := 0
		in := toks
		if len(want) > 0 {
			pos, in = len(toks)-1, toks[len(toks)-1:]
		}
		logits, err := m.Forward(kv, []model.Seq{{Tokens: in, Pos: pos, Pages: pages}})
		if err != nil {
			t.Fatal(err)
		}
		next := sample.Greedy(logits[0])
		want = append(want, next)
		toks = append(toks, next)
	}
	if !slices.Equal(got.tokens, want) {
		t.Fatalf("engine tokens %v, direct forward %v", got.tokens, want)
	}
	if got.finish.Usage.PromptTokens != 40 || got.finish.Usage.CompletionTokens != 12 {
		t.Errorf("usage %+v", got.finish.Usage)
	}
	waitDrained(t, e)
}

// TestBatchAndHistoryInvariance is DESIGN I8: a request's greedy tokens and
// logprobs are bit-identical alone on a fresh engine and batched with other
// tenants' traffic that arrived before and during it.
func TestBatchAndHistoryInvariance(t *testing.T) {
	n := 50
	if os.Getenv("BULKHEAD_SHORT") != "" {
		n = 12
	}
	rng := rand.New(rand.NewPCG(3, 4))
	reqs := make([]Request, n)
	for i := range reqs {
		reqs[i] = Request{Tenant: fmt.Sprintf("t%d", i%3), Prompt: randPrompt(rng, 1+rng.IntN(90)),
			MaxTokens: 1 + rng.IntN(12), IgnoreEOS: true, Logprobs: true, TopLogprobs: 3}
	}
	alone := make([]result, n)
	for i, r := range reqs {
		e := newEngine(t, Config{}, 1024, 16)
		alone[i] = run(t, e, r)
		if alone[i].err != nil {
			t.Fatal(alone[i].err)
		}
	}
	// Together: long prompts from a noisy tenant first, then every request
	// at random moments; a small token budget forces chunked prefill mixed
	// with decodes, and a small pool forces preemption.
	e := newEngine(t, Config{TokenBudget: 48, MaxRunning: 8}, 512, 8)
	var wg sync.WaitGroup
	for i := range 4 {
		// Submitted here, together, so that they overlap and outgrow the
		// pool; collected concurrently.
		noise := Request{Tenant: "noisy", Prompt: randPrompt(rng, 150), MaxTokens: 100, IgnoreEOS: true}
		ch, err := e.Submit(context.Background(), noise)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if r := collect(ch); r.err != nil {
				t.Errorf("noise %d: %v", i, r.err)
			}
		})
	}
	together := make([]result, n)
	for i, r := range reqs {
		delay := time.Duration(rng.IntN(2000)) * time.Microsecond
		wg.Go(func() {
			time.Sleep(delay)
			together[i] = run(t, e, r)
		})
	}
	wg.Wait()
	for i := range reqs {
		a, b := alone[i], together[i]
		if b.err != nil {
			t.Fatalf("request %d batched: %v", i, b.err)
		}
		if !slices.Equal(a.tokens, b.tokens) || !slices.Equal(a.logprobs, b.logprobs) {
			t.Fatalf("request %d differs batched:\nalone    %v %v\ntogether %v %v", i, a.tokens, a.logprobs, b.tokens, b.logprobs)
		}
		for s := range a.top {
			if !slices.Equal(a.top[s], b.top[s]) {
				t.Fatalf("request %d step %d top logprobs differ: %v vs %v", i, s, a.top[s], b.top[s])
			}
		}
	}
	// The pool (512 tokens) is smaller than the noisy tenant's four
	// 250-token requests, and they outgrow the one page of headroom each
	// that admission keeps, so recompute-preemption must have happened.
	if e.Stats().Preemptions == 0 {
		t.Error("no preemption happened; the test no longer covers recompute")
	}
	waitDrained(t, e)
}

func TestOversizedPromptIsRejectedBeforeAnyAllocation(t *testing.T) {
	e := newEngine(t, Config{MaxContext: 128}, 512, 16)
	free := e.Pool().FreePages()
	for _, n := range []int{128, 129, 1000} {
		_, err := e.Submit(context.Background(), Request{Prompt: make([]int32, n), MaxTokens: 1})
		var cl *ContextLengthError
		if !errors.As(err, &cl) || cl.PromptTokens != n || cl.Limit != 127 {
			t.Fatalf("prompt %d: err %v, want ContextLengthError{%d, 127}", n, err, n)
		}
		if !strings.Contains(err.Error(), fmt.Sprint(n)) || !strings.Contains(err.Error(), "127") {
			t.Errorf("message %q does not name both numbers", err)
		}
	}
	if e.Pool().FreePages() != free {
		t.Fatalf("free pages %d → %d after rejections", free, e.Pool().FreePages())
	}
	// The longest prompt that fits is served, and the context clips output.
	r := run(t, e, Request{Prompt: make([]int32, 127), MaxTokens: 50, IgnoreEOS: true})
	if r.err != nil || len(r.tokens) != 1 || r.finish.Reason != FinishLength {
		t.Fatalf("127-token prompt: %d tokens, %+v, %v", len(r.tokens), r.finish, r.err)
	}
}

func TestInvalidRequestsAreRejected(t *testing.T) {
	e := newEngine(t, Config{}, 512, 16)
	for name, req := range map[string]Request{
		"empty prompt":        {MaxTokens: 1},
		"zero max tokens":     {Prompt: []int32{1}},
		"negative max tokens": {Prompt: []int32{1}, MaxTokens: -5},
		"token beyond vocab":  {Prompt: []int32{1, testVocab}, MaxTokens: 1},
		"negative token":      {Prompt: []int32{-1}, MaxTokens: 1},
		"bad temperature":     {Prompt: []int32{1}, MaxTokens: 1, Sampling: Sampling{Temperature: -1}},
		"bad top logprobs":    {Prompt: []int32{1}, MaxTokens: 1, TopLogprobs: 99},
	} {
		if _, err := e.Submit(context.Background(), req); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%s: err %v, want ErrInvalidRequest", name, err)
		}
	}
}

func TestPoolSmallerThanContextRefusesToStart(t *testing.T) {
	m := tiny(t)
	_, err := New(Config{MaxContext: 4096, VocabSize: testVocab}, m, newPool(t, m, 1024, 16))
	if err == nil || !strings.Contains(err.Error(), "4096") || !strings.Contains(err.Error(), "1024") {
		t.Fatalf("err = %v, want a refusal naming 4096 and 1024", err)
	}
}

func TestCancelAbortsAndFreesPages(t *testing.T) {
	e, gate := newGatedEngine(t, 1024, 16)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := e.Submit(ctx, Request{Prompt: randPrompt(rand.New(rand.NewPCG(5, 6)), 50), MaxTokens: 200, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	<-ch // at least one token: the request holds pages now
	cancel()
	waitCancelPosted(t, e)
	gate.Free() // the gate held it live until the cancel was posted: it cannot have finished
	r := collect(ch)
	if !errors.Is(r.err, ErrAborted) {
		t.Fatalf("after cancel: err %v finish %+v", r.err, r.finish)
	}
	waitDrained(t, e)
}

func TestStopTokenEndsWithReasonStop(t *testing.T) {
	e := newEngine(t, Config{}, 1024, 16)
	prompt := randPrompt(rand.New(rand.NewPCG(8, 9)), 20)
	free := run(t, e, Request{Prompt: prompt, MaxTokens: 6, IgnoreEOS: true})
	stopAt := free.tokens[2]
	r := run(t, e, Request{Prompt: prompt, MaxTokens: 6, StopTokens: []int32{stopAt}, IgnoreEOS: true})
	i := slices.Index(free.tokens, stopAt)
	if r.finish == nil || r.finish.Reason != FinishStop || !slices.Equal(r.tokens, free.tokens[:i+1]) {
		t.Fatalf("with stop %d: %v %+v; unstopped %v", stopAt, r.tokens, r.finish, free.tokens)
	}
}

func TestCloseEndsLiveRequests(t *testing.T) {
	m := tiny(t)
	e, err := New(Config{MaxContext: 256, VocabSize: testVocab}, m, newPool(t, m, 1024, 16))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := e.Submit(context.Background(), Request{Prompt: []int32{1, 2, 3}, MaxTokens: 250, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	<-ch
	e.Close()
	if r := collect(ch); !errors.Is(r.err, ErrShuttingDown) && r.finish == nil {
		t.Fatalf("after close: %+v", r)
	}
	if _, err := e.Submit(context.Background(), Request{Prompt: []int32{1}, MaxTokens: 1}); !errors.Is(err, ErrShuttingDown) {
		t.Fatalf("submit after close: %v", err)
	}
	if err := e.Pool().CheckDrained(); err != nil {
		t.Fatal(err)
	}
}

func TestSeededSamplingIsReproducible(t *testing.T) {
	e := newEngine(t, Config{}, 1024, 16)
	req := Request{Prompt: []int32{5, 6, 7}, MaxTokens: 16, IgnoreEOS: true, Sampling: Sampling{Temperature: 1.5, Seed: 42}}
	a, b := run(t, e, req), run(t, e, req)
	if !slices.Equal(a.tokens, b.tokens) {
		t.Fatalf("same seed gave %v and %v", a.tokens, b.tokens)
	}
}
