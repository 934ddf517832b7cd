package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
	"github.com/bulkhead-llm/bulkhead/internal/loader"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
)

// vllmTypes are the names and types a cluster router's endpoint picker
// reads from a pod (issue 16).
var vllmTypes = map[string]dto.MetricType{
	"vllm:num_requests_waiting":           dto.MetricType_GAUGE,
	"vllm:num_requests_running":           dto.MetricType_GAUGE,
	"vllm:kv_cache_usage_perc":            dto.MetricType_GAUGE,
	"vllm:cache_config_info":              dto.MetricType_GAUGE,
	"vllm:prefix_cache_queries_total":     dto.MetricType_COUNTER,
	"vllm:prefix_cache_hits_total":        dto.MetricType_COUNTER,
	"vllm:prompt_tokens_total":            dto.MetricType_COUNTER,
	"vllm:generation_tokens_total":        dto.MetricType_COUNTER,
	"vllm:time_to_first_token_seconds":    dto.MetricType_HISTOGRAM,
	"vllm:inter_token_latency_seconds":    dto.MetricType_HISTOGRAM,
	"vllm:e2e_request_latency_seconds":    dto.MetricType_HISTOGRAM,
	"bulkhead:kv_handoffs_rejected_total": dto.MetricType_COUNTER,
	"bulkhead:drift_refusals_total":       dto.MetricType_COUNTER,
}

// scrapeOnce reads url's exposition, fails on a family whose # TYPE line
// appears twice, and returns the parsed families.
func scrapeOnce(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%s: status %d", url, resp.StatusCode)
	}
	typed := map[string]int{}
	for line := range strings.Lines(string(body)) {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			if typed[f[2]]++; typed[f[2]] == 2 {
				t.Errorf("%s: family %s appears twice", url, f[2])
			}
		}
	}
	parser := expfmt.NewTextParser(pmodel.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	for name := range fams {
		if typed[name] == 0 {
			t.Errorf("%s: %s has no # TYPE line (an endpoint picker reads it as 0)", url, name)
		}
	}
	return fams
}

// serve's admin /metrics carries the API's bulkhead: series and the
// vLLM-compatible ones in one valid page, each family once; --metrics-listen
// serves the same page.
func TestAdminMetricsCarryAPIAndVLLMSeries(t *testing.T) {
	admin := make(chan string, 1)
	ml := freeAddr(t)
	o := serveOptions{trust: trustOptions{adminListen: "127.0.0.1:0", onAdmin: func(a string) { admin <- a }}, listen: "127.0.0.1:0",
		metricsListen: ml, threads: 1, tokenBudget: 256, maxRunning: 8, drain: 10 * time.Second,
		logLevel: "error", pool: loader.PoolOptions{MaxContext: 1024, KVTokens: 8192}}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, o, io.Discard, func(a string) { ready <- a }) }()
	t.Cleanup(func() { cancel(); <-done })
	var base string
	select {
	case a := <-ready:
		base = "http://" + a
	case err := <-done:
		t.Fatal(err)
	}
	adminURL := "http://" + <-admin + "/metrics"

	// Before any request the labelled API families are empty; the page must
	// already be valid, and a shared name must not come from podmetrics
	// until the API's first series appears: one source per name, always.
	for _, f := range scrapeOnce(t, adminURL) {
		if apiOwned[f.GetName()] && len(f.GetMetric()) > 0 && len(f.GetMetric()[0].GetLabel()) > 0 && f.GetMetric()[0].GetLabel()[0].GetName() == "role" {
			t.Errorf("before any request, %s is served from the pod metrics (labels %v)", f.GetName(), f.GetMetric()[0].GetLabel())
		}
	}
	resp, err := http.Post(base+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"`+copymodel.Name+`","prompt":"hello there","max_tokens":3}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	for _, url := range []string{adminURL, "http://" + ml + "/metrics"} {
		fams := scrapeOnce(t, url)
		for name, typ := range vllmTypes {
			if f := fams[name]; f == nil {
				t.Errorf("%s: no %s", url, name)
			} else if f.GetType() != typ {
				t.Errorf("%s: %s is %v, want %v", url, name, f.GetType(), typ)
			}
		}
		// The API registry's own series, with its tenant labels, stay.
		for _, name := range []string{"bulkhead:requests_total", "bulkhead:time_to_first_token_seconds", "bulkhead:kv_pages_used", "bulkhead:num_requests_running"} {
			if fams[name] == nil {
				t.Errorf("%s: no %s", url, name)
			}
		}
		if g := fams["vllm:generation_tokens_total"].GetMetric(); len(g) != 1 || g[0].GetCounter().GetValue() < 3 {
			t.Errorf("%s: vllm:generation_tokens_total %v, want >= 3", url, g)
		}
		if r := fams["bulkhead:requests_total"].GetMetric(); len(r) == 0 || len(r[0].GetLabel()) != 2 {
			t.Errorf("%s: bulkhead:requests_total is not the API's (tenant, outcome) family: %v", url, r)
		}
	}
}
