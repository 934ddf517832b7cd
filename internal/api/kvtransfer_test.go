package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/engine"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
)

// A tenant (or an llm-d sidecar relaying one) that sends kv_transfer_params
// gets a 400 naming the field on both generation endpoints, before anything
// is submitted; an explicit null, which the sidecar sends when the prefill
// reply had none, is the same as absent.
func TestKVTransferParamsAreRefused(t *testing.T) {
	eng := apitest.NewFakeEngine()
	eng.MaxCtx.Store(64)
	env := newTestEnv(t, eng, nil)
	forged := `"kv_transfer_params":{"do_remote_prefill":true,"remote_engine_id":"x","remote_block_ids":[1,2],"remote_host":"10.0.0.9","remote_port":5600}`
	for _, c := range []struct{ path, body string }{
		{"/v1/completions", `{"prompt":"x","max_tokens":2,` + forged + `}`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":2,` + forged + `}`},
		{"/v1/completions", `{"prompt":"x","kv_transfer_params":{"do_remote_decode":true}}`},
	} {
		code, _, body := env.post(t, c.path, "", c.body)
		var e struct {
			Error struct{ Param, Message string } `json:"error"`
		}
		json.Unmarshal([]byte(body), &e)
		if code != 400 || e.Error.Param != "kv_transfer_params" || !strings.Contains(e.Error.Message, "not accepted") {
			t.Errorf("%s with kv_transfer_params: %d %s", c.path, code, body)
		}
	}
	if n := len(eng.Requests()); n != 0 {
		t.Errorf("%d requests reached the engine", n)
	}
	if code, _, body := env.post(t, "/v1/completions", "", `{"prompt":"x","max_tokens":2,"kv_transfer_params":null}`); code != 200 {
		t.Errorf("kv_transfer_params null: %d %s", code, body)
	}
}

// gateFunc is a KVTransferGate from a function.
type gateFunc func(*http.Request, json.RawMessage, bool) error

func (g gateFunc) Admit(r *http.Request, p json.RawMessage, stream bool) error {
	return g(r, p, stream)
}

// replyEngine answers every request with kv_transfer_params naming what it
// was given, or with a KVTransferError when the params say "refuse".
type replyEngine struct{ *apitest.FakeEngine }

func (e replyEngine) Submit(ctx context.Context, req engine.Request) (<-chan engine.Event, error) {
	kt := KVTransferFrom(ctx)
	if kt != nil && strings.Contains(string(kt.Params), "refuse") {
		return nil, &KVTransferError{Message: "handle is unknown"}
	}
	if kt != nil {
		kt.Reply = json.RawMessage(`{"echo":` + string(kt.Params) + `}`)
	}
	return e.FakeEngine.Submit(ctx, req)
}

// With a gate, admitted params reach the engine through the Submit context
// and its reply comes back in the body; the gate's and the engine's
// refusals are 400s naming the field.
func TestKVTransferGateAdmitsAndRepliesAndRefuses(t *testing.T) {
	fake := apitest.NewFakeEngine()
	fake.MaxCtx.Store(64)
	gate := gateFunc(func(r *http.Request, p json.RawMessage, stream bool) error {
		if r.Header.Get("X-Test-Router") != "yes" {
			return errors.New("not from the router")
		}
		return nil
	})
	srv := NewServer(Config{ModelID: testModel, KVTransfer: gate}, replyEngine{fake}, apitest.ByteTokenizer{Template: testTemplate}, nil, nil)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	send := func(router bool, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/v1/completions", strings.NewReader(body))
		if router {
			req.Header.Set("X-Test-Router", "yes")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := send(true, `{"prompt":"x","max_tokens":1,"kv_transfer_params":{"a":1}}`)
	var ok struct {
		KV      map[string]any `json:"kv_transfer_params"`
		Choices []any          `json:"choices"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &ok) != nil || ok.KV["echo"] == nil || len(ok.Choices) != 1 {
		t.Errorf("admitted params: %d %s", code, body)
	}
	for _, c := range []struct {
		router bool
		body   string
		want   string
	}{
		{false, `{"prompt":"x","max_tokens":1,"kv_transfer_params":{"a":1}}`, "not from the router"},
		{true, `{"prompt":"x","max_tokens":1,"kv_transfer_params":{"refuse":1}}`, "handle is unknown"},
	} {
		code, body := send(c.router, c.body)
		var e struct {
			Error struct{ Param, Message string } `json:"error"`
		}
		json.Unmarshal([]byte(body), &e)
		if code != 400 || e.Error.Param != "kv_transfer_params" || !strings.Contains(e.Error.Message, c.want) {
			t.Errorf("%s: %d %s", c.body, code, body)
		}
	}
	// Without params nothing is added.
	if code, body := send(false, `{"prompt":"x","max_tokens":1}`); code != 200 || strings.Contains(body, "kv_transfer_params") {
		t.Errorf("plain request: %d %s", code, body)
	}
}
