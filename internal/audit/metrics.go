package audit

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// serverMetrics is what the audit reads from a Prometheus /metrics page:
// bulkhead's names and vLLM's. Absent series are left at -1.
type serverMetrics struct {
	PagesTotal  float64 // bulkhead:kv_pages_total, vllm:cache_config_info num_gpu_blocks
	PagesUsed   float64 // bulkhead:kv_pages_used
	Usage       float64 // fraction of the pool in use: vllm:kv_cache_usage_perc (or gpu_cache_usage_perc), or used/total
	Preemptions float64 // bulkhead:num_preemptions_total, vllm:num_preemptions_total
	PageSize    float64 // vllm:cache_config_info block_size
	Source      string  // "bulkhead" or "vllm"
}

func (m serverMetrics) ok() bool { return m.Source != "" }

// metrics fetches and parses /metrics; ok() is false when the server
// exports none the audit knows.
func (c *client) metrics(ctx context.Context, key string) serverMetrics {
	m := serverMetrics{PagesTotal: -1, PagesUsed: -1, Usage: -1, Preemptions: -1, PageSize: -1}
	var resp *http.Response
	var err error
	if c.metricsURL != "" {
		req, rerr := http.NewRequestWithContext(ctx, http.MethodGet, c.metricsURL, nil)
		if rerr != nil {
			return m
		}
		resp, err = c.http.Do(req)
	} else {
		resp, err = c.send(ctx, http.MethodGet, "/metrics", key, nil)
	}
	if err != nil {
		return m
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return m
	}
	return parseMetrics(io.LimitReader(resp.Body, 8<<20))
}

// parseMetrics reads the Prometheus text format, summing series of one
// name across labels (vLLM labels its series by model and engine).
func parseMetrics(r io.Reader) serverMetrics {
	m := serverMetrics{PagesTotal: -1, PagesUsed: -1, Usage: -1, Preemptions: -1, PageSize: -1}
	// bulkhead serves its vllm: series beside its own on one page; its own
	// pool figures then name the source, whichever comes first.
	bulkhead := false
	add := func(dst *float64, v float64) {
		if *dst < 0 {
			*dst = 0
		}
		*dst += v
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, labels := line, ""
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				continue
			}
			name, labels = line[:i], line[i+1:j]
			line = name + line[j+1:]
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "bulkhead:kv_pages_total":
			add(&m.PagesTotal, v)
			bulkhead = true
		case "bulkhead:kv_pages_used":
			add(&m.PagesUsed, v)
		case "bulkhead:num_preemptions_total", "vllm:num_preemptions_total", "vllm:num_preemptions":
			add(&m.Preemptions, v)
		case "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc":
			m.Usage = max(m.Usage, v)
			m.Source = "vllm"
		case "vllm:cache_config_info":
			if n, ok := labelFloat(labels, "num_gpu_blocks"); ok {
				m.PagesTotal = n
			}
			if n, ok := labelFloat(labels, "block_size"); ok {
				m.PageSize = n
			}
			m.Source = "vllm"
		}
	}
	if bulkhead {
		m.Source = "bulkhead"
	}
	if m.Usage < 0 && m.PagesTotal > 0 && m.PagesUsed >= 0 {
		m.Usage = m.PagesUsed / m.PagesTotal
	}
	return m
}

// labelFloat reads a numeric label value from a Prometheus label set.
func labelFloat(labels, name string) (float64, bool) {
	for _, kv := range strings.Split(labels, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if ok && k == name {
			n, err := strconv.ParseFloat(strings.Trim(v, `"`), 64)
			return n, err == nil
		}
	}
	return 0, false
}
