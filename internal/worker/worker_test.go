package worker

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/loader"
)

func newTestWorker(t *testing.T, role Role) (*Worker, *engine.Engine) {
	t.Helper()
	m, err := loader.Load(loader.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := m.NewEngine(loader.PoolOptions{MaxContext: 512, KVTokens: 2048}, engine.Config{TokenBudget: 64, MaxRunning: 4})
	if err != nil {
		t.Fatal(err)
	}
	vocab, _ := m.VocabGGUF()
	w, err := New(Config{Role: role, Model: m.Name, ModelDigest: m.Digest, Layers: m.Model.Config.Layers,
		KVDim: m.Model.Config.KVDim(), Vocab: vocab, KVListen: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, eng)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Shutdown(t.Context()); eng.Close() })
	return w, eng
}

func TestInfoReportsWhatTheGatewayCompares(t *testing.T) {
	w, _ := newTestWorker(t, Decode)
	in := w.Info()
	if in.Role != Decode || len(in.ModelDigest) != 64 || in.MaxContext != 512 || in.PoolTokens != 2048 ||
		in.PageSize != 16 || in.KVDType != "F16" || in.KVAddr == "" || in.PagesFree != in.PagesTotal {
		t.Fatalf("info %+v", in)
	}
	rec := httptest.NewRecorder()
	w.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/worker/vocab", nil))
	f, err := gguf.Parse(rec.Body.Bytes())
	if err != nil || !f.Has("tokenizer.ggml.tokens") {
		t.Fatalf("vocab endpoint: %v", err)
	}
}

func TestBadBodiesAreClientErrors(t *testing.T) {
	dec, _ := newTestWorker(t, Decode)
	pre, _ := newTestWorker(t, Prefill)
	for _, c := range []struct {
		w    *Worker
		path string
		body string
		kind string
	}{
		{dec, "/v1/worker/decode", "{not json", "invalid_request"},
		{dec, "/v1/worker/decode", `{"request":{"Prompt":[],"MaxTokens":1}}`, "invalid_request"},
		{dec, "/v1/worker/decode", `{"request":{"Prompt":[1,2,3],"MaxTokens":0}}`, "invalid_request"},
		{dec, "/v1/worker/decode", `{"request":{"Prompt":[99999,2],"MaxTokens":1}}`, "invalid_request"},
		{dec, "/v1/worker/decode", `{"request":{"Prompt":[` + strings.Repeat("1,", 600) + `1],"MaxTokens":1}}`, "context_length_exceeded"},
		{pre, "/v1/worker/prefill", `{"request":{"Prompt":[` + strings.Repeat("1,", 600) + `1],"MaxTokens":1}}`, "context_length_exceeded"},
		{pre, "/v1/worker/prefill", `{"request":{"Prompt":[1],"MaxTokens":1}}`, "invalid_request"},
	} {
		rec := httptest.NewRecorder()
		c.w.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, c.path, strings.NewReader(c.body)))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"kind":"`+c.kind+`"`) {
			t.Errorf("%s %.40s: %d %s", c.path, c.body, rec.Code, rec.Body.String())
		}
	}
	// A role's endpoints only: decode has no /prefill.
	rec := httptest.NewRecorder()
	dec.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/worker/prefill", strings.NewReader("{}")))
	if rec.Code != http.StatusNotFound && rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("decode worker answered /prefill with %d", rec.Code)
	}
}

func TestErrorsRoundTripTheirType(t *testing.T) {
	for _, err := range []error{
		&engine.ContextLengthError{PromptTokens: 9, Limit: 4, MaxContext: 5},
		engine.ErrInvalidRequest, engine.ErrShuttingDown, engine.ErrAborted, engine.ErrInternal,
	} {
		_, body := EncodeError(err)
		back := DecodeError(body)
		var cl *engine.ContextLengthError
		if errors.As(err, &cl) {
			var got *engine.ContextLengthError
			if !errors.As(back, &got) || *got != *cl {
				t.Errorf("%v came back as %v", err, back)
			}
			continue
		}
		if !errors.Is(back, err) {
			t.Errorf("%v came back as %v", err, back)
		}
	}
	if _, err := New(Config{Role: "both"}, nil); err == nil {
		t.Error("accepted role both")
	}
}

func TestOverloadedCrossesTheHopWithItsRetryDelay(t *testing.T) {
	in := &engine.OverloadedError{Reason: "full", RetryAfter: 1500 * time.Millisecond}
	rec := httptest.NewRecorder()
	writeError(rec, in)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "2" {
		t.Fatalf("overloaded: %d Retry-After=%q", rec.Code, rec.Header().Get("Retry-After"))
	}
	_, body := EncodeError(in)
	var got *engine.OverloadedError
	if back := DecodeError(body); !errors.As(back, &got) || got.RetryAfter != in.RetryAfter {
		t.Fatalf("overloaded came back as %v", back)
	}
}
