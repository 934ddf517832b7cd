package main

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// One /metrics page per role: the API server's bulkhead: series and the
// vLLM-compatible ones a cluster router's endpoint picker reads
// (internal/podmetrics). The two registries share some bulkhead: names
// (podmetrics' twins of its vllm: series, and its engine counters), so a
// plain concatenation would repeat a family and be refused by a scraper.
// The API registry owns each shared name; podmetrics' copy is dropped.

// apiOwned are the names both registries export. They are listed, not
// learned from a scrape, because a labelled API family has no series (and
// so no name on the page) until its first request: deciding per scrape
// would make the name change source, and labels, mid-run.
var apiOwned = map[string]bool{
	"bulkhead:requests_total":                    true,
	"bulkhead:prompt_tokens_total":               true,
	"bulkhead:generation_tokens_total":           true,
	"bulkhead:num_requests_running":              true,
	"bulkhead:num_requests_waiting":              true,
	"bulkhead:prefix_cache_queries_total":        true,
	"bulkhead:kv_ownership_check_failures_total": true,
	"bulkhead:num_preemptions_total":             true,
}

// mergedGatherer gathers api first, then pm without the names api owns or
// has just exported (the second rule keeps the page valid should the API
// registry gain a name this list lacks).
type mergedGatherer struct {
	api func() prometheus.Gatherer
	pm  prometheus.Gatherer
}

func (g mergedGatherer) Gather() ([]*dto.MetricFamily, error) {
	var out []*dto.MetricFamily
	seen := map[string]bool{}
	if api := g.api(); api != nil {
		fams, err := api.Gather()
		if err != nil {
			return nil, err
		}
		for _, f := range fams {
			seen[f.GetName()] = true
		}
		out = fams
	}
	fams, err := g.pm.Gather()
	if err != nil {
		return nil, err
	}
	for _, f := range fams {
		if n := f.GetName(); !apiOwned[n] && !seen[n] {
			out = append(out, f)
		}
	}
	return out, nil
}

// adminMetrics serves the merged page. api may be nil (a gateway whose
// API server does not exist yet), and then only pm's series are served.
// Compression is off for the endpoint picker's frequent scrapes (see
// podmetrics.Handler).
func adminMetrics(api func() prometheus.Gatherer, pm prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(mergedGatherer{api, pm}, promhttp.HandlerOpts{DisableCompression: true})
}
