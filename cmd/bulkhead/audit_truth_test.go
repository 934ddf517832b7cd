package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/audit"
)

// An audit that tells an operator the truth: bulkhead serve with a
// 512-token context, audited as an operator who believes another context
// would, must report the mismatch naming both numbers and judge every
// probe against the context the server really enforces.

func auditJSON(t *testing.T, bin string, args ...string) (int, audit.Report, string) {
	t.Helper()
	code, out, errOut := runCmd(t, 5*time.Minute, bin, append([]string{"audit", "--json", "--concurrency", "2", "--prompt-style", "copy"}, args...)...)
	var rep audit.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("audit %q: exit %d, report not JSON: %v\n%s\n%s", args, code, err, out, errOut)
	}
	return code, rep, errOut
}

func findingsOf(rep audit.Report, kind string) []audit.Finding {
	var out []audit.Finding
	for _, f := range rep.Findings {
		if f.Kind == kind {
			out = append(out, f)
		}
	}
	return out
}

func summarize(rep audit.Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "counts %+v effective %+v\n", rep.Counts, rep.Effective)
	for _, f := range rep.Findings {
		fmt.Fprintf(&b, "  [%s] %s: %s\n", f.Severity, f.Kind, f.Title)
	}
	return b.String()
}

func TestAuditDiscoversTheEffectiveContext(t *testing.T) {
	bin := binary(t, "")
	keys := []string{"sk-truth-a-0123456789", "sk-truth-b-0123456789"}
	srv := start(t, bin, "serve", "--listen", "127.0.0.1:0", "--max-context", "512", "--kv-tokens", "4096",
		"--threads", "1", "--log-level", "warn", "--tenants", tenantsFile(t, keys...))
	tests := []struct {
		claim    string // --max-context passed to the audit ("" for none)
		code     int
		mismatch string // a fragment of the mismatch finding's title ("" for none)
	}{
		{"", 0, ""},
		{"256", 1, "effective context 512 tokens, but --max-context says 256"},
		{"1024", 1, "effective context 512 tokens, but --max-context says 1024"},
		{"100000", 1, "effective context 512 tokens, but --max-context says 100000"},
	}
	for _, tc := range tests {
		t.Run("claim="+tc.claim, func(t *testing.T) {
			args := []string{"--url", srv.url(), "--metrics-url", srv.adminURL() + "/metrics", "--api-key", keys[0], "--api-key", keys[1]}
			if tc.claim != "" {
				args = append(args, "--max-context", tc.claim)
			}
			code, rep, errOut := auditJSON(t, bin, args...)
			t.Logf("exit %d\n%s", code, summarize(rep))
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, summarize(rep), errOut)
			}
			if rep.Effective == nil || rep.Effective.Tokens != 512 || rep.Effective.Unbounded {
				t.Fatalf("effective context %+v, want 512\n%s", rep.Effective, summarize(rep))
			}
			// Whatever the claim, no probe is misjudged: a clamped answer
			// is not a wrong canary, an oversized 200 is not a pass.
			if rep.Counts.Fail+rep.Counts.Leak != 0 {
				t.Fatalf("probes failed against an honest server:\n%s", summarize(rep))
			}
			mm := findingsOf(rep, "context-mismatch")
			if tc.mismatch == "" {
				if len(mm) != 0 {
					t.Fatalf("mismatch reported for an honest claim:\n%s", summarize(rep))
				}
				// The pool of 4096 tokens was filled and reused, and
				// the tenants' separate salts show in the timing probe.
				if pr := rep.Pressure; pr == nil || pr.PagesReused <= 0 || pr.PoolSource != "/metrics (bulkhead)" || len(findingsOf(rep, "pressure")) != 1 {
					t.Fatalf("pressure not reached or not reported: %+v\n%s", rep.Pressure, summarize(rep))
				}
				if rep.Timing == nil || rep.Timing.CacheShared || len(findingsOf(rep, "prefix-cache-timing")) != 1 {
					t.Fatalf("timing probe: %+v\n%s", rep.Timing, summarize(rep))
				}
				return
			}
			if len(mm) != 1 || !strings.Contains(mm[0].Title, tc.mismatch) || len(mm[0].Evidence) == 0 {
				t.Fatalf("want one mismatch finding %q with evidence:\n%s", tc.mismatch, summarize(rep))
			}
			// Boundary probes ran at the claimed boundary too.
			atClaim := false
			for _, p := range rep.Probes {
				if p.Phase == audit.PhaseBoundary && fmt.Sprint(p.Target) == fmt.Sprint(mustAtoi(t, tc.claim)+1) {
					atClaim = true
				}
			}
			if !atClaim {
				t.Errorf("no boundary probe at the claimed context %s", tc.claim)
			}
		})
	}
}

func mustAtoi(t *testing.T, s string) int {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Honest tenant accounting: one key twice is one tenant; a server without
// authentication has one tenant whatever keys are sent; either way the
// report says cross-tenant isolation was not tested.
func TestAuditCountsRealTenants(t *testing.T) {
	bin := binary(t, "")
	key := "sk-dup-a-0123456789"
	authed := start(t, bin, "serve", "--listen", "127.0.0.1:0", "--max-context", "512", "--kv-tokens", "4096",
		"--threads", "1", "--log-level", "warn", "--tenants", tenantsFile(t, key, "sk-dup-b-0123456789"))
	open := start(t, bin, "serve", "--listen", "127.0.0.1:0", "--max-context", "512", "--kv-tokens", "4096",
		"--threads", "1", "--log-level", "warn")
	for _, c := range []struct {
		name  string
		url   string
		keys  []string
		kinds []string
	}{
		{"same key twice", authed.url(), []string{key, key}, []string{"duplicate-keys", "isolation-untested"}},
		{"no authentication", open.url(), []string{"sk-made-up-1", "sk-made-up-2"}, []string{"no-authentication", "isolation-untested"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"--url", c.url, "--sessions", "2"}
			for _, k := range c.keys {
				args = append(args, "--api-key", k)
			}
			code, rep, errOut := auditJSON(t, bin, args...)
			t.Logf("exit %d\n%s", code, summarize(rep))
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, summarize(rep), errOut)
			}
			if rep.Tenants != 1 || rep.Sessions != 2 {
				t.Fatalf("%d tenants, %d sessions; want 1 tenant, 2 sessions\n%s", rep.Tenants, rep.Sessions, summarize(rep))
			}
			for _, k := range c.kinds {
				if len(findingsOf(rep, k)) != 1 {
					t.Errorf("no %s finding:\n%s", k, summarize(rep))
				}
			}
			if rep.Timing != nil {
				t.Errorf("timing probe ran with one real tenant")
			}
		})
	}
}
