package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/api"
	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
	"github.com/bulkhead-llm/bulkhead/internal/loadgen"
)

// TestBenchServeSweepsConcurrency runs --concurrency 1,2 against a fake
// OpenAI-compatible server: --json prints one report per level, in order,
// and the text form ends with the comparison table. No level sends a
// prompt an earlier level sent (it would be a prefix-cache hit, and the
// level would measure decode alone).
func TestBenchServeSweepsConcurrency(t *testing.T) {
	eng := apitest.NewFakeEngine()
	eng.MaxCtx.Store(4096)
	inner := api.NewServer(api.Config{ModelID: "fake"}, eng, apitest.ByteTokenizer{},
		nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	var mu sync.Mutex
	var prompts []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/completions" {
			b, _ := io.ReadAll(r.Body)
			var req struct{ Prompt string }
			json.Unmarshal(b, &req)
			mu.Lock()
			prompts = append(prompts, req.Prompt)
			mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		inner.ServeHTTP(w, r)
	}))
	defer hs.Close()
	args := []string{"bench", "serve", "--url", hs.URL, "--concurrency", "1,2", "--requests", "3", "--input-len", "8", "--output-len", "2"}
	var stdout, stderr bytes.Buffer
	if code := run(append(args, "--json"), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var reps []loadgen.Report
	if err := json.Unmarshal(stdout.Bytes(), &reps); err != nil {
		t.Fatalf("not a JSON array of reports: %v\n%s", err, stdout.String())
	}
	if len(reps) != 2 || reps[0].Concurrency != 1 || reps[1].Concurrency != 2 {
		t.Fatalf("reports for concurrency %v, want [1 2]", reps)
	}
	for _, r := range reps {
		if r.Completed != 3 || r.Failed != 0 {
			t.Errorf("concurrency %d: %d completed, %d failed", r.Concurrency, r.Completed, r.Failed)
		}
	}
	mu.Lock()
	if len(prompts) != 6 {
		t.Fatalf("%d completions requests, want 6", len(prompts))
	}
	first := map[string]bool{}
	for _, p := range prompts[:3] { // concurrency 1 runs first, alone
		first[p] = true
	}
	for _, p := range prompts[3:] {
		if first[p] {
			t.Errorf("the second level resent a prompt of the first: %q", p)
		}
	}
	prompts = nil
	mu.Unlock()
	stdout.Reset()
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "concurrency  out tok/s") {
		t.Errorf("no sweep table in:\n%s", stdout.String())
	}
	if code := run([]string{"bench", "serve", "--url", hs.URL, "--concurrency", "1,x"}, &stdout, &stderr); code == 0 {
		t.Errorf("--concurrency 1,x accepted")
	}
}
