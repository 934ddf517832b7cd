package audit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/audit"
	"github.com/bulkhead-llm/bulkhead/internal/audit/auditfake"
)

// brokenServer advertises a model and answers completions with handler.
func brokenServer(t *testing.T, handler http.HandlerFunc) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"data":[{"id":"m","max_model_len":256}]}`))
	})
	mux.HandleFunc("POST /v1/chat/completions", handler)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestServerThatNeverAnswersIsAConnectionError(t *testing.T) {
	release := make(chan struct{})
	srv := brokenServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	_, err := audit.Run(context.Background(), audit.Config{BaseURL: srv.URL, Style: audit.StyleNatural, Timeout: 100 * time.Millisecond}, nil)
	if !errors.Is(err, audit.ErrConnection) || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("Run error %v, want a timeout wrapped in ErrConnection", err)
	}
}

func TestBrokenAnswersToTheFirstProbeFail(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		outcome audit.Outcome
	}{
		{"HTML instead of JSON", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("<html>busy</html>")) }, audit.OutcomeMalformed},
		{"500", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", 500) }, audit.OutcomeServerError},
		{"200 with a wrong answer", func(w http.ResponseWriter, _ *http.Request) {
			w.Write([]byte(`{"choices":[{"message":{"content":"I cannot share codes."}}]}`))
		}, audit.OutcomeOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := brokenServer(t, tc.handler)
			rep, err := audit.Run(context.Background(), audit.Config{BaseURL: srv.URL, Style: audit.StyleNatural, Timeout: 5 * time.Second}, nil)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if !rep.Failed() || len(rep.Probes) != 1 || rep.Probes[0].Outcome != tc.outcome || !hasNote(rep, "stopped after the first probe") {
				var b strings.Builder
				rep.WriteSummary(&b)
				t.Fatalf("want one failed probe with outcome %s and a note:\n%s", tc.outcome, b.String())
			}
		})
	}
}

// cancelAfter cancels the run's context when the n-th completion request
// goes out, like a user pressing Ctrl-C mid-audit.
type cancelAfter struct {
	n      int
	cancel context.CancelFunc
	mu     sync.Mutex
}

func (c *cancelAfter) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/completions") {
		c.mu.Lock()
		c.n--
		if c.n == 0 {
			c.cancel()
		}
		c.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestInterruptedAuditBlamesNothingOnTheServer(t *testing.T) {
	srv := auditfake.New(auditfake.Options{MaxContext: 256, Key: "KEY"})
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := audit.Config{
		BaseURL: srv.URL, Style: audit.StyleCopy, Words: testWords(),
		HTTPClient: &http.Client{Transport: &cancelAfter{n: 5, cancel: cancel}},
	}
	rep, err := audit.Run(ctx, cfg, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error %v, want context.Canceled", err)
	}
	if rep == nil || rep.Failed() || len(rep.Probes) > 5 || rep.Incomplete == "" {
		t.Fatalf("interrupted run: report %+v", rep)
	}
	var b strings.Builder
	rep.WriteSummary(&b)
	if !strings.Contains(b.String(), "\nINCOMPLETE:") {
		t.Errorf("summary of an interrupted run does not say INCOMPLETE:\n%s", b.String())
	}
}
