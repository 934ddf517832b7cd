package engine

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/model"
)

// logSoftmaxAt is log p(tok) under logits, in float64, written here rather
// than taken from the sampler the engine uses.
func logSoftmaxAt(logits []float32, tok int32) float64 {
	mx := math.Inf(-1)
	for _, v := range logits {
		mx = math.Max(mx, float64(v))
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - mx)
	}
	return float64(logits[tok]) - mx - math.Log(sum)
}

// TestPromptLogprobsScoreEveryPromptToken: with PromptLogprobs the first
// token's event carries, for every prompt token after the first, its
// log-probability given the tokens before it, equal to the raw model's over
// the whole prompt in one pass; chunked prefill and a second, identical
// request (whose prefix the cache holds) give the same scores.
func TestPromptLogprobsScoreEveryPromptToken(t *testing.T) {
	m := tiny(t)
	prompt := randPrompt(rand.New(rand.NewPCG(3, 9)), 45)
	kv, err := model.NewSimpleKV(&m.Config, 8, 16, gguf.F16)
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Forward(kv, []model.Seq{{Tokens: prompt, Pos: 0, Pages: []int32{0, 1, 2, 3}, AllLogits: true}})
	if err != nil {
		t.Fatal(err)
	}
	V := m.Config.Vocab
	want := make([]float64, len(prompt))
	for i := 1; i < len(prompt); i++ {
		want[i] = logSoftmaxAt(out[0][(i-1)*V:i*V], prompt[i])
	}
	// A 16-token budget prefills the 45 tokens in three chunks.
	e := newEngine(t, Config{TokenBudget: 16, MaxRunning: 4}, 1024, 16)
	for round := range 2 { // the second time the prefix cache holds the prompt
		ch, err := e.Submit(context.Background(), Request{Prompt: prompt, MaxTokens: 2, IgnoreEOS: true,
			PromptLogprobs: true, Logprobs: true, TopLogprobs: 3})
		if err != nil {
			t.Fatal(err)
		}
		var first *Event
		for ev := range ch {
			if ev.Err != nil {
				t.Fatal(ev.Err)
			}
			if first == nil && ev.Finish == nil {
				first = &ev
			} else if ev.Finish == nil && ev.Prompt != nil {
				t.Error("prompt scores on a later token's event")
			}
		}
		if first == nil || len(first.Prompt) != len(prompt) {
			t.Fatalf("round %d: first event %+v, want %d prompt scores", round, first, len(prompt))
		}
		for i := 1; i < len(prompt); i++ {
			pl := first.Prompt[i]
			if d := math.Abs(float64(pl.Logprob) - want[i]); d > 1e-4 {
				t.Fatalf("round %d: prompt token %d: logprob %g, raw model %g", round, i, pl.Logprob, want[i])
			}
			if len(pl.Top) != 3 || pl.Top[0].Logprob < pl.Logprob-1e-6 {
				t.Fatalf("round %d: prompt token %d: top %+v for logprob %g", round, i, pl.Top, pl.Logprob)
			}
		}
		waitDrained(t, e)
	}
	if st := e.Stats(); st.PrefixHitTokens != 0 {
		t.Errorf("a prompt-logprobs request took %d tokens from the prefix cache: those positions have no logits", st.PrefixHitTokens)
	}
}
