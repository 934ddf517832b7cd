package audit_test

import (
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/audit"
	"github.com/bulkhead-llm/bulkhead/internal/audit/auditfake"
)

// A 200 with finish_reason length before the canary is complete is a
// truncation (a clamp the server did not admit), not a wrong canary.
func TestClampedAnswersAreReportedAsTruncation(t *testing.T) {
	srv := auditfake.New(auditfake.Options{MaxContext: testContext(), Key: "KEY", ClampTokens: 3})
	defer srv.Close()
	rep := mustRun(t, srv, audit.StyleCopy, nil)
	if !rep.Failed() {
		t.Fatal("a server that clamps every answer passed")
	}
	var trunc *audit.Finding
	for i, f := range rep.Findings {
		switch f.Kind {
		case "truncation":
			trunc = &rep.Findings[i]
		case "wrong-answer":
			t.Errorf("clamped answers reported as wrong answers: %s", f.Title)
		}
	}
	if trunc == nil || trunc.Severity != audit.High || len(trunc.Evidence) == 0 {
		t.Fatalf("no truncation finding with evidence: %+v", rep.Findings)
	}
	ev := trunc.Evidence[0]
	if ev.Status != 200 || ev.FinishReason != "length" || !strings.Contains(ev.Request, "max_tokens 8") || ev.Response == "" {
		t.Errorf("evidence lacks request, status, finish reason or response: %+v", ev)
	}
}
