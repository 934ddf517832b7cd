package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
)

func TestBadRequestsGetStatusAndErrorTypeAndServerKeepsAnswering(t *testing.T) {
	eng := apitest.NewFakeEngine()
	eng.MaxCtx.Store(64)
	env := newTestEnv(t, eng, nil)
	big := `{"model":"copy-model","prompt":"` + strings.Repeat("a", 70<<10) + `"}`
	cases := []struct {
		name, path, body string
		status           int
		errType, param   string
	}{
		{"invalid JSON", "/v1/completions", `{"prompt": "x"`, 400, typeInvalidRequest, ""},
		{"body is not an object", "/v1/completions", `[1,2]`, 400, typeInvalidRequest, ""},
		{"empty body", "/v1/completions", ``, 400, typeInvalidRequest, ""},
		{"max_tokens of wrong type", "/v1/completions", `{"prompt":"x","max_tokens":"ten"}`, 400, typeInvalidRequest, "max_tokens"},
		{"temperature of wrong type", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"temperature":"hot"}`, 400, typeInvalidRequest, "temperature"},
		{"stream of wrong type", "/v1/completions", `{"prompt":"x","stream":"yes"}`, 400, typeInvalidRequest, "stream"},
		{"stop of wrong type", "/v1/completions", `{"prompt":"x","stop":5}`, 400, typeInvalidRequest, "stop"},
		{"prompt of wrong type", "/v1/completions", `{"prompt":{"a":1}}`, 400, typeInvalidRequest, "prompt"},
		{"empty prompt list", "/v1/completions", `{"prompt":[]}`, 400, typeInvalidRequest, "prompt"},
		{"mixed prompt list", "/v1/completions", `{"prompt":["a",[5]]}`, 400, typeInvalidRequest, "prompt"},
		{"too many sequences", "/v1/completions", `{"prompt":["a","b","c","d","e"],"best_of":16}`, 400, typeInvalidRequest, "prompt"},
		{"one prompt of a list too long", "/v1/completions", `{"prompt":["a","` + strings.Repeat("y", 64) + `"]}`, 400, typeInvalidRequest, "prompt"},
		{"missing prompt", "/v1/completions", `{"model":"copy-model"}`, 400, typeInvalidRequest, "prompt"},
		{"unknown model", "/v1/completions", `{"model":"gpt-9","prompt":"x"}`, 404, typeInvalidRequest, "model"},
		{"invalid UTF-8", "/v1/completions", "{\"prompt\":\"\xff\xfe\"}", 400, typeInvalidRequest, ""},
		{"max_tokens zero", "/v1/completions", `{"prompt":"x","max_tokens":0}`, 400, typeInvalidRequest, "max_tokens"},
		{"max_tokens negative", "/v1/completions", `{"prompt":"x","max_tokens":-5}`, 400, typeInvalidRequest, "max_tokens"},
		{"max_tokens beyond context", "/v1/completions", `{"prompt":"x","max_tokens":100000}`, 400, typeInvalidRequest, "max_tokens"},
		{"max_completion_tokens beyond context", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_completion_tokens":65}`, 400, typeInvalidRequest, "max_completion_tokens"},
		{"max_tokens not an integer", "/v1/completions", `{"prompt":"x","max_tokens":2.5}`, 400, typeInvalidRequest, "max_tokens"},
		{"temperature negative", "/v1/completions", `{"prompt":"x","temperature":-0.1}`, 400, typeInvalidRequest, "temperature"},
		{"temperature above 2", "/v1/completions", `{"prompt":"x","temperature":2.5}`, 400, typeInvalidRequest, "temperature"},
		{"top_p zero", "/v1/completions", `{"prompt":"x","top_p":0}`, 400, typeInvalidRequest, "top_p"},
		{"top_p above 1", "/v1/completions", `{"prompt":"x","top_p":1.01}`, 400, typeInvalidRequest, "top_p"},
		{"n of 17", "/v1/completions", `{"prompt":"x","n":17}`, 400, typeInvalidRequest, "n"},
		{"n of 0", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"n":0}`, 400, typeInvalidRequest, "n"},
		{"best_of below n", "/v1/completions", `{"prompt":"x","n":3,"best_of":2}`, 400, typeInvalidRequest, "best_of"},
		{"best_of streamed", "/v1/completions", `{"prompt":"x","n":1,"best_of":2,"stream":true}`, 400, typeInvalidRequest, "best_of"},
		{"empty stop string", "/v1/completions", `{"prompt":"x","stop":[""]}`, 400, typeInvalidRequest, "stop"},
		{"completions logprobs above 5", "/v1/completions", `{"prompt":"x","logprobs":6}`, 400, typeInvalidRequest, "logprobs"},
		{"top_logprobs without logprobs", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"top_logprobs":3}`, 400, typeInvalidRequest, "top_logprobs"},
		{"top_logprobs above 20", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":21}`, 400, typeInvalidRequest, "top_logprobs"},
		{"no messages", "/v1/chat/completions", `{"messages":[]}`, 400, typeInvalidRequest, "messages"},
		{"unknown role", "/v1/chat/completions", `{"messages":[{"role":"wizard","content":"x"}]}`, 400, typeInvalidRequest, "messages"},
		{"image content part", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 400, typeInvalidRequest, "messages"},
		{"stream_options without stream", "/v1/completions", `{"prompt":"x","stream_options":{"include_usage":true}}`, 400, typeInvalidRequest, "stream_options"},
		{"token id outside vocabulary", "/v1/completions", `{"prompt":[5, 100000]}`, 400, typeInvalidRequest, "prompt"},
		{"prompt longer than context", "/v1/completions", `{"prompt":"` + strings.Repeat("y", 64) + `"}`, 400, typeInvalidRequest, "prompt"},
		{"body over the size limit", "/v1/completions", big, 413, typeInvalidRequest, ""},
		{"unknown route", "/v1/embeddings", `{}`, 404, typeInvalidRequest, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, _, body := env.post(t, c.path, "", c.body)
			if status != c.status {
				t.Fatalf("status = %d, want %d; body %s", status, c.status, body)
			}
			var eb struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
					Code    *string `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &eb); err != nil {
				t.Fatalf("error body is not JSON: %v: %s", err, body)
			}
			if eb.Error.Type != c.errType || eb.Error.Message == "" {
				t.Errorf("type %q message %q, want type %q and a message", eb.Error.Type, eb.Error.Message, c.errType)
			}
			gotParam := ""
			if eb.Error.Param != nil {
				gotParam = *eb.Error.Param
			}
			if gotParam != c.param {
				t.Errorf("param = %q, want %q (message %q)", gotParam, c.param, eb.Error.Message)
			}
			// The server keeps answering after every bad request.
			status, _, body = env.post(t, "/v1/completions", "", `{"prompt":"ok","max_tokens":2}`)
			if status != http.StatusOK || !strings.Contains(body, `"text":"ok"`) {
				t.Fatalf("follow-up request: %d %s", status, body)
			}
		})
	}
	if n := len(eng.Requests()); n != len(cases) {
		t.Errorf("engine saw %d requests, want only the %d follow-ups", n, len(cases))
	}
}

func TestWrongMethodGetsOpenAIShaped405(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	status, body := env.get(t, "/v1/completions")
	if status != http.StatusMethodNotAllowed || !strings.Contains(body, `"code":"method_not_allowed"`) {
		t.Fatalf("%d %s", status, body)
	}
}

func TestChatWithoutTemplateIsAClearError(t *testing.T) {
	srv := NewServer(Config{ModelID: testModel}, apitest.NewFakeEngine(), apitest.ByteTokenizer{}, nil, discardLogger())
	env := &testEnv{srv: srv}
	rec := doRequest(srv, "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`)
	_ = env
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), "chat_template") || !strings.Contains(rec.Body.String(), "/v1/completions") {
		t.Fatalf("%d %s", rec.Code, rec.Body.String())
	}
}
