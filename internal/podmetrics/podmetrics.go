package podmetrics

import (
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// StatsSource is the read-only view of an engine (or of a gateway summing
// its workers) that the gauges are computed from at scrape time.
type StatsSource interface {
	Stats() engine.Stats
}

// IsolationSource optionally adds counters a role keeps outside the engine
// (a decode worker's refused KV frames). Zero-valued when absent.
type IsolationSource interface {
	RejectedHandoffs() uint64
}

// Config describes the KV layout announced in cache_config_info.
type Config struct {
	Role      string // serve, prefill, decode or gateway; a constant label
	BlockSize int    // tokens per KV page
	NumBlocks int    // usable KV pages
}

// Metrics is one role's registry. Create it with New, feed request
// lifecycles through Track, and serve Handler on the metrics listener.
type Metrics struct {
	reg      *prometheus.Registry
	src      StatsSource
	iso      IsolationSource
	cfg      Config
	ttft     prometheus.Histogram
	itl      prometheus.Histogram
	e2e      prometheus.Histogram
	prompt   atomic.Uint64
	gen      atomic.Uint64
	drift    atomic.Uint64
	requests atomic.Uint64
	descs    []desc // built once; a scrape allocates only the samples
}

// New builds the registry. iso may be nil.
func New(src StatsSource, iso IsolationSource, cfg Config) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), src: src, iso: iso, cfg: cfg}
	role := prometheus.Labels{"role": cfg.Role}
	m.ttft = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "vllm:time_to_first_token_seconds",
		Help: "Time from request admission to its first generated token.", ConstLabels: role,
		Buckets: []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}})
	m.itl = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "vllm:inter_token_latency_seconds",
		Help: "Time between consecutive generated tokens of a request.", ConstLabels: role,
		Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5}})
	m.e2e = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "vllm:e2e_request_latency_seconds",
		Help: "Time from request admission to its last event.", ConstLabels: role,
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 15)})
	c := &collector{m: m}
	m.descs = c.descs()
	m.reg.MustRegister(m.ttft, m.itl, m.e2e, c)
	return m
}

// Handler serves the exposition. Compression is off: at 20 scrapes/s the
// gzip pass costs more CPU than the few kilobytes it saves on a pod network.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{DisableCompression: true})
}

// Gatherer exposes the registry (for tests and for merging at the admin listener).
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// DriftRefused counts a request refused because a peer's model, digest or
// layout differed from this process's (the drift check).
func (m *Metrics) DriftRefused() { m.drift.Add(1) }

// series names; each vLLM name has a bulkhead: twin with the same value.
type desc struct{ vllm, bh *prometheus.Desc }

func pair(name, help string, labels []string, c prometheus.Labels) desc {
	return desc{prometheus.NewDesc("vllm:"+name, help, labels, c), prometheus.NewDesc("bulkhead:"+name, help, labels, c)}
}

type collector struct{ m *Metrics }

var cacheLabels = []string{"block_size", "num_gpu_blocks"}

func (c *collector) descs() []desc {
	role := prometheus.Labels{"role": c.m.cfg.Role}
	return []desc{
		pair("num_requests_waiting", "Requests waiting for admission to the batch.", nil, role),
		pair("num_requests_running", "Requests in the running batch.", nil, role),
		pair("kv_cache_usage_perc", "Fraction (0-1) of usable KV pages held by requests; cached unreferenced pages count as free.", nil, role),
		pair("cache_config_info", "KV layout; the value is 1, the data is in the labels.", cacheLabels, role),
		pair("prefix_cache_queries_total", "Tokens looked up in the prefix cache (a request restarted after preemption looks up again).", nil, role),
		pair("prefix_cache_hits_total", "Prompt tokens found in the prefix cache.", nil, role),
		pair("prompt_tokens_total", "Prompt tokens of admitted requests.", nil, role),
		pair("generation_tokens_total", "Generated tokens.", nil, role),
		{nil, prometheus.NewDesc("bulkhead:kv_ownership_check_failures_total", "KV page ownership checks that failed (DESIGN I2); each aborted a request.", nil, role)},
		{nil, prometheus.NewDesc("bulkhead:kv_handoffs_rejected_total", "KV handoffs refused: frames naming no live reservation of their connection, and llm-d fetches with a forged, used, expired or misbound handle.", nil, role)},
		{nil, prometheus.NewDesc("bulkhead:drift_refusals_total", "Requests refused because a peer's model, digest or layout differed.", nil, role)},
		{nil, prometheus.NewDesc("bulkhead:num_preemptions_total", "Requests preempted to free KV pages.", nil, role)},
		{nil, prometheus.NewDesc("bulkhead:requests_total", "Requests admitted by the engine on this role.", nil, role)},
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.m.descs {
		if d.vllm != nil {
			ch <- d.vllm
		}
		ch <- d.bh
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st := c.m.src.Stats()
	d := c.m.descs
	emit := func(x desc, t prometheus.ValueType, v float64, lv ...string) {
		if x.vllm != nil {
			ch <- prometheus.MustNewConstMetric(x.vllm, t, v, lv...)
		}
		ch <- prometheus.MustNewConstMetric(x.bh, t, v, lv...)
	}
	G, C := prometheus.GaugeValue, prometheus.CounterValue
	emit(d[0], G, float64(st.Waiting))
	emit(d[1], G, float64(st.Running))
	emit(d[2], G, KVUsage(st))
	blocks := c.m.cfg.NumBlocks
	if blocks == 0 {
		blocks = st.PagesTotal
	}
	emit(d[3], G, 1, strconv.Itoa(c.m.cfg.BlockSize), strconv.Itoa(blocks))
	// Queries and hits both count the scheduler's lookups, restarts after
	// preemption included, so hits never exceed queries.
	emit(d[4], C, float64(st.PrefixQueryTokens))
	emit(d[5], C, float64(st.PrefixHitTokens))
	emit(d[6], C, float64(c.m.prompt.Load()))
	emit(d[7], C, float64(c.m.gen.Load()))
	emit(d[8], C, float64(st.OwnershipFailures))
	var rej uint64
	if c.m.iso != nil {
		rej = c.m.iso.RejectedHandoffs()
	}
	emit(d[9], C, float64(rej))
	emit(d[10], C, float64(c.m.drift.Load()))
	emit(d[11], C, float64(st.Preemptions))
	emit(d[12], C, float64(c.m.requests.Load()))
}

// KVUsage is the fraction of usable pages held by requests, in [0, 1].
func KVUsage(st engine.Stats) float64 {
	if st.PagesTotal <= 0 {
		return 0
	}
	used := st.PagesTotal - st.PagesFree - st.PagesCached
	return min(max(float64(used)/float64(st.PagesTotal), 0), 1)
}

// IsolationFunc adapts a function to IsolationSource.
type IsolationFunc func() uint64

// RejectedHandoffs calls f.
func (f IsolationFunc) RejectedHandoffs() uint64 { return f() }
