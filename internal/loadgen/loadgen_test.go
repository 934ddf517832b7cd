package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/api"
	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
)

func startServer(t *testing.T, eng *apitest.FakeEngine, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	eng.MaxCtx.Store(4096)
	var h http.Handler = api.NewServer(api.Config{ModelID: "fake"}, eng, apitest.ByteTokenizer{},
		nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if wrap != nil {
		h = wrap(h)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}

func TestRunStreamsAndMeasuresAgainstBulkhead(t *testing.T) {
	eng := apitest.NewFakeEngine()
	eng.DelayNS.Store(int64(200 * time.Microsecond))
	url := startServer(t, eng, nil)
	var progress bytes.Buffer
	rep, err := Run(context.Background(), Config{URL: url + "/v1", Concurrency: 3, Requests: 12, InputLen: 60, OutputLen: 8, Stream: true}, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Model != "fake" || rep.Completed != 12 || rep.Failed != 0 || !rep.PromptsCalibrated {
		t.Fatalf("report = %+v", rep)
	}
	if rep.OutputTokens != 12*8 {
		t.Errorf("output tokens = %d, want %d", rep.OutputTokens, 12*8)
	}
	// Byte tokens make words about five tokens each, so calibration lands within a word.
	if avg := float64(rep.InputTokens) / 12; math.Abs(avg-60) > 8 {
		t.Errorf("mean prompt = %.1f tokens, want about 60", avg)
	}
	if rep.TTFT.N != 12 || rep.ITL.N != 12*7 || rep.TTFT.P50 <= 0 || rep.ITL.P99 < rep.ITL.P50 || rep.E2E.P90 < rep.TTFT.P50 {
		t.Errorf("latencies = ttft %+v itl %+v e2e %+v", rep.TTFT, rep.ITL, rep.E2E)
	}
	if rep.RequestsPerSecond <= 0 || rep.OutputTokensPerSec <= 0 {
		t.Errorf("throughput = %+v", rep)
	}
	if !strings.Contains(progress.String(), "bench serve c=3: done, 12 requests in ") || strings.Contains(progress.String(), "failed") {
		t.Errorf("progress output = %q", progress.String())
	}
	for _, r := range eng.Requests() {
		if r.MaxTokens != 8 {
			t.Fatalf("request max tokens = %d, want 8", r.MaxTokens)
		}
	}
	js, err := rep.JSON()
	if err != nil || !json.Valid(js) || !strings.Contains(string(js), `"output_tokens": 96`) {
		t.Errorf("JSON report: %v %s", err, js)
	}
	if s := rep.String(); !strings.Contains(s, "Successful requests:") || !strings.Contains(s, "12 of 12") {
		t.Errorf("text report:\n%s", s)
	}
}

func TestRunWithoutTokenizeEndpointUsesWordsAsTokens(t *testing.T) {
	eng := apitest.NewFakeEngine()
	url := startServer(t, eng, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/tokenize" {
				http.NotFound(w, r)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	rep, err := Run(context.Background(), Config{URL: url, Model: "fake", Concurrency: 2, Requests: 4, InputLen: 10, OutputLen: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.PromptsCalibrated || rep.Completed != 4 {
		t.Fatalf("report = %+v", rep)
	}
	for _, r := range eng.Requests() {
		// BOS, then ten words separated by nine spaces.
		text := apitest.ByteTokenizer{}.Decode(r.Prompt)
		if n := len(strings.Fields(text)); n != 10 {
			t.Errorf("prompt has %d words, want 10: %q", n, text)
		}
	}
	if rep.E2E.N != 4 || rep.OutputTokens != 12 {
		t.Errorf("non-streamed report = %+v", rep)
	}
}

func TestRunCountsFailuresAndErrorEvents(t *testing.T) {
	eng := apitest.NewFakeEngine()
	eng.FailAfter.Store(2)
	url := startServer(t, eng, nil)
	rep, err := Run(context.Background(), Config{URL: url, Concurrency: 2, Requests: 5, InputLen: 20, OutputLen: 10, Stream: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed != 5 || rep.Completed != 0 || len(rep.Errors) != 1 {
		t.Fatalf("report = %+v", rep)
	}
	for msg := range rep.Errors {
		if !strings.Contains(msg, "error event") {
			t.Errorf("error %q should say the stream ended in an error event", msg)
		}
	}
	// Wrong key against a keyed server would be HTTP errors; here an unknown model is.
	rep, err = Run(context.Background(), Config{URL: url, Model: "nope", Concurrency: 1, Requests: 2, InputLen: 5, OutputLen: 1, Stream: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for msg, n := range rep.Errors {
		if n != 2 || !strings.HasPrefix(msg, "HTTP 404") || !strings.Contains(msg, "nope") {
			t.Errorf("errors = %v", rep.Errors)
		}
	}
}

func TestPercentileInterpolatesBetweenRanks(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(i + 1)
	}
	cases := []struct {
		name   string
		sorted []float64
		p, w   float64
	}{
		{"median of even count is the midpoint", []float64{1, 2, 3, 4}, 50, 2.5},
		{"p90 of 1..100", hundred, 90, 90.1},
		{"p99 of 1..100", hundred, 99, 99.01},
		{"single value", []float64{7}, 99, 7},
		{"p100 is the max", []float64{1, 5}, 100, 5},
		{"empty is zero", nil, 50, 0},
	}
	for _, c := range cases {
		if got := percentile(c.sorted, c.p); math.Abs(got-c.w) > 1e-9 {
			t.Errorf("%s: got %v, want %v", c.name, got, c.w)
		}
	}
}

func TestValidateRejectsBadConfigs(t *testing.T) {
	good := Config{URL: "http://127.0.0.1:1", Concurrency: 1, Requests: 1, InputLen: 1, OutputLen: 1}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*Config){
		"no URL":           func(c *Config) { c.URL = "" },
		"ftp URL":          func(c *Config) { c.URL = "ftp://x" },
		"zero concurrency": func(c *Config) { c.Concurrency = 0 },
		"zero requests":    func(c *Config) { c.Requests = 0 },
		"zero input":       func(c *Config) { c.InputLen = 0 },
		"zero output":      func(c *Config) { c.OutputLen = 0 },
	} {
		c := good
		mutate(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, c)
		}
	}
}
