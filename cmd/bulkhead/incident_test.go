package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/audit"
	"github.com/bulkhead-llm/bulkhead/internal/tenant"
)

func hashKeyForTest(k string) string { return tenant.HashKey(k) }

// The incident of DESIGN.md, reproduced and caught: a build with the
// leakrepro tag admits oversized prompts with a placeholder on pages other
// tenants left behind; the audit must report a LEAK quoting the other
// tenant's canary. The normal build must pass the same audit.

// crossTenantLeak returns a probe whose output carries another tenant's
// canary, checking that the output really quotes that canary.
func crossTenantLeak(t *testing.T, rep *audit.Report) *audit.ProbeResult {
	t.Helper()
	canaries := map[int]string{}
	for _, p := range rep.Probes {
		canaries[p.ID] = p.Canary
	}
	for i := range rep.Probes {
		p := &rep.Probes[i]
		if p.Verdict != audit.Leak {
			continue
		}
		for _, src := range p.LeakedFrom {
			if src.CrossTenant && canaries[src.Probe] != "" && strings.Contains(p.Output, canaries[src.Probe]) {
				return p
			}
		}
	}
	return nil
}

func TestIncidentReproducedMonolithic(t *testing.T) {
	for _, c := range []struct {
		tags     string
		wantCode int
	}{{"", 0}, {"leakrepro", 1}} {
		t.Run("tags="+c.tags, func(t *testing.T) {
			bin := binary(t, c.tags)
			// Without the prefix-cache timing probe: it is a statistical
			// test (α = 0.01, so about one honest run in a hundred is
			// flagged, more on a loaded machine) with tests of its own
			// (TestTimingProbeDetectsASharedSalt); this one is about the
			// incident's canary leak, which is deterministic.
			code, out, errOut := runCmd(t, 5*time.Minute, bin, "audit", "--self-check", "--json", "--concurrency", "1", "--timing-samples", "-1")
			var rep audit.Report
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("exit %d, report not JSON: %v\n%s\n%s", code, err, out, errOut)
			}
			if code != c.wantCode {
				t.Fatalf("exit %d, want %d:\n%s\n%s", code, c.wantCode, summarize(rep), errOut)
			}
			leak := crossTenantLeak(t, &rep)
			if c.tags == "" {
				if rep.Counts.Fail+rep.Counts.Leak != 0 || rep.Counts.Pass == 0 {
					t.Fatalf("normal build: %+v", rep.Counts)
				}
				return
			}
			if leak == nil {
				t.Fatalf("leakrepro build: no LEAK quoting another tenant's canary; counts %+v", rep.Counts)
			}
			t.Logf("caught: probe #%d (tenant %d, %d tokens, %s) answered %q", leak.ID, leak.Tenant, leak.Tokens, leak.Fit, leak.Output)
		})
	}
}

func TestIncidentReproducedDisaggregated(t *testing.T) {
	for _, c := range []struct {
		tags     string
		wantLeak bool
	}{{"", false}, {"leakrepro", true}} {
		t.Run("tags="+c.tags, func(t *testing.T) {
			bin := binary(t, c.tags)
			keys := []string{"sk-test-a-0123456789", "sk-test-b-0123456789"}
			pool := []string{"--max-context", "1024", "--kv-tokens", "8192", "--threads", "1", "--log-level", "warn"}
			pre := start(t, bin, append([]string{"worker", "--role", "prefill", "--listen", "127.0.0.1:0"}, pool...)...)
			dec := start(t, bin, append([]string{"worker", "--role", "decode", "--listen", "127.0.0.1:0", "--kv-listen", "127.0.0.1:0"}, pool...)...)
			gw := start(t, bin, "gateway", "--admin-listen", "127.0.0.1:0", "--prefill", pre.url(), "--decode", dec.url(), "--listen", "127.0.0.1:0",
				"--tenants", tenantsFile(t, keys...), "--log-level", "warn")
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			w, _ := copyModelWords()
			rep, err := audit.Run(ctx, audit.Config{BaseURL: gw.url(), Style: audit.StyleCopy, Words: w,
				APIKeys: keys, Concurrency: 1, Seed: 7}, nil)
			if err != nil {
				t.Fatalf("audit: %v\ngateway:\n%s\ndecode:\n%s", err, gw.output(), dec.output())
			}
			leak := crossTenantLeak(t, rep)
			if !c.wantLeak {
				// The pressure phase over-fills the decode pool: reservations
				// must queue (engine.Reserve), so every probe passes.
				for _, p := range rep.Probes {
					if p.Verdict == audit.Leak || p.Verdict == audit.Fail {
						t.Fatalf("normal build: probe #%d %s %s: %s\n%s", p.ID, p.Phase, p.Verdict, p.Reason, gw.output())
					}
				}
				if rep.Counts.Pass == 0 || rep.Pressure == nil {
					t.Fatalf("normal build: %+v, pressure %+v", rep.Counts, rep.Pressure)
				}
				return
			}
			if leak == nil {
				t.Fatalf("leakrepro build: no LEAK quoting another tenant's canary; counts %+v", rep.Counts)
			}
			t.Logf("caught: probe #%d (tenant %d, %d tokens, %s) answered %q", leak.ID, leak.Tenant, leak.Tokens, leak.Fit, leak.Output)
		})
	}
}
