package api

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
)

// sdkFields lists the JSON names of a request type of the official SDK, so
// a field the SDK gains is a failing test here until it is classified.
func sdkFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// fieldCase is how one field is exercised: a value the server honours
// (with a check of what reached the engine), or a value it must refuse.
type fieldCase struct {
	value  string                      // JSON value of the field
	refuse bool                        // expect 400 naming the field
	check  func(engine.Request) string // for honoured values: "" or what is wrong (of the last request)
	seqs   int                         // engine requests a honoured value makes; 0 means 1
}

var completionCases = map[string]fieldCase{
	"prompt":            {value: `"hello"`, check: func(r engine.Request) string { return want(len(r.Prompt) == 6, "prompt tokens") }},
	"model":             {value: `"` + testModel + `"`},
	"best_of":           {value: `2`, seqs: 2, check: func(r engine.Request) string { return want(r.Logprobs, "best_of's ranking logprobs") }},
	"echo":              {value: `true`},
	"frequency_penalty": {value: `0.5`, check: func(r engine.Request) string { return want(r.Sampling.FrequencyPenalty == 0.5, "frequency_penalty") }},
	"logprobs":          {value: `3`, check: func(r engine.Request) string { return want(r.Logprobs && r.TopLogprobs == 3, "logprobs") }},
	"max_tokens":        {value: `3`, check: func(r engine.Request) string { return want(r.MaxTokens == 3, "max_tokens") }},
	"n":                 {value: `2`, seqs: 2},
	"presence_penalty":  {value: `-1.5`, check: func(r engine.Request) string { return want(r.Sampling.PresencePenalty == -1.5, "presence_penalty") }},
	"seed":              {value: `42`, check: func(r engine.Request) string { return want(r.Sampling.Seed == 42, "seed") }},
	"suffix":            {value: `"tail"`, refuse: true},
	"temperature":       {value: `0.25`, check: func(r engine.Request) string { return want(r.Sampling.Temperature == 0.25, "temperature") }},
	"top_p":             {value: `0.5`, check: func(r engine.Request) string { return want(r.Sampling.TopP == 0.5, "top_p") }},
	"user":              {value: `"end-user-7"`},
	"logit_bias":        {value: `{"104":-100}`, check: func(r engine.Request) string { return want(r.Sampling.LogitBias[104] == -100, "logit_bias") }},
	"stop":              {value: `["zz"]`},
	"stream_options":    {value: `{"include_usage":true}`}, // sent with stream below
}

var chatCases = map[string]fieldCase{
	"messages":               {value: `[{"role":"user","content":"hi"}]`},
	"model":                  {value: `"` + testModel + `"`},
	"frequency_penalty":      completionCases["frequency_penalty"],
	"logprobs":               {value: `true`, check: func(r engine.Request) string { return want(r.Logprobs, "logprobs") }},
	"max_completion_tokens":  {value: `4`, check: func(r engine.Request) string { return want(r.MaxTokens == 4, "max_completion_tokens") }},
	"max_tokens":             {value: `5`, check: func(r engine.Request) string { return want(r.MaxTokens == 5, "max_tokens") }},
	"n":                      {value: `3`, seqs: 3},
	"presence_penalty":       completionCases["presence_penalty"],
	"prompt_cache_key":       {value: `"k"`, refuse: true},
	"safety_identifier":      {value: `"sid"`},
	"seed":                   completionCases["seed"],
	"store":                  {value: `true`, refuse: true},
	"temperature":            completionCases["temperature"],
	"top_logprobs":           {value: `20`, check: func(r engine.Request) string { return want(r.TopLogprobs == 20, "top_logprobs") }}, // sent with logprobs below
	"top_p":                  completionCases["top_p"],
	"parallel_tool_calls":    {value: `true`},
	"user":                   completionCases["user"],
	"audio":                  {value: `{"voice":"alloy","format":"mp3"}`, refuse: true},
	"logit_bias":             completionCases["logit_bias"],
	"metadata":               {value: `{"a":"b"}`},
	"modalities":             {value: `["text","audio"]`, refuse: true},
	"moderation":             {value: `{}`, refuse: true},
	"prompt_cache_retention": {value: `"24h"`, refuse: true},
	"reasoning_effort":       {value: `"low"`, refuse: true},
	"service_tier":           {value: `"flex"`, refuse: true},
	"stop":                   completionCases["stop"],
	"stream_options":         completionCases["stream_options"],
	"verbosity":              {value: `"low"`, refuse: true},
	"function_call":          {value: `"auto"`, refuse: true},
	"functions":              {value: `[{"name":"f"}]`, refuse: true},
	"prediction":             {value: `{"type":"content","content":"x"}`, refuse: true},
	"prompt_cache_options":   {value: `{}`, refuse: true},
	"response_format":        {value: `{"type":"json_object"}`, check: func(r engine.Request) string { return want(r.Sampling.Constraint != nil, "response_format constraint") }},
	"tool_choice":            {value: `"auto"`, refuse: true},
	// Refused here because this test's template shows no tool-call syntax;
	// chattools_test.go has tools honoured through a template that does.
	"tools":              {value: `[{"type":"function","function":{"name":"f"}}]`, refuse: true},
	"web_search_options": {value: `{}`, refuse: true},
}

func want(ok bool, what string) string {
	if ok {
		return ""
	}
	return what + " did not reach the engine"
}

// TestEveryOpenAIRequestFieldIsHonouredOrRefused walks every field of the
// official SDK's CompletionNewParams and ChatCompletionNewParams: each is
// sent alone (beside the required ones) and must either change what the
// engine is asked to do, or be answered 400 with param naming it.
func TestEveryOpenAIRequestFieldIsHonouredOrRefused(t *testing.T) {
	for _, ep := range []struct {
		path, base string
		sdk        reflect.Type
		cases      map[string]fieldCase
	}{
		{"/v1/completions", `"prompt":"hello"`, reflect.TypeFor[openai.CompletionNewParams](), completionCases},
		{"/v1/chat/completions", `"messages":[{"role":"user","content":"hi"}]`, reflect.TypeFor[openai.ChatCompletionNewParams](), chatCases},
	} {
		fields := sdkFields(ep.sdk)
		if len(fields) < 15 {
			t.Fatalf("%s: only %d SDK fields found; the reflection walk is broken", ep.path, len(fields))
		}
		honoured, refused := 0, 0
		for _, f := range fields {
			c, ok := ep.cases[f]
			if !ok {
				t.Errorf("%s: SDK field %q is not classified in this test (honour it or refuse it, then add it)", ep.path, f)
				continue
			}
			t.Run(ep.path+"/"+f, func(t *testing.T) {
				eng := apitest.NewFakeEngine()
				env := newTestEnv(t, eng, nil)
				body := "{" + ep.base
				if f != "prompt" && f != "messages" {
					body += `,"` + f + `":` + c.value
				}
				switch f {
				case "stream_options":
					body += `,"stream":true`
				case "top_logprobs":
					body += `,"logprobs":true`
				}
				if f != "max_tokens" && f != "max_completion_tokens" {
					body += `,"max_tokens":2`
				}
				body += "}"
				status, _, resp := env.post(t, ep.path, "", body)
				if c.refuse {
					if status != http.StatusBadRequest || !strings.Contains(resp, `"param":"`+f+`"`) {
						t.Fatalf("%s = %s: want 400 naming %q, got %d %s", f, c.value, f, status, resp)
					}
					if len(eng.Requests()) != 0 {
						t.Fatalf("a refused request reached the engine")
					}
					return
				}
				if status != http.StatusOK {
					t.Fatalf("%s = %s: want 200 (honoured), got %d %s", f, c.value, status, resp)
				}
				reqs := eng.Requests()
				if len(reqs) != max(1, c.seqs) {
					t.Fatalf("engine saw %d requests, want %d", len(reqs), max(1, c.seqs))
				}
				if c.check != nil {
					if msg := c.check(reqs[len(reqs)-1]); msg != "" {
						t.Fatal(msg)
					}
				}
			})
			if c.refuse {
				refused++
			} else {
				honoured++
			}
		}
		t.Logf("%s: %d SDK fields, %d honoured, %d refused", ep.path, len(fields), honoured, refused)
	}
}

func TestUnknownFieldIsRefusedNamingIt(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	status, _, body := env.post(t, "/v1/completions", "", `{"prompt":"hi","max_tokens":2,"frobnicate":{"x":[1]}}`)
	if status != 400 || !strings.Contains(body, `"param":"frobnicate"`) || !strings.Contains(body, `"code":"unknown_field"`) {
		t.Fatalf("%d %s", status, body)
	}
}

func TestLenientServerWarnsAndReportsUnknownFields(t *testing.T) {
	logs := &syncBuffer{}
	srv := NewServer(Config{ModelID: testModel, Lenient: true}, apitest.NewFakeEngine(), apitest.ByteTokenizer{Template: testTemplate}, nil,
		slog.New(slog.NewJSONHandler(logs, nil)))
	hs := httptest.NewServer(srv)
	defer hs.Close()
	resp, err := http.Post(hs.URL+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"hi","max_tokens":2,"zeta":1,"frobnicate":true}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get(ignoredFieldsHeader) != "frobnicate,zeta" {
		t.Fatalf("%d header %q", resp.StatusCode, resp.Header.Get(ignoredFieldsHeader))
	}
	if !strings.Contains(logs.String(), "frobnicate") {
		t.Errorf("no warning logged: %s", logs.String())
	}
	// Lenient is about unknown fields only: unsupported values stay refused.
	resp, err = http.Post(hs.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"hi","suffix":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("suffix on a lenient server: %d", resp.StatusCode)
	}
}

func TestNeutralValuesOfUnsupportedFieldsAreAccepted(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	for _, body := range []string{
		`{"prompt":"hi","max_tokens":2,"n":1,"best_of":1,"echo":false,"suffix":"","logit_bias":null}`,
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"n":1,"store":false,"tools":[],"tool_choice":"none","response_format":{"type":"text"},"modalities":["text"],"service_tier":"auto"}`,
	} {
		path := "/v1/completions"
		if strings.Contains(body, "messages") {
			path = "/v1/chat/completions"
		}
		if status, _, resp := env.post(t, path, "", body); status != 200 {
			t.Errorf("%s: %d %s", body, status, resp)
		}
	}
}
