package audit

import (
	"strings"
	"testing"
)

func TestSummaryListsLeaksFirstAndFailsTheRun(t *testing.T) {
	r := &Report{Probes: []ProbeResult{
		{ID: 1, Verdict: Pass, Reason: "fine"},
		{ID: 2, Verdict: Warn, Reason: "warned"},
		{ID: 3, Verdict: Fail, Reason: "failed"},
		{ID: 4, Verdict: Leak, Reason: "leaked", LeakedFrom: []LeakSource{{Probe: 9, Tenant: 1, CrossTenant: true}}},
	}}
	r.count()
	var b strings.Builder
	if err := r.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	leak, fail, warn := strings.Index(out, "leaked"), strings.Index(out, "failed"), strings.Index(out, "warned")
	if !(leak >= 0 && leak < fail && fail < warn) || strings.Contains(out, "fine") {
		t.Errorf("want LEAK, FAIL, WARN in that order and no PASS lines:\n%s", out)
	}
	if !strings.Contains(out, "canary of probe #9 (tenant 1, another tenant)") {
		t.Errorf("leak source not named:\n%s", out)
	}
	if !strings.Contains(out, "\nFAIL: 1 pass, 1 warn, 1 fail, 1 leak\n") || !r.Failed() {
		t.Errorf("result line wrong or run not failed:\n%s", out)
	}
}

func TestWarningsAloneDoNotFailTheRun(t *testing.T) {
	r := &Report{Probes: []ProbeResult{{Verdict: Pass}, {Verdict: Warn}}}
	r.count()
	if r.Failed() {
		t.Fatal("a run with only PASS and WARN failed")
	}
}
