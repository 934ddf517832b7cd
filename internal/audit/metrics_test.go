package audit

import (
	"strings"
	"testing"
)

func TestParseMetricsReadsBulkheadAndVLLMNames(t *testing.T) {
	b := parseMetrics(strings.NewReader(`# HELP bulkhead:kv_pages_total Usable KV pages.
bulkhead:kv_pages_total 256
bulkhead:kv_pages_used 64
bulkhead:num_preemptions_total 3
`))
	if b.Source != "bulkhead" || b.PagesTotal != 256 || b.PagesUsed != 64 || b.Preemptions != 3 || b.Usage != 0.25 {
		t.Errorf("bulkhead: %+v", b)
	}
	v := parseMetrics(strings.NewReader(`vllm:cache_config_info{block_size="16",cache_dtype="auto",num_gpu_blocks="4096"} 1.0
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:num_preemptions_total{engine="0",model_name="m"} 7.0
`))
	if v.Source != "vllm" || v.PagesTotal != 4096 || v.PageSize != 16 || v.Usage != 0.5 || v.Preemptions != 7 {
		t.Errorf("vllm: %+v", v)
	}
	if n := parseMetrics(strings.NewReader("other 1\n")); n.ok() {
		t.Errorf("unknown metrics taken as pool figures: %+v", n)
	}
}
