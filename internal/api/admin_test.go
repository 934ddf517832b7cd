package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
)

// adminMetrics reads /metrics the way the admin listener serves it.
func (e *testEnv) adminMetrics(t *testing.T) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	e.srv.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Code, rec.Body.String()
}

func TestMetricsAreNotOnTheTenantListener(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	code, body := env.get(t, "/metrics")
	if code != http.StatusNotFound || strings.Contains(body, "bulkhead:") {
		t.Fatalf("tenant listener GET /metrics = %d %.200s, want 404 without series", code, body)
	}
	if code, body := env.adminMetrics(t); code != 200 || !strings.Contains(body, "bulkhead:") {
		t.Fatalf("admin metrics: %d %.200s", code, body)
	}
}
