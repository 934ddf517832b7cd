package sched

import (
	"fmt"
	"math"
	"slices"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
)

// tb is what the helpers need from *testing.T, *testing.B and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

const vocab = 50

// newTestPool makes an F32 pool of n pages of ps slots, one layer, KVDim 2,
// poisoning freed pages so a read after free shows up as NaN.
func newTestPool(t tb, n, ps int) *kvcache.Pool {
	t.Helper()
	p, err := kvcache.New(kvcache.Config{PageSize: ps, DType: gguf.F32, Layers: 1, KVDim: 2, Tokens: n * ps, PoisonFreed: true})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newTestScheduler(t tb, pages, ps int, cfg Config) (*Scheduler, *kvcache.Pool) {
	t.Helper()
	pool := newTestPool(t, pages, ps)
	s, err := New(cfg, pool)
	if err != nil {
		t.Fatal(err)
	}
	return s, pool
}

// nextToken is the fake model's output: a hash of every token before it.
func nextToken(toks []int32) int32 {
	h := uint32(2166136261)
	for _, t := range toks {
		h = (h ^ uint32(t)) * 16777619
	}
	return int32(h%vocab) + 1
}

// reference is what a request must produce, computed without any KV cache.
func reference(r Request, maxContext int) []int32 {
	toks := slices.Clone(r.Prompt)
	var out []int32
	for {
		tok := nextToken(toks)
		out = append(out, tok)
		toks = append(toks, tok)
		if slices.Contains(r.Stop, tok) || len(out) >= r.MaxTokens || len(toks) >= maxContext {
			return out
		}
	}
}

// fakeForward runs a plan like a model whose output depends exactly on its
// KV cache: it stores each token in its slot, then derives the sampled token
// from what the pages hold for positions [0, Pos+len(Tokens)).
func fakeForward(pool *kvcache.Pool, plan *Plan) ([]int32, error) {
	ps := pool.PageSize()
	out := make([]int32, len(plan.Items))
	for i, it := range plan.Items {
		for j, tok := range it.Tokens {
			pos := it.Pos + j
			k, _ := pool.PageF32(0, int(it.Pages[pos/ps]))
			k[(pos%ps)*2] = float32(tok)
		}
		if !it.Sample {
			continue
		}
		seen := make([]int32, it.Pos+len(it.Tokens))
		for pos := range seen {
			k, _ := pool.PageF32(0, int(it.Pages[pos/ps]))
			x := k[(pos%ps)*2]
			if math.IsNaN(float64(x)) {
				return nil, fmt.Errorf("request %d read a freed slot at position %d", it.ID, pos)
			}
			seen[pos] = int32(x)
		}
		out[i] = nextToken(seen)
	}
	return out, nil
}

// run is a tiny engine: it steps until nothing is left, collecting each
// request's tokens, and calls each after every completed step.
type run struct {
	s       *Scheduler
	pool    *kvcache.Pool
	out     map[uint64][]int32
	final   map[uint64]State
	evicted int
	mixed   bool // some step ran a decode and a prefill chunk together
}

func newRun(s *Scheduler, pool *kvcache.Pool) *run {
	return &run{s: s, pool: pool, out: map[uint64][]int32{}, final: map[uint64]State{}}
}

func (r *run) submit(t tb, req Request) {
	t.Helper()
	a, err := Admit(req, r.s.Limits())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.s.Submit(a); err != nil {
		t.Fatal(err)
	}
}

// step runs one Step/forward/Complete round and returns the plan.
func (r *run) step(t tb) *Plan {
	t.Helper()
	plan, err := r.s.Step()
	if err != nil {
		t.Fatal(err)
	}
	r.evicted += len(plan.Evicted)
	decode, prefill := false, false
	for _, it := range plan.Items {
		decode = decode || len(it.Tokens) == 1 && it.Pos > 0 && it.Sample
		prefill = prefill || len(it.Tokens) > 1
	}
	r.mixed = r.mixed || decode && prefill
	for _, a := range plan.Aborted {
		r.final[a.ID] = StateAborted
	}
	sampled, err := fakeForward(r.pool, plan)
	if err != nil {
		t.Fatal(err)
	}
	ups, err := r.s.Complete(sampled)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range ups {
		if u.HasToken {
			r.out[u.ID] = append(r.out[u.ID], u.Token)
		}
		if !u.State.Live() {
			r.final[u.ID] = u.State
		}
	}
	return plan
}

// drain steps until the scheduler is idle, failing after limit steps.
func (r *run) drain(t tb, limit int) {
	t.Helper()
	for i := 0; r.s.Running()+r.s.Waiting() > 0; i++ {
		if i == limit {
			t.Fatalf("not drained after %d steps: %d running, %d waiting", limit, r.s.Running(), r.s.Waiting())
		}
		r.step(t)
	}
}

// checkDrained asserts DESIGN I7 on an idle pool.
func checkDrained(t tb, pool *kvcache.Pool) {
	t.Helper()
	if err := pool.CheckDrained(); err != nil {
		t.Fatal(err)
	}
	pool.DropCache()
	if pool.FreePages() != pool.UsablePages() {
		t.Fatalf("%d of %d pages free after drain", pool.FreePages(), pool.UsablePages())
	}
}

func prompt(seed, n int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32((seed*7+i*3)%vocab) + 1
	}
	return p
}
