package api

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
)

type choiceOut struct {
	Index    int    `json:"index"`
	Text     string `json:"text"`
	Logprobs *struct {
		TokenLogprobs []float32 `json:"token_logprobs"`
	} `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
}

type bodyOut struct {
	Choices []choiceOut `json:"choices"`
	Usage   *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

func postJSON(t *testing.T, env *testEnv, path, body string) bodyOut {
	t.Helper()
	status, _, resp := env.post(t, path, "", body)
	if status != http.StatusOK {
		t.Fatalf("%s: %d %s", body, status, resp)
	}
	var out bodyOut
	if err := json.Unmarshal([]byte(resp), &out); err != nil {
		t.Fatalf("%v: %s", err, resp)
	}
	return out
}

func TestNChoicesUseSeedPlusIndexAndCountThePromptOnce(t *testing.T) {
	eng := apitest.NewFakeEngine()
	env := newTestEnv(t, eng, nil)
	out := postJSON(t, env, "/v1/completions", `{"prompt":"abc","n":3,"seed":40,"max_tokens":2}`)
	if len(out.Choices) != 3 {
		t.Fatalf("%d choices, want 3", len(out.Choices))
	}
	for i, c := range out.Choices {
		if c.Index != i || c.Text != "ab" || c.FinishReason == nil || *c.FinishReason != "length" {
			t.Errorf("choice %d: %+v", i, c)
		}
	}
	var seeds []uint64
	for _, r := range eng.Requests() {
		seeds = append(seeds, r.Sampling.Seed)
	}
	slices.Sort(seeds)
	if !slices.Equal(seeds, []uint64{40, 41, 42}) {
		t.Errorf("seeds %v, want 40 41 42 (seed + choice)", seeds)
	}
	// The prompt is BOS + "abc" (4 tokens), counted once; 3 × 2 generated.
	if out.Usage == nil || out.Usage.PromptTokens != 4 || out.Usage.CompletionTokens != 6 {
		t.Errorf("usage %+v, want prompt 4 completion 6", out.Usage)
	}
}

func TestPromptListChoicesArePromptMajorWithUsageSummed(t *testing.T) {
	for prompt, promptTokens := range map[string]int{`["ab","xyz"]`: 7, `[[100,101],[123,124,125]]`: 5} {
		env := newTestEnv(t, apitest.NewFakeEngine(), nil)
		out := postJSON(t, env, "/v1/completions", `{"prompt":`+prompt+`,"n":2,"max_tokens":8,"echo":true}`)
		if len(out.Choices) != 4 {
			t.Fatalf("%s: %d choices, want 4", prompt, len(out.Choices))
		}
		// The fake engine echoes the prompt; echo prepends it once more.
		// Token b+3 is byte b, so the id lists spell "ab" and "xyz" too.
		want := []string{"abab", "abab", "xyzxyz", "xyzxyz"}
		for i, c := range out.Choices {
			if c.Index != i || c.Text != want[i] {
				t.Errorf("%s: choice %d = %d %q, want index %d text %q", prompt, i, c.Index, c.Text, i, want[i])
			}
		}
		// Each prompt counted once (text prompts start with BOS, which
		// the fake engine does not echo); 2 × (2+EOS) + 2 × (3+EOS) generated.
		if out.Usage == nil || out.Usage.PromptTokens != promptTokens || out.Usage.CompletionTokens != 14 {
			t.Errorf("%s: usage %+v, want prompt %d completion 14", prompt, out.Usage, promptTokens)
		}
	}
}

// sseChunks reads a stream's data lines, up to [DONE].
func sseChunks(t *testing.T, url, body string) []bodyOut {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var out []bodyOut
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			return out
		}
		var b bodyOut
		if err := json.Unmarshal([]byte(line), &b); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		out = append(out, b)
	}
	t.Fatal("stream ended without [DONE]")
	return nil
}

func TestStreamedChoicesCarryTheirIndexAndOneFinishEach(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	chunks := sseChunks(t, env.http.URL+"/v1/completions",
		`{"prompt":["hello","yo"],"n":2,"max_tokens":4,"stream":true,"stream_options":{"include_usage":true}}`)
	text := map[int]string{}
	finishes := map[int]int{}
	for _, c := range chunks[:len(chunks)-1] {
		if len(c.Choices) != 1 {
			t.Fatalf("chunk with %d choices", len(c.Choices))
		}
		ch := c.Choices[0]
		if finishes[ch.Index] > 0 {
			t.Errorf("choice %d has text after its finish", ch.Index)
		}
		text[ch.Index] += ch.Text
		if ch.FinishReason != nil {
			finishes[ch.Index]++
		}
	}
	want := map[int]string{0: "hell", 1: "hell", 2: "yo", 3: "yo"}
	for i, w := range want {
		if text[i] != w || finishes[i] != 1 {
			t.Errorf("choice %d: text %q finishes %d, want %q and 1", i, text[i], finishes[i], w)
		}
	}
	if len(text) != 4 {
		t.Errorf("indices %v, want 0..3", text)
	}
	last := chunks[len(chunks)-1]
	// Prompts BOS+5 and BOS+2 tokens; 2 × 4 ("hell", length) + 2 × 3 ("yo" + EOS).
	if len(last.Choices) != 0 || last.Usage == nil || last.Usage.PromptTokens != 9 || last.Usage.CompletionTokens != 14 {
		t.Errorf("usage chunk %+v %+v, want prompt 9 completion 14", last, last.Usage)
	}
}

func TestChatNThroughOfficialClient(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	resp, err := env.client("").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: testModel, N: openai.Int(2), MaxTokens: openai.Int(3),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 2 || resp.Choices[0].Index != 0 || resp.Choices[1].Index != 1 {
		t.Fatalf("choices %+v", resp.Choices)
	}
	for _, c := range resp.Choices {
		if c.Message.Content != "[us" || c.FinishReason != "length" {
			t.Errorf("choice %d: %q %q", c.Index, c.Message.Content, c.FinishReason)
		}
	}
}

// rankedEngine gives each sequence a per-token logprob that grows with its
// seed, so best_of's ranking is visible: seed s scores −1/(s−base+1).
type rankedEngine struct {
	*apitest.FakeEngine
	base uint64
}

func (e rankedEngine) Submit(ctx context.Context, req engine.Request) (<-chan engine.Event, error) {
	in, err := e.FakeEngine.Submit(ctx, req)
	if err != nil {
		return nil, err
	}
	out := make(chan engine.Event)
	lp := -1 / float32(req.Sampling.Seed-e.base+1)
	go func() {
		defer close(out)
		for ev := range in {
			if ev.Finish == nil && ev.Err == nil {
				ev.Logprob = lp
			}
			out <- ev
		}
	}()
	return out, nil
}

func TestBestOfReturnsTheNHighestCumulativeLogprobs(t *testing.T) {
	eng := rankedEngine{apitest.NewFakeEngine(), 10}
	srv := NewServer(Config{ModelID: testModel, MaxBodyBytes: 64 << 10}, eng, apitest.ByteTokenizer{Template: testTemplate}, nil, discardLogger())
	hs := httptest.NewServer(srv)
	defer hs.Close()
	env := &testEnv{srv: srv, http: hs}
	out := postJSON(t, env, "/v1/completions", `{"prompt":"abc","n":2,"best_of":4,"seed":10,"max_tokens":2,"logprobs":0}`)
	if len(out.Choices) != 2 || len(eng.Requests()) != 4 {
		t.Fatalf("%d choices from %d sequences, want 2 from 4", len(out.Choices), len(eng.Requests()))
	}
	// Seeds 13 and 12 score best (−1/4, −1/3 per token).
	for i, want := range []float32{-0.25, -1.0 / 3} {
		c := out.Choices[i]
		if c.Index != i || c.Logprobs == nil || len(c.Logprobs.TokenLogprobs) != 2 || c.Logprobs.TokenLogprobs[0] != want {
			t.Errorf("choice %d: %+v, want index %d logprob %g", i, c, i, want)
		}
	}
	if out.Usage.CompletionTokens != 8 {
		t.Errorf("completion tokens %d, want all 8 generated", out.Usage.CompletionTokens)
	}
	// Without logprobs asked, best_of still ranks but shows none.
	out = postJSON(t, env, "/v1/completions", `{"prompt":"abc","best_of":3,"seed":10,"max_tokens":2}`)
	if len(out.Choices) != 1 || out.Choices[0].Logprobs != nil {
		t.Errorf("best_of without logprobs: %+v", out.Choices)
	}
}

func TestAFailingForkFailsTheRequestAndEndsEveryFork(t *testing.T) {
	eng := apitest.NewFakeEngine()
	eng.FailAfter.Store(1)
	env := newTestEnv(t, eng, nil)
	status, _, body := env.post(t, "/v1/completions", "", `{"prompt":"abcdef","n":3,"max_tokens":5}`)
	if status != http.StatusInternalServerError {
		t.Fatalf("%d %s, want 500", status, body)
	}
	for range 3 {
		<-eng.Done // every fork's stream has ended
	}
}

func TestClientLeavingAStreamOfChoicesEndsEveryFork(t *testing.T) {
	eng := apitest.NewFakeEngine()
	eng.Block.Store(true) // after its first token each fork waits for cancellation
	env := newTestEnv(t, eng, nil)
	resp, err := http.Post(env.http.URL+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"abcdef","n":3,"max_tokens":5,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "data: ") {
	}
	resp.Body.Close()
	for range 3 {
		<-eng.Done
	}
	if c := eng.Cancelled(); c != 3 {
		t.Errorf("%d forks cancelled, want 3", c)
	}
}

// A constraint is stateful (it tracks the grammar through the output), so
// every fork needs its own.
func TestEachForkGetsItsOwnStructuredOutputConstraint(t *testing.T) {
	eng := apitest.NewFakeEngine()
	env := newTestEnv(t, eng, nil)
	status, _, body := env.post(t, "/v1/completions", "", `{"prompt":["{}","[]"],"n":2,"max_tokens":2,"response_format":{"type":"json_object"}}`)
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	reqs := eng.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d engine requests, want 4", len(reqs))
	}
	for i, r := range reqs {
		if r.Sampling.Constraint == nil {
			t.Fatalf("fork %d has no constraint", i)
		}
		for j := range i {
			if reqs[j].Sampling.Constraint == r.Sampling.Constraint {
				t.Errorf("forks %d and %d share one constraint", j, i)
			}
		}
	}
}
