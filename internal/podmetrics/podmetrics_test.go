package podmetrics

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
	"github.com/bulkhead-llm/bulkhead/internal/model"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
)

// want lists every series the EPP (or an operator) relies on, with its type.
var want = map[string]dto.MetricType{
	"vllm:num_requests_waiting":                  dto.MetricType_GAUGE,
	"vllm:num_requests_running":                  dto.MetricType_GAUGE,
	"vllm:kv_cache_usage_perc":                   dto.MetricType_GAUGE,
	"vllm:cache_config_info":                     dto.MetricType_GAUGE,
	"vllm:prefix_cache_queries_total":            dto.MetricType_COUNTER,
	"vllm:prefix_cache_hits_total":               dto.MetricType_COUNTER,
	"vllm:prompt_tokens_total":                   dto.MetricType_COUNTER,
	"vllm:generation_tokens_total":               dto.MetricType_COUNTER,
	"vllm:time_to_first_token_seconds":           dto.MetricType_HISTOGRAM,
	"vllm:inter_token_latency_seconds":           dto.MetricType_HISTOGRAM,
	"vllm:e2e_request_latency_seconds":           dto.MetricType_HISTOGRAM,
	"bulkhead:num_requests_waiting":              dto.MetricType_GAUGE,
	"bulkhead:num_requests_running":              dto.MetricType_GAUGE,
	"bulkhead:kv_cache_usage_perc":               dto.MetricType_GAUGE,
	"bulkhead:cache_config_info":                 dto.MetricType_GAUGE,
	"bulkhead:kv_ownership_check_failures_total": dto.MetricType_COUNTER,
	"bulkhead:kv_handoffs_rejected_total":        dto.MetricType_COUNTER,
	"bulkhead:drift_refusals_total":              dto.MetricType_COUNTER,
	"bulkhead:num_preemptions_total":             dto.MetricType_COUNTER,
}

// gatedModel can hold every forward pass after a given count, so a test
// can scrape while requests are certainly mid-generation.
type gatedModel struct {
	*model.Model
	calls, holdAfter atomic.Int64 // holdAfter 0: never hold
	release          chan struct{}
}

func (g *gatedModel) Forward(kv model.KVStore, seqs []model.Seq) ([][]float32, error) {
	if h := g.holdAfter.Load(); g.calls.Add(1) > h && h > 0 {
		<-g.release
	}
	return g.Model.Forward(kv, seqs)
}

var lastGate *gatedModel // the gate of the last tinyEngine (tests here are not parallel)

func tinyEngine(t testing.TB, tokens, pageSize int) *engine.Engine {
	t.Helper()
	sh := model.Shapes["tiny"]
	sh.Vocab, sh.WeightStd = 256, 0.3
	m, err := model.LoadRandom(sh, gguf.F32, 7, model.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	p, err := kvcache.New(kvcache.Config{PageSize: pageSize, DType: gguf.F16, Layers: m.Config.Layers,
		KVDim: m.Config.KVDim(), Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedModel{Model: m, release: make(chan struct{})}
	lastGate = g
	e, err := engine.New(engine.Config{MaxContext: 128, VocabSize: m.Config.Vocab}, g, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

type fakeIso struct{ n uint64 }

func (f *fakeIso) RejectedHandoffs() uint64 { return f.n }

func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("scrape status %d", rec.Code)
	}
	body := rec.Body.String()
	for name := range want {
		if !strings.Contains(body, "# TYPE "+name+" ") {
			t.Errorf("no # TYPE line for %s (the EPP reads an untyped series as 0)", name)
		}
	}
	p := expfmt.NewTextParser(pmodel.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("exposition does not parse: %v\n%s", err, body)
	}
	return fams
}

func value(t *testing.T, fams map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil || len(f.Metric) != 1 {
		t.Fatalf("%s: want exactly one series, got %v", name, f)
	}
	m := f.Metric[0]
	switch f.GetType() {
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_HISTOGRAM:
		return float64(m.GetHistogram().GetSampleCount())
	}
	t.Fatalf("%s: unexpected type %v", name, f.GetType())
	return 0
}

func TestExpositionNamesTypesUnitsAndLoad(t *testing.T) {
	const pageSize, tokens = 4, 512
	eng := tinyEngine(t, tokens, pageSize)
	iso := &fakeIso{}
	m := New(eng, iso, Config{Role: "serve", BlockSize: pageSize})
	h := m.Handler()

	idle := scrape(t, h)
	for name, typ := range want {
		f := idle[name]
		if f == nil {
			t.Errorf("missing family %s", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("%s: type %v, want %v", name, f.GetType(), typ)
		}
		if strings.HasSuffix(name, "_seconds") && f.GetType() != dto.MetricType_HISTOGRAM {
			t.Errorf("%s: a _seconds series must be a histogram", name)
		}
		if strings.HasSuffix(name, "_total") != (f.GetType() == dto.MetricType_COUNTER) {
			t.Errorf("%s: type %v; counters and only counters end in _total", name, f.GetType())
		}
		if f.GetHelp() == "" {
			t.Errorf("%s: no HELP text", name)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	ci := idle["vllm:cache_config_info"].Metric[0]
	labels := map[string]string{}
	for _, l := range ci.Label {
		labels[l.GetName()] = l.GetValue()
	}
	if labels["block_size"] != "4" || labels["num_gpu_blocks"] != "128" || eng.Stats().PagesTotal != 128 {
		// 512 tokens / 4 tokens a page, the engine's usable pages
		t.Errorf("cache_config_info labels %v (engine has %d pages), want block_size=4 num_gpu_blocks=128", labels, eng.Stats().PagesTotal)
	}
	if v := value(t, idle, "vllm:kv_cache_usage_perc"); v != 0 {
		t.Errorf("idle KV usage %v, want 0", v)
	}

	// Under load: requests that are still generating hold pages and run.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prompt := make([]int32, 40)
	for i := range prompt {
		prompt[i] = int32(i%200 + 1)
	}
	var streams []<-chan engine.Event
	// Three long generations (the most the 128-token context allows, and
	// no preemption in the pool), so a scrape catches them running.
	const streamsN, genN = 3, 88
	// The prefill step and two decode steps run; the fourth forward pass
	// waits until the scrape below has seen the load.
	gate := lastGate
	gate.holdAfter.Store(gate.calls.Load() + 3)
	for i := range streamsN {
		req := engine.Request{ID: string(rune('a' + i)), Tenant: "t", Prompt: prompt, MaxTokens: genN, IgnoreEOS: true}
		ch, err := eng.Submit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, m.Track(ctx, len(prompt), ch))
	}
	// Read the first token of the first stream: its prefill is the first
	// pass after the gate was set, so it holds KV, and the held passes keep
	// it generating while the scrape runs. (Waiting for all three deadlocked
	// when the engine ran the gate's three passes before admitting the
	// later streams: they got no token until the release below.)
	if ev := <-streams[0]; ev.Err != nil {
		t.Fatal(ev.Err)
	}

	var loaded map[string]*dto.MetricFamily
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		loaded = scrape(t, h)
		if value(t, loaded, "vllm:num_requests_running") > 0 {
			break
		}
	}
	if v := value(t, loaded, "vllm:num_requests_running"); v < 1 {
		t.Errorf("running %v under load, want >= 1", v)
	}
	if u := value(t, loaded, "vllm:kv_cache_usage_perc"); u <= 0 || u > 1 {
		t.Errorf("KV usage %v under load, want in (0, 1]", u)
	}
	if b, v := value(t, loaded, "bulkhead:kv_cache_usage_perc"), value(t, loaded, "vllm:kv_cache_usage_perc"); b != v {
		t.Errorf("bulkhead and vllm KV usage differ: %v vs %v", b, v)
	}
	close(gate.release)
	gen := 0
	for _, s := range streams {
		for ev := range s {
			if ev.Err != nil {
				t.Fatal(ev.Err)
			}
			if ev.Finish == nil {
				gen++
			}
		}
	}
	gen++ // the first token read above
	// A second identical prompt hits the prefix cache.
	ch, err := eng.Submit(ctx, engine.Request{ID: "z", Tenant: "t", Prompt: prompt, MaxTokens: 2, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range m.Track(ctx, len(prompt), ch) {
		if ev.Err != nil {
			t.Fatal(ev.Err)
		}
		if ev.Finish == nil {
			gen++
		}
	}
	iso.n = 3
	m.DriftRefused()

	var done map[string]*dto.MetricFamily
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		done = scrape(t, h)
		if value(t, done, "vllm:num_requests_running") == 0 {
			break
		}
	}
	checks := []struct {
		name string
		want float64
	}{
		{"vllm:num_requests_running", 0},
		{"vllm:num_requests_waiting", 0},
		{"vllm:prompt_tokens_total", (streamsN + 1) * 40},
		{"vllm:prefix_cache_queries_total", (streamsN + 1) * 40},
		{"vllm:generation_tokens_total", float64(gen)},
		{"vllm:time_to_first_token_seconds", streamsN + 1},
		{"vllm:e2e_request_latency_seconds", streamsN + 1},
		{"vllm:inter_token_latency_seconds", float64(gen - (streamsN + 1))},
		{"bulkhead:kv_handoffs_rejected_total", 3},
		{"bulkhead:drift_refusals_total", 1},
		{"bulkhead:kv_ownership_check_failures_total", 0},
	}
	for _, c := range checks {
		if v := value(t, done, c.name); v != c.want {
			t.Errorf("%s = %v after load, want %v", c.name, v, c.want)
		}
	}
	if gen != streamsN*genN+2 {
		t.Errorf("generated %d tokens, want %d", gen, streamsN*genN+2)
	}
	hits := value(t, done, "vllm:prefix_cache_hits_total")
	if hits <= 0 || hits > value(t, done, "vllm:prefix_cache_queries_total") {
		t.Errorf("prefix hits %v: want > 0 (same prompt twice) and <= queries", hits)
	}
	if u := value(t, done, "vllm:kv_cache_usage_perc"); u != 0 {
		t.Errorf("KV usage %v after all requests ended, want 0 (cached pages count as free)", u)
	}
}

func TestKVUsageIsAFraction(t *testing.T) {
	for _, c := range []struct {
		st   engine.Stats
		want float64
	}{
		{engine.Stats{}, 0},
		{engine.Stats{PagesTotal: 10, PagesFree: 10}, 0},
		{engine.Stats{PagesTotal: 10, PagesFree: 2, PagesCached: 3}, 0.5},
		{engine.Stats{PagesTotal: 10}, 1},
	} {
		if got := KVUsage(c.st); got != c.want {
			t.Errorf("KVUsage(%+v) = %v, want %v", c.st, got, c.want)
		}
	}
}

// TestScrapeIsSmallAndConstant guards the 50 ms EPP scrape: the output has
// no per-request or per-tenant series, so its size does not grow with load.
func TestScrapeIsSmallAndConstant(t *testing.T) {
	eng := tinyEngine(t, 256, 16)
	m := New(eng, nil, Config{Role: "decode", BlockSize: 16})
	size := func() int {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		b, _ := io.ReadAll(rec.Body)
		return len(b)
	}
	a := size()
	for i := range 20 {
		ch := make(chan engine.Event, 2)
		ch <- engine.Event{Token: int32(i)}
		ch <- engine.Event{Finish: &engine.Finish{}}
		close(ch)
		for range m.Track(context.Background(), 5, ch) {
		}
	}
	b := size()
	if a > 16<<10 || b-a > 256 {
		t.Errorf("exposition %d bytes idle, %d after load; want < 16 KiB and (up to digits) constant", a, b)
	}
}

// BenchmarkScrape measures one full /metrics request (the EPP's default
// cadence is 20 per second per endpoint).
func BenchmarkScrape(b *testing.B) {
	eng := tinyEngine(b, 256, 16)
	m := New(eng, nil, Config{Role: "serve", BlockSize: 16})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := http.Get(srv.URL)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
