package api

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func doRequest(h http.Handler, path, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestModelsListsModelWithMaxModelLen(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	status, body := env.get(t, "/v1/models")
	var got struct {
		Data []modelCard `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil || status != 200 {
		t.Fatalf("%d %s %v", status, body, err)
	}
	if len(got.Data) != 1 || got.Data[0].ID != testModel || got.Data[0].MaxModelLen != 256 || got.Data[0].OwnedBy != "bulkhead" {
		t.Fatalf("models = %+v", got.Data)
	}
}

func TestTokenizeAcceptsVLLMAndLlamaCppShapes(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	for _, body := range []string{`{"model":"copy-model","prompt":"ab"}`, `{"content":"ab"}`} {
		status, _, out := env.post(t, "/tokenize", "", body)
		var got struct {
			Tokens      []int32 `json:"tokens"`
			Count       int     `json:"count"`
			MaxModelLen int     `json:"max_model_len"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || status != 200 {
			t.Fatalf("%s: %d %s", body, status, out)
		}
		want := []int32{apitest.BOS, 'a' + 3, 'b' + 3}
		if got.Count != 3 || len(got.Tokens) != 3 || got.Tokens[0] != want[0] || got.Tokens[2] != want[2] || got.MaxModelLen != 256 {
			t.Errorf("%s: got %+v, want tokens %v", body, got, want)
		}
	}
	status, _, out := env.post(t, "/detokenize", "", `{"tokens":[1,100,101]}`)
	if status != 200 || !strings.Contains(out, `"prompt":"ab"`) {
		t.Errorf("detokenize: %d %s", status, out)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	eng := apitest.NewFakeEngine()
	eng.NotReady.Store(true)
	env := newTestEnv(t, eng, nil)
	if s, _ := env.get(t, "/health"); s != 200 {
		t.Errorf("/health = %d, want 200 while the process is up", s)
	}
	if s, _ := env.get(t, "/ready"); s != 503 {
		t.Errorf("/ready = %d, want 503 while the engine is not ready", s)
	}
	eng.NotReady.Store(false)
	if s, _ := env.get(t, "/ready"); s != 200 {
		t.Errorf("/ready = %d, want 200", s)
	}
}

func TestEveryResponseCarriesRequestIDThatLogsUse(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	_, h, _ := env.post(t, "/v1/completions", "", `{"prompt":"secret prompt text","max_tokens":3}`)
	id := h.Get("X-Request-Id")
	if len(id) < 16 {
		t.Fatalf("X-Request-Id = %q", id)
	}
	logs := env.logs.String()
	if !strings.Contains(logs, `"request_id":"`+id+`"`) {
		t.Errorf("logs lack the request id %s:\n%s", id, logs)
	}
	if strings.Contains(logs, "secret") {
		t.Errorf("prompt text leaked into info logs:\n%s", logs)
	}
}

func TestMetricsExposeVLLMStyleNamesWithTenantLabels(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	env.post(t, "/v1/completions", "", `{"prompt":"abcd","max_tokens":3}`)
	env.post(t, "/v1/completions", "", `{"prompt":"x","max_tokens":-1}`)
	_, body := env.adminMetrics(t)
	for _, want := range []string{
		`bulkhead:requests_total{outcome="length",tenant="anonymous"} 1`,
		`bulkhead:request_rejections_total{reason="invalid_request",tenant="anonymous"} 1`,
		`bulkhead:prompt_tokens_total{tenant="anonymous"} 5`,
		`bulkhead:generation_tokens_total{tenant="anonymous"} 3`,
		`bulkhead:time_to_first_token_seconds_count{tenant="anonymous"} 1`,
		`bulkhead:time_per_output_token_seconds_count{tenant="anonymous"} 1`,
		`bulkhead:kv_pages_free 90`,
		`bulkhead:kv_pages_used 6`,
		`bulkhead:kv_pages_cached 4`,
		`bulkhead:num_preemptions_total 3`,
		`bulkhead:kv_ownership_check_failures_total 0`,
		`bulkhead:num_requests_running`,
		`bulkhead:num_requests_waiting`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestConfigValidateNamesTheField(t *testing.T) {
	for _, c := range []Config{{}, {ModelID: "m", MaxBodyBytes: -1}, {ModelID: "m", DefaultMaxTokens: -2}} {
		if err := c.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", c)
		}
	}
	if err := (&Config{ModelID: "m"}).Validate(); err != nil {
		t.Error(err)
	}
}
