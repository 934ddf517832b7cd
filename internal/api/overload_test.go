package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
)

// Load is never a 500: an engine (or gateway) whose every queue is at its
// bound answers 503 with Retry-After.
func TestOverloadedEngineAnswers503WithRetryAfter(t *testing.T) {
	eng := apitest.NewFakeEngine()
	eng.RejectWith(&engine.OverloadedError{Reason: "every decode worker is full", RetryAfter: 2500 * time.Millisecond})
	env := newTestEnv(t, eng, nil)
	status, h, body := env.post(t, "/v1/completions", "", `{"prompt":"hello","max_tokens":3}`)
	if status != http.StatusServiceUnavailable || h.Get("Retry-After") != "3" || !strings.Contains(body, `"code":"overloaded"`) {
		t.Fatalf("overloaded engine: %d Retry-After=%q %s", status, h.Get("Retry-After"), body)
	}
}
