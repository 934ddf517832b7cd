package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
)

// dashboardQueries returns every Prometheus expression of the dashboard,
// with the title of its panel.
func dashboardQueries(t *testing.T, path string) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string][]string{}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			out[p.Title] = append(out[p.Title], tg.Expr)
		}
	}
	return out
}

// exportedTypes scrapes a real /metrics and returns each family's type.
func exportedTypes(t *testing.T, url string) map[string]string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	types := map[string]string{}
	for line := range strings.Lines(string(body)) {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
		}
	}
	return types
}

var metricName = regexp.MustCompile(`bulkhead:[a-zA-Z0-9_:]+`)

// Every query of deploy/grafana/bulkhead.json names only metrics a running
// serve exports, with the suffixes their types have (_bucket on histograms).
func TestGrafanaDashboardQueriesNameExportedMetrics(t *testing.T) {
	base, admin, _ := startServeAdmin(t)
	// One completion and one oversized prompt, so the per-tenant series and
	// the rejection counter exist.
	post := func(body string) {
		resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	post(`{"model":"` + copymodel.Name + `","prompt":"hello there","max_tokens":3}`)
	post(`{"model":"` + copymodel.Name + `","prompt":"` + strings.Repeat("hello ", 1500) + `","max_tokens":3}`)
	types := exportedTypes(t, admin+"/metrics")
	if len(types) < 10 {
		t.Fatalf("scrape found only %d metric families: %v", len(types), types)
	}
	queries := dashboardQueries(t, "../../deploy/grafana/bulkhead.json")
	used := map[string]bool{}
	for title, exprs := range queries {
		for _, e := range exprs {
			names := metricName.FindAllString(e, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: query %q names no bulkhead metric", title, e)
			}
			for _, n := range names {
				family, suffix := n, ""
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					if base, ok := strings.CutSuffix(n, s); ok && types[base] == "histogram" {
						family, suffix = base, s
					}
				}
				typ, ok := types[family]
				switch {
				case !ok:
					t.Errorf("panel %q: %s is not exported by bulkhead", title, n)
				case typ == "histogram" && suffix == "":
					t.Errorf("panel %q: %s is a histogram; query its _bucket, _sum or _count", title, n)
				case strings.Contains(e, "histogram_quantile") && typ == "histogram" && suffix != "_bucket":
					t.Errorf("panel %q: histogram_quantile over %s needs _bucket", title, n)
				}
				used[family] = true
			}
		}
	}
	for _, must := range []string{"bulkhead:generation_tokens_total", "bulkhead:time_to_first_token_seconds",
		"bulkhead:time_per_output_token_seconds", "bulkhead:kv_pages_used", "bulkhead:num_preemptions_total",
		"bulkhead:kv_ownership_check_failures_total", "bulkhead:request_rejections_total"} {
		if !used[must] {
			t.Errorf("the dashboard does not chart %s", must)
		}
	}
}
