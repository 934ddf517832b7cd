package main

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
)

// freeAddr reserves a loopback port for a child process's metrics listener.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func scrapeFamilies(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%s/metrics: status %d", addr, resp.StatusCode)
	}
	p := expfmt.NewTextParser(pmodel.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func counterValue(t *testing.T, fams map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil || len(f.Metric) != 1 {
		t.Fatalf("%s: want one series, got %v", name, f)
	}
	if f.GetType() == dto.MetricType_GAUGE {
		return f.Metric[0].GetGauge().GetValue()
	}
	return f.Metric[0].GetCounter().GetValue()
}

// Every role serves the vLLM-compatible endpoint on --metrics-listen, and
// each counts what it did: prefill the prompt, decode and gateway the tokens.
func TestMetricsListenOnEveryRole(t *testing.T) {
	bin := binary(t, "")
	pool := []string{"--max-context", "1024", "--kv-tokens", "8192", "--threads", "1", "--log-level", "warn"}
	mp, md, mg, ms := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	pre := start(t, bin, append([]string{"worker", "--role", "prefill", "--listen", "127.0.0.1:0", "--metrics-listen", mp}, pool...)...)
	dec := start(t, bin, append([]string{"worker", "--role", "decode", "--listen", "127.0.0.1:0", "--kv-listen", "127.0.0.1:0", "--metrics-listen", md}, pool...)...)
	gw := start(t, bin, "gateway", "--prefill", pre.url(), "--decode", dec.url(), "--listen", "127.0.0.1:0", "--metrics-listen", mg)
	srv := start(t, bin, append([]string{"serve", "--listen", "127.0.0.1:0", "--metrics-listen", ms}, pool...)...)

	words := copymodel.AuditWords()
	prompt, _ := copymodel.Prompt(words.Canary[:8], 30, 700, 3)
	want := " " + strings.Join(words.Canary[:8], " ")
	for _, base := range []string{gw.url(), srv.url()} {
		if code, body := completion(t, base, prompt, 8, false); code != 200 || !strings.Contains(body, want) {
			t.Fatalf("%s: %d %s", base, code, body)
		}
	}
	for _, c := range []struct {
		role, addr string
		prompt     bool // counts prompt tokens
		gen        bool // counts generated tokens
	}{
		{"prefill", mp, true, false},
		{"decode", md, true, true},
		{"gateway", mg, true, true},
		{"serve", ms, true, true},
	} {
		fams := scrapeFamilies(t, c.addr)
		for _, name := range []string{"vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc",
			"vllm:cache_config_info", "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
			"vllm:time_to_first_token_seconds", "bulkhead:kv_handoffs_rejected_total", "bulkhead:kv_ownership_check_failures_total"} {
			if fams[name] == nil {
				t.Errorf("%s: no %s", c.role, name)
			}
		}
		if role := fams["vllm:num_requests_running"].GetMetric()[0].GetLabel(); len(role) != 1 || role[0].GetValue() != c.role {
			t.Errorf("%s: role label %v", c.role, role)
		}
		if p := counterValue(t, fams, "vllm:prompt_tokens_total"); (p > 0) != c.prompt {
			t.Errorf("%s: prompt tokens %v", c.role, p)
		}
		if g := counterValue(t, fams, "vllm:generation_tokens_total"); (g > 0) != c.gen {
			t.Errorf("%s: generation tokens %v", c.role, g)
		} else if c.gen && g < 8 {
			t.Errorf("%s: %v generated tokens, want >= 8", c.role, g)
		}
		if u := counterValue(t, fams, "vllm:kv_cache_usage_perc"); u < 0 || u > 1 {
			t.Errorf("%s: KV usage %v outside [0, 1]", c.role, u)
		}
	}
}
