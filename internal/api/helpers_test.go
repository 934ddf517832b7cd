package api

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
	"github.com/bulkhead-llm/bulkhead/internal/tenant"
)

const (
	testModel    = "copy-model"
	testTemplate = `{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}`
)

// syncBuffer collects log output from concurrent handlers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type testEnv struct {
	srv  *Server
	http *httptest.Server
	eng  *apitest.FakeEngine
	logs *syncBuffer
}

func newTestEnv(t *testing.T, eng *apitest.FakeEngine, reg *tenant.Registry) *testEnv {
	t.Helper()
	return newTestEnvWith(t, eng, apitest.ByteTokenizer{Template: testTemplate}, reg)
}

func newTestEnvWith(t *testing.T, eng *apitest.FakeEngine, tok Tokenizer, reg *tenant.Registry) *testEnv {
	t.Helper()
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv := NewServer(Config{ModelID: testModel, MaxBodyBytes: 64 << 10}, eng, tok, reg, logger)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &testEnv{srv: srv, http: hs, eng: eng, logs: logs}
}

func (e *testEnv) client(key string) *openai.Client {
	c := openai.NewClient(option.WithBaseURL(e.http.URL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	return &c
}

// post sends a raw JSON body and returns the status and body.
func (e *testEnv) post(t *testing.T, path, key, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.http.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

func (e *testEnv) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(e.http.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
