package api

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

// TestEchoLogprobsOnTheCopyModel: through the official client and the real
// engine, echo with logprobs returns one entry per prompt token (the first
// null) then one per generated token; the copy model, which has seen the
// words it repeats, scores the second occurrence of a repeated word as
// near-certain, which a fabricated or shifted score would not be.
func TestEchoLogprobsOnTheCopyModel(t *testing.T) {
	env, eng, m := copyModelEnv(t, nil)
	prompt := "bako tisum lomer bako tisum"
	ids := m.Tok.Encode(prompt, true, false)
	resp, err := env.client("").Completions.New(context.Background(), openai.CompletionNewParams{
		Model: testModel, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
		Echo: openai.Bool(true), Logprobs: openai.Int(2), MaxTokens: openai.Int(1), Temperature: openai.Float(0)})
	if err != nil {
		t.Fatal(err)
	}
	lp := resp.Choices[0].Logprobs
	if len(lp.Tokens) != len(ids)+1 || len(lp.TokenLogprobs) != len(ids)+1 || len(lp.TextOffset) != len(ids)+1 {
		t.Fatalf("%d tokens, %d logprobs, %d offsets for a %d-token prompt and 1 generated", len(lp.Tokens), len(lp.TokenLogprobs), len(lp.TextOffset), len(ids))
	}
	// The first prompt token has no context: null in both arrays (the
	// client reads null as 0 and drops the top map, so check the JSON).
	if raw := resp.Choices[0].Logprobs.RawJSON(); !strings.Contains(raw, `"token_logprobs":[null,`) || !strings.Contains(raw, `"top_logprobs":[null,`) {
		t.Errorf("the first prompt token must have null scores: %s", raw)
	}
	// The last prompt token ("tisum" after "bako" the second time) follows
	// the copy pattern; every score is a log-probability.
	last := lp.TokenLogprobs[len(ids)-1]
	if last < math.Log(0.5) {
		t.Errorf("the repeated word's score %g: the copy model predicts it", last)
	}
	for i, v := range lp.TokenLogprobs[1:] {
		if v > 0 || math.IsNaN(v) {
			t.Errorf("token %d: logprob %g", i+1, v)
		}
	}
	if st := eng.Stats(); st.PrefixHitTokens != 0 {
		t.Errorf("the scored prompt came from the prefix cache (%d tokens)", st.PrefixHitTokens)
	}
}
