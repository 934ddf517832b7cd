package audit

import (
	"strings"
	"testing"
)

func TestHTMLReportHighlightsLeaksAndIsSelfContained(t *testing.T) {
	r := &Report{URL: "http://x", Effective: &Effective{Tokens: 512}, Claims: []ContextClaim{{Source: "--max-context", Tokens: 1024}},
		Probes: []ProbeResult{
			{ID: 1, Phase: PhaseTenants, Tenant: 1, Tokens: 100, Canary: "aa bb", Verdict: Pass, Outcome: OutcomeOK},
			{ID: 2, Phase: PhaseTenants, Tenant: 0, Tokens: 600, Canary: "cc dd", Output: "aa bb <x>", Verdict: Leak, Outcome: OutcomeOK,
				LeakedFrom: []LeakSource{{Probe: 1, Tenant: 1, CrossTenant: true}}},
		}}
	r.count()
	r.Findings = probeFindings(r.Probes)
	var b strings.Builder
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"<mark>aa</mark> <mark>bb</mark> &lt;x&gt;", "<svg", "effective 512", "--max-context 1024", ">FAIL<", "leak-cross-tenant"} {
		if !strings.Contains(out, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	for _, bad := range []string{"<script", "src=\"http", "href=\"http"} {
		if strings.Contains(out, bad) {
			t.Errorf("HTML is not self-contained: has %q", bad)
		}
	}
}
