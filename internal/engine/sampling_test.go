package engine

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// Greedy requests with logit adjustments (bias, penalties, min_tokens)
// produce the same tokens alone and batched with others under preemption
// (DESIGN I8), and the adjustments change the output at all.
func TestAdjustedGreedyIsBatchInvariant(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var reqs []Request
	for i := range 8 {
		s := Sampling{PresencePenalty: 0.7, FrequencyPenalty: 0.3, RepetitionPenalty: 1.3, MinTokens: 3,
			LogitBias: map[int32]float32{int32(i): 5, int32(i + 1): -100}}
		reqs = append(reqs, Request{Tenant: "a", Prompt: randPrompt(rng, 5+rng.IntN(60)), MaxTokens: 10, Sampling: s})
	}
	alone := make([]result, len(reqs))
	changed := 0
	for i, r := range reqs {
		alone[i] = run(t, newEngine(t, Config{}, 1024, 16), r)
		plain := r
		plain.Sampling = Sampling{}
		if p := run(t, newEngine(t, Config{}, 1024, 16), plain); !slices.Equal(p.tokens, alone[i].tokens) {
			changed++
		}
	}
	if changed == 0 {
		t.Fatal("the adjustments changed no request's output")
	}
	e := newEngine(t, Config{TokenBudget: 48, MaxRunning: 8}, 512, 8)
	var wg sync.WaitGroup
	for range 3 {
		noise := Request{Tenant: "noisy", Prompt: randPrompt(rng, 200), MaxTokens: 20, IgnoreEOS: true}
		wg.Go(func() { run(t, e, noise) })
	}
	together := make([]result, len(reqs))
	for i, r := range reqs {
		wg.Go(func() { together[i] = run(t, e, r) })
	}
	wg.Wait()
	for i := range reqs {
		if together[i].err != nil || !slices.Equal(alone[i].tokens, together[i].tokens) {
			t.Fatalf("request %d: alone %v, batched %v (%v)", i, alone[i].tokens, together[i].tokens, together[i].err)
		}
	}
	t.Logf("%d of %d requests changed by their adjustments; all batch invariant", changed, len(reqs))
}
