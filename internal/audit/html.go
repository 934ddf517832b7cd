package audit

import (
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
)

// WriteHTML writes the report as one self-contained HTML page: no
// scripts, no external resources. It holds the verdict, the findings with
// their evidence, a plot of canary retrieval against prompt length, the
// probes by phase and length, and every leak with the other request's
// canary highlighted in the quoted output.
func (r *Report) WriteHTML(w io.Writer) error {
	return htmlPage.Execute(w, htmlData{Report: r, Result: r.result(), Plot: retrievalPlot(r), Phases: byPhase(r.Probes)})
}

// result is the one-word outcome the summary ends with.
func (r *Report) result() string {
	switch {
	case r.Failed():
		return "FAIL"
	case r.Incomplete != "":
		return "INCOMPLETE"
	}
	return "PASS"
}

type htmlData struct {
	*Report
	Result string
	Plot   template.HTML
	Phases []phaseRows
}

type phaseRows struct {
	Phase  Phase
	Probes []ProbeResult
}

// byPhase groups probes by phase in the order phases ran, each sorted by
// prompt length.
func byPhase(ps []ProbeResult) []phaseRows {
	var out []phaseRows
	idx := map[Phase]int{}
	for _, p := range ps {
		i, ok := idx[p.Phase]
		if !ok {
			i = len(out)
			idx[p.Phase] = i
			out = append(out, phaseRows{Phase: p.Phase})
		}
		out[i].Probes = append(out[i].Probes, p)
	}
	for i := range out {
		sort.SliceStable(out[i].Probes, func(a, b int) bool { return out[i].Probes[a].Tokens < out[i].Probes[b].Tokens })
	}
	return out
}

// highlight quotes an output with the words of the canaries it leaked
// marked.
func highlight(p ProbeResult, canaries map[int]string) template.HTML {
	marked := map[string]bool{}
	for _, s := range p.LeakedFrom {
		for _, w := range strings.Fields(canaries[s.Probe]) {
			marked[w] = true
		}
	}
	var b strings.Builder
	for i, w := range strings.Fields(p.Output) {
		if i > 0 {
			b.WriteByte(' ')
		}
		esc := template.HTMLEscapeString(w)
		if marked[w] {
			esc = "<mark>" + esc + "</mark>"
		}
		b.WriteString(esc)
	}
	return template.HTML(b.String())
}

// retrievalPlot draws every probe as a point: prompt length across,
// outcome up (canary retrieved, refused, answered wrongly, leaked), with
// lines at the effective and claimed contexts. Inline SVG, no script.
func retrievalPlot(r *Report) template.HTML {
	const w, h, left, right, top, bottom = 760.0, 240.0, 110.0, 20.0, 20.0, 40.0
	maxX := 1
	for _, p := range r.Probes {
		maxX = max(maxX, p.Tokens)
	}
	for _, c := range r.Claims {
		maxX = max(maxX, c.Tokens)
	}
	x := func(n int) float64 { return left + (w-left-right)*float64(n)/float64(maxX) }
	rows := []string{"retrieved", "refused", "wrong / cut", "LEAK"}
	y := func(row int) float64 { return top + (h-top-bottom)*float64(row)/float64(len(rows)-1) }
	rowOf := func(p ProbeResult) (int, string) {
		switch {
		case p.Verdict == Leak:
			return 3, "#c00"
		case p.Verdict == Fail:
			return 2, "#e80"
		case p.Outcome == OutcomeOK:
			return 0, "#2a2"
		}
		return 1, "#888"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" role="img" aria-label="canary retrieval vs prompt length">`, w, h)
	for i, name := range rows {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" font-size="12" text-anchor="end">%s</text><line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#eee"/>`,
			left-8, y(i)+4, name, left, w-right, y(i), y(i))
	}
	vline := func(n int, label, color string) {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="%s" stroke-dasharray="4 3"/><text x="%.1f" y="%.0f" font-size="11" fill="%s">%s</text>`,
			x(n), x(n), top-10, h-bottom+6, color, x(n)+3, top-8, color, template.HTMLEscapeString(label))
	}
	if e := r.Effective; e != nil {
		vline(e.Tokens, fmt.Sprintf("effective %d", e.Tokens), "#06c")
	}
	for _, c := range r.Claims {
		if r.Effective == nil || c.Tokens != r.Effective.Tokens {
			vline(c.Tokens, fmt.Sprintf("%s %d", c.Source, c.Tokens), "#a0a")
		}
	}
	for _, p := range r.Probes {
		row, color := rowOf(p)
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s" fill-opacity="0.6"><title>#%d %s, %d tokens: %s</title></circle>`,
			x(p.Tokens), y(row), color, p.ID, p.Phase, p.Tokens, template.HTMLEscapeString(p.Reason))
	}
	fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.0f" y2="%.0f" stroke="#444"/>`, left, w-right, h-bottom+6, h-bottom+6)
	for _, n := range []int{0, maxX / 4, maxX / 2, 3 * maxX / 4, maxX} {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" font-size="11" text-anchor="middle">%d</text>`, x(n), h-bottom+22, n)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="12" text-anchor="middle">prompt tokens</text></svg>`, left+(w-left-right)/2, h-4)
	return template.HTML(b.String())
}

var htmlPage = template.Must(template.New("audit").Funcs(template.FuncMap{
	"upper": func(s any) string { return strings.ToUpper(fmt.Sprint(s)) },
	"canaries": func(ps []ProbeResult) map[int]string {
		m := map[int]string{}
		for _, p := range ps {
			m[p.ID] = p.Canary
		}
		return m
	},
	"highlight": highlight,
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>bulkhead audit: {{.Result}} — {{.URL}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:70em;color:#222}
h1 .PASS{color:#2a2}h1 .FAIL{color:#c00}h1 .INCOMPLETE{color:#e80}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f4f4f4}.critical,.LEAK{background:#fdd}.high,.FAIL{background:#fed}.medium,.WARN{background:#ffc}
mark{background:#f55;color:#fff;padding:0 2px}code{font-size:12px}details{margin:.3em 0}
</style></head><body>
<h1>bulkhead audit: <span class="{{.Result}}">{{.Result}}</span></h1>
<table>
<tr><th>server</th><td>{{.URL}} (model {{.Model}}, {{.Style}} prompts)</td></tr>
{{range .Claims}}<tr><th>claimed context</th><td>{{.Tokens}} tokens ({{.Source}})</td></tr>{{end}}
{{with .Effective}}<tr><th>effective context</th><td>{{if .Unbounded}}at least {{.Tokens}}{{else}}{{.Tokens}} tokens (longest answered prompt {{.LongestAccepted}}, shortest refused {{.ShortestRefused}}){{end}}</td></tr>{{end}}
<tr><th>tenants</th><td>{{.Tenants}} real, {{.Sessions}} sessions</td></tr>
<tr><th>probes</th><td>{{len .Probes}}: {{.Counts.Pass}} pass, {{.Counts.Warn}} warn, {{.Counts.Fail}} fail, {{.Counts.Leak}} leak</td></tr>
<tr><th>prompt lengths</th><td>{{.Tokenizer}}</td></tr>
{{with .Incomplete}}<tr><th>stopped early</th><td>{{.}}</td></tr>{{end}}
</table>
<h2>Findings</h2>
<table><tr><th>severity</th><th>finding</th><th>meaning</th></tr>
{{range .Findings}}<tr class="{{.Severity}}"><td>{{upper .Severity}}</td><td><b>{{.Kind}}</b>: {{.Title}}
{{if .Evidence}}<details><summary>evidence ({{len .Evidence}})</summary><ul>{{range .Evidence}}<li>{{.Request}}{{if .Status}} → status {{.Status}}{{end}}{{with .FinishReason}}, finish_reason {{.}}{{end}}{{with .Response}}: <code>{{.}}</code>{{end}}</li>{{end}}</ul></details>{{end}}</td><td>{{.Meaning}}</td></tr>
{{end}}</table>
{{$c := canaries .Probes}}
{{$leaks := false}}{{range .Probes}}{{if eq .Verdict "LEAK"}}{{$leaks = true}}{{end}}{{end}}
{{if $leaks}}<h2>Leaks</h2><table><tr><th>probe</th><th>tenant</th><th>tokens</th><th>own canary</th><th>output (other requests' canary words marked)</th><th>from</th></tr>
{{range .Probes}}{{if eq .Verdict "LEAK"}}<tr class="LEAK"><td>#{{.ID}} {{.Phase}}</td><td>{{.Tenant}}</td><td>{{.Tokens}}</td><td><code>{{.Canary}}</code></td><td><code>{{highlight . $c}}</code></td><td>{{range .LeakedFrom}}#{{.Probe}} (tenant {{.Tenant}}{{if .CrossTenant}}, another tenant{{end}}) {{end}}</td></tr>{{end}}{{end}}
</table>{{end}}
<h2>Canary retrieval vs prompt length</h2>
{{.Plot}}
{{with .Timing}}<h2>Prefix-cache timing probe</h2><p>{{.Samples}} prompts of {{.PromptTokens}} tokens primed by tenant 0 and sent by tenant 1, against {{.Samples}} fresh ones: median {{printf "%.2f" .PrimedMedianMs}} ms vs {{printf "%.2f" .FreshMedianMs}} ms, KS D={{printf "%.2f" .D}}, p={{printf "%.2g" .PValue}} (α={{.Alpha}}): {{if .CacheShared}}<b>cache shared across tenants</b>{{else}}no sign of sharing{{end}}.</p>{{end}}
{{with .Pressure}}<h2>Pressure</h2><p>{{.Requests}} concurrent prompts of {{.PromptTokens}} tokens ({{.TokensSent}} tokens) against a pool of {{.PoolTokens}} tokens ({{.PoolSource}}); peak usage {{printf "%.2f" .PeakUsage}}, preemptions {{.Preemptions}}, pages reused at least {{.PagesReused}} (−1: unknown).</p>{{end}}
<h2>Probes by phase and length</h2>
{{range .Phases}}<details{{if ne .Phase "tenants"}} open{{end}}><summary>{{.Phase}} ({{len .Probes}})</summary>
<table><tr><th>#</th><th>tenant</th><th>tokens</th><th>fit</th><th>canary at</th><th>stream</th><th>status</th><th>finish</th><th>verdict</th><th>reason</th></tr>
{{range .Probes}}<tr class="{{.Verdict}}"><td>{{.ID}}</td><td>{{.Tenant}}</td><td>{{.Tokens}}</td><td>{{.Fit}}</td><td>{{.Position}}</td><td>{{.Stream}}</td><td>{{.Status}}</td><td>{{.FinishReason}}</td><td>{{.Verdict}}</td><td>{{.Reason}}</td></tr>
{{end}}</table></details>
{{end}}
</body></html>
`))
