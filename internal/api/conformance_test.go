package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
)

// The rows of issue 11's conformance table, each against OpenAI/vLLM's
// documented behaviour, through the official client where it fits.

func TestUnknownModelIs404ModelNotFound(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	_, err := env.client("").Completions.New(context.Background(), openai.CompletionNewParams{
		Model: "gpt-9", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("x")}})
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusNotFound || ae.Code != "model_not_found" || ae.Param != "model" {
		t.Fatalf("want 404 model_not_found, got %v", err)
	}
}

func TestCompletionsDefaultMaxTokensIs16ChatsIsTheRestOfTheContext(t *testing.T) {
	eng := apitest.NewFakeEngine()
	env := newTestEnv(t, eng, nil)
	if s, _, b := env.post(t, "/v1/completions", "", `{"prompt":"hi"}`); s != 200 {
		t.Fatalf("%d %s", s, b)
	}
	if s, _, b := env.post(t, "/v1/chat/completions", "", `{"messages":[{"role":"user","content":"hi"}]}`); s != 200 {
		t.Fatalf("%d %s", s, b)
	}
	reqs := eng.Requests()
	if reqs[0].MaxTokens != 16 {
		t.Errorf("completions max_tokens default = %d, want 16", reqs[0].MaxTokens)
	}
	if room := eng.MaxContext() - len(reqs[1].Prompt); reqs[1].MaxTokens != room {
		t.Errorf("chat max_tokens default = %d, want the rest of the context %d", reqs[1].MaxTokens, room)
	}
}

func TestPromptPlusMaxTokensOverContextIs400NamingBothNumbers(t *testing.T) {
	eng := apitest.NewFakeEngine()
	eng.MaxCtx.Store(64)
	env := newTestEnv(t, eng, nil)
	// "hello" is 1 BOS + 5 byte tokens; the context is 64.
	status, _, body := env.post(t, "/v1/completions", "", `{"prompt":"hello","max_tokens":60}`)
	if status != 400 || !strings.Contains(body, `"param":"max_tokens"`) || !strings.Contains(body, " 6 tokens") ||
		!strings.Contains(body, "max_tokens is 60") || !strings.Contains(body, "64") {
		t.Fatalf("%d %s", status, body)
	}
	if len(eng.Requests()) != 0 {
		t.Fatal("refused request reached the engine")
	}
	if status, _, body := env.post(t, "/v1/completions", "", `{"prompt":"hello","max_tokens":58}`); status != 200 {
		t.Fatalf("exactly filling the context must be allowed: %d %s", status, body)
	}
}

func TestMaxCompletionTokensOnBothEndpointsMustAgreeWithMaxTokens(t *testing.T) {
	eng := apitest.NewFakeEngine()
	env := newTestEnv(t, eng, nil)
	for _, c := range []struct{ path, base string }{
		{"/v1/completions", `"prompt":"hi"`},
		{"/v1/chat/completions", `"messages":[{"role":"user","content":"hi"}]`},
	} {
		if s, _, b := env.post(t, c.path, "", "{"+c.base+`,"max_completion_tokens":3}`); s != 200 {
			t.Fatalf("%s: %d %s", c.path, s, b)
		}
		if s, _, b := env.post(t, c.path, "", "{"+c.base+`,"max_completion_tokens":3,"max_tokens":3}`); s != 200 {
			t.Fatalf("%s equal: %d %s", c.path, s, b)
		}
		s, _, b := env.post(t, c.path, "", "{"+c.base+`,"max_completion_tokens":3,"max_tokens":4}`)
		if s != 400 || !strings.Contains(b, `"param":"max_completion_tokens"`) || !strings.Contains(b, "max_tokens = 4") {
			t.Fatalf("%s disagreeing: %d %s", c.path, s, b)
		}
	}
	for i, r := range eng.Requests() {
		if r.MaxTokens != 3 {
			t.Errorf("request %d: max_tokens %d, want 3", i, r.MaxTokens)
		}
	}
}

func TestTextOffsetCountsCharactersNotBytes(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	// The fake engine echoes the prompt byte by byte: "яz" is three tokens
	// (two bytes of я, then z); z starts at character 1, byte 2.
	resp, err := env.client("").Completions.New(context.Background(), openai.CompletionNewParams{
		Model: testModel, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("яz")},
		Logprobs: openai.Int(0), MaxTokens: openai.Int(3)})
	if err != nil {
		t.Fatal(err)
	}
	off := resp.Choices[0].Logprobs.TextOffset
	if len(off) != 3 || off[2] != 1 {
		t.Fatalf("text_offset %v, want [0 0 1] (characters)", off)
	}
}

func TestGetModelByID(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	m, err := env.client("").Models.Get(context.Background(), testModel)
	if err != nil || m.ID != testModel || m.Object != "model" {
		t.Fatalf("%+v %v", m, err)
	}
	_, err = env.client("").Models.Get(context.Background(), "gpt-9")
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != 404 || ae.Code != "model_not_found" {
		t.Fatalf("unknown id: %v", err)
	}
}

func TestStreamWithIncludeUsageSendsUsageNullOnEveryChunk(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	for _, c := range []struct{ path, base string }{
		{"/v1/completions", `"prompt":"hey"`},
		{"/v1/chat/completions", `"messages":[{"role":"user","content":"hey"}]`},
	} {
		status, _, body := env.post(t, c.path, "", "{"+c.base+`,"max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`)
		if status != 200 {
			t.Fatalf("%d %s", status, body)
		}
		var chunks []string
		for _, line := range strings.Split(body, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && d != "[DONE]" {
				chunks = append(chunks, d)
			}
		}
		if len(chunks) < 3 {
			t.Fatalf("%s: %d chunks", c.path, len(chunks))
		}
		for i, ch := range chunks[:len(chunks)-1] {
			if !strings.Contains(ch, `"usage":null`) {
				t.Errorf("%s chunk %d lacks \"usage\":null: %s", c.path, i, ch)
			}
		}
		if last := chunks[len(chunks)-1]; !strings.Contains(last, `"usage":{"prompt_tokens"`) {
			t.Errorf("%s: last chunk has no usage: %s", c.path, last)
		}
		// Without include_usage, no usage key at all (as OpenAI).
		_, _, body = env.post(t, c.path, "", "{"+c.base+`,"max_tokens":3,"stream":true}`)
		if strings.Contains(body, `"usage"`) {
			t.Errorf("%s: usage without include_usage: %s", c.path, body)
		}
	}
}

func TestSamplingFieldsReachTheEngineAndBadOnesAreRefused(t *testing.T) {
	eng := apitest.NewFakeEngine()
	env := newTestEnv(t, eng, nil)
	ok := `{"prompt":"hi","max_tokens":4,"min_tokens":2,"stop_token_ids":[7,9],"repetition_penalty":1.3,"ignore_eos":true}`
	if s, _, b := env.post(t, "/v1/completions", "", ok); s != 200 {
		t.Fatalf("%d %s", s, b)
	}
	r := eng.Requests()[0]
	if r.Sampling.MinTokens != 2 || len(r.StopTokens) != 2 || r.StopTokens[1] != 9 || r.Sampling.RepetitionPenalty != 1.3 || !r.IgnoreEOS {
		t.Fatalf("engine request %+v", r)
	}
	for _, c := range []struct{ body, param string }{
		{`{"prompt":"hi","presence_penalty":2.5}`, "presence_penalty"},
		{`{"prompt":"hi","frequency_penalty":-3}`, "frequency_penalty"},
		{`{"prompt":"hi","repetition_penalty":0}`, "repetition_penalty"},
		{`{"prompt":"hi","logit_bias":{"abc":1}}`, "logit_bias"},
		{`{"prompt":"hi","logit_bias":{"5":101}}`, "logit_bias"},
		{`{"prompt":"hi","logit_bias":{"100000":1}}`, "logit_bias"},
		{`{"prompt":"hi","stop_token_ids":[100000]}`, "stop_token_ids"},
		{`{"prompt":"hi","min_tokens":-1}`, "min_tokens"},
		{`{"prompt":"hi","max_tokens":3,"min_tokens":4}`, "min_tokens"},
	} {
		if s, _, b := env.post(t, "/v1/completions", "", c.body); s != 400 || !strings.Contains(b, `"param":"`+c.param+`"`) {
			t.Errorf("%s: %d %s", c.body, s, b)
		}
	}
}

func TestEchoPrependsThePromptWithItsLogprobs(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	resp, err := env.client("").Completions.New(context.Background(), openai.CompletionNewParams{
		Model: testModel, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("abc")},
		Echo: openai.Bool(true), MaxTokens: openai.Int(2)})
	if err != nil || resp.Choices[0].Text != "abcab" {
		t.Fatalf("%v %+v", err, resp)
	}
	_, _, body := env.post(t, "/v1/completions", "", `{"prompt":"abc","echo":true,"max_tokens":2,"stream":true}`)
	if i, j := strings.Index(body, `"text":"abc"`), strings.Index(body, `"text":"a"`); i < 0 || j < i {
		t.Fatalf("stream must open with the echoed prompt: %s", body)
	}
	// echo with logprobs: the prompt's tokens (BOS first) lead the logprobs,
	// the first with null (no context), then the completion's; offsets in
	// characters of the whole text, BOS adding none (the fake scores prompt
	// token i −0.25·i and every generated token −0.5).
	s, _, b := env.post(t, "/v1/completions", "", `{"prompt":"abc","echo":true,"logprobs":1,"max_tokens":2}`)
	want := `"text":"abcab","logprobs":{"tokens":["<s>","a","b","c","a","b"],"token_logprobs":[null,-0.25,-0.5,-0.75,-0.5,-0.5],` +
		`"top_logprobs":[null,{"a":-0.25},{"b":-0.5},{"c":-0.75},{"a":-0.5},{"b":-0.5}],"text_offset":[0,0,1,2,3,4]}`
	if s != 200 || !strings.Contains(b, want) {
		t.Fatalf("echo with logprobs: %d %s\nwant %s", s, b, want)
	}
}

func TestUnknownStreamOptionsAreRefused(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	if s, _, b := env.post(t, "/v1/completions", "", `{"prompt":"a","max_tokens":1,"stream":true,"stream_options":{"include_usage":true,"include_obfuscation":false}}`); s != 200 {
		t.Fatalf("%d %s", s, b)
	}
	if s, _, b := env.post(t, "/v1/completions", "", `{"prompt":"a","stream":true,"stream_options":{"continuous_usage_stats":true}}`); s != 400 || !strings.Contains(b, `"param":"stream_options"`) {
		t.Fatalf("%d %s", s, b)
	}
}
