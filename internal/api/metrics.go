package api

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus series, in vLLM's naming style with
// the bulkhead: prefix, on a registry private to the Server. Labels carry
// tenant ids only, never content.
type metrics struct {
	reg          *prometheus.Registry
	requests     *prometheus.CounterVec
	rejections   *prometheus.CounterVec
	ttft         *prometheus.HistogramVec
	tpot         *prometheus.HistogramVec
	e2e          *prometheus.HistogramVec
	promptTokens *prometheus.CounterVec
	genTokens    *prometheus.CounterVec
	cachedTokens *prometheus.CounterVec
}

func newMetrics(eng Engine) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	tenantLabel := []string{"tenant"}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bulkhead:requests_total",
		Help: "Generation requests by tenant and outcome (stop, length, rejected, cancelled, error)."},
		[]string{"tenant", "outcome"})
	m.rejections = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bulkhead:request_rejections_total",
		Help: "Requests refused before generation, by tenant and reason."}, []string{"tenant", "reason"})
	m.ttft = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "bulkhead:time_to_first_token_seconds",
		Help:    "Time from request arrival to the first generated token.",
		Buckets: []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}},
		tenantLabel)
	m.tpot = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "bulkhead:time_per_output_token_seconds",
		Help:    "Mean time between generated tokens of a request.",
		Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5}},
		tenantLabel)
	m.e2e = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "bulkhead:e2e_request_latency_seconds",
		Help: "Time from request arrival to its last byte.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 15)}, tenantLabel)
	m.promptTokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bulkhead:prompt_tokens_total",
		Help: "Prompt tokens of admitted requests."}, tenantLabel)
	m.genTokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bulkhead:generation_tokens_total",
		Help: "Generated tokens."}, tenantLabel)
	m.cachedTokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bulkhead:prompt_tokens_cached_total",
		Help: "Prompt tokens served from the tenant's prefix cache."}, tenantLabel)
	m.reg.MustRegister(m.requests, m.rejections, m.ttft, m.tpot, m.e2e, m.promptTokens, m.genTokens, m.cachedTokens,
		&statsCollector{eng: eng})
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

func (m *metrics) rejected(tenantID, reason string) {
	if reason == "" {
		reason = "other"
	}
	m.rejections.WithLabelValues(tenantID, reason).Inc()
	if tenantID != "" {
		m.requests.WithLabelValues(tenantID, "rejected").Inc()
	}
}

// finished records a generation that was admitted by the engine.
func (m *metrics) finished(tenantID, outcome string, t timing, usage usageCounts) {
	m.requests.WithLabelValues(tenantID, outcome).Inc()
	m.promptTokens.WithLabelValues(tenantID).Add(float64(usage.prompt))
	m.genTokens.WithLabelValues(tenantID).Add(float64(usage.completion))
	m.cachedTokens.WithLabelValues(tenantID).Add(float64(usage.cached))
	if !t.first.IsZero() {
		m.ttft.WithLabelValues(tenantID).Observe(t.first.Sub(t.arrival).Seconds())
		if usage.completion > 1 {
			m.tpot.WithLabelValues(tenantID).Observe(t.last.Sub(t.first).Seconds() / float64(usage.completion-1))
		}
	}
	m.e2e.WithLabelValues(tenantID).Observe(time.Since(t.arrival).Seconds())
}

// statsCollector exports the engine's Stats snapshot at scrape time.
type statsCollector struct{ eng Engine }

var (
	descRunning    = prometheus.NewDesc("bulkhead:num_requests_running", "Requests in the running batch.", nil, nil)
	descWaiting    = prometheus.NewDesc("bulkhead:num_requests_waiting", "Requests waiting for admission to the batch.", nil, nil)
	descPagesTotal = prometheus.NewDesc("bulkhead:kv_pages_total", "Usable KV pages.", nil, nil)
	descPagesFree  = prometheus.NewDesc("bulkhead:kv_pages_free", "Free KV pages.", nil, nil)
	descPagesUsed  = prometheus.NewDesc("bulkhead:kv_pages_used", "KV pages held by requests.", nil, nil)
	descPagesCache = prometheus.NewDesc("bulkhead:kv_pages_cached", "Unreferenced KV pages kept for the prefix cache.", nil, nil)
	descPrefixQ    = prometheus.NewDesc("bulkhead:prefix_cache_queries_total", "Prefix-cache lookups.", nil, nil)
	descPrefixHit  = prometheus.NewDesc("bulkhead:prefix_cache_hit_tokens_total", "Prompt tokens found in the prefix cache.", nil, nil)
	descOwnership  = prometheus.NewDesc("bulkhead:kv_ownership_check_failures_total", "KV page ownership checks that failed (DESIGN I2); each aborted a request.", nil, nil)
	descPreempt    = prometheus.NewDesc("bulkhead:num_preemptions_total", "Requests preempted to free KV pages.", nil, nil)
)

func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRunning, descWaiting, descPagesTotal, descPagesFree, descPagesUsed,
		descPagesCache, descPrefixQ, descPrefixHit, descOwnership, descPreempt} {
		ch <- d
	}
}

func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.eng.Stats()
	gauge := func(d *prometheus.Desc, v int) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge(descRunning, st.Running)
	gauge(descWaiting, st.Waiting)
	gauge(descPagesTotal, st.PagesTotal)
	gauge(descPagesFree, st.PagesFree)
	gauge(descPagesUsed, max(st.PagesTotal-st.PagesFree-st.PagesCached, 0))
	gauge(descPagesCache, st.PagesCached)
	counter(descPrefixQ, st.PrefixQueries)
	counter(descPrefixHit, st.PrefixHitTokens)
	counter(descOwnership, st.OwnershipFailures)
	counter(descPreempt, st.Preemptions)
}
