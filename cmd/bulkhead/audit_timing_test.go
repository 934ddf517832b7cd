package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/audit"
)

// saltedTenantsFile writes two tenants with the given cache salts ("" for
// the default, derived from the tenant id).
func saltedTenantsFile(t *testing.T, keys []string, salts []string) string {
	t.Helper()
	var s string
	for i, k := range keys {
		s += fmt.Sprintf("[[tenant]]\nid = \"tenant-%d\"\napi_key_sha256 = [%q]\n", i, hashKeyForTest(k))
		if salts[i] != "" {
			s += fmt.Sprintf("cache_salt = %q\n", salts[i])
		}
		s += "\n"
	}
	p := filepath.Join(t.TempDir(), "tenants.toml")
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The prefix-cache timing probe against bulkhead: two tenants configured
// to share a cache salt must be detected, tenants with their own salts
// must not. BULKHEAD_LONG=1 repeats each 20 times and reports the rates.
func TestTimingProbeDetectsASharedSalt(t *testing.T) {
	bin := binary(t, "")
	keys := []string{"sk-salt-a-0123456789", "sk-salt-b-0123456789"}
	runs := 1
	if os.Getenv("BULKHEAD_LONG") == "1" {
		runs = 20
	}
	w, _ := copyModelWords()
	for _, c := range []struct {
		name   string
		salts  []string
		shared bool
	}{{"shared salt", []string{"one-salt", "one-salt"}, true}, {"separate salts", []string{"", ""}, false}} {
		t.Run(c.name, func(t *testing.T) {
			srv := start(t, bin, "serve", "--listen", "127.0.0.1:0", "--max-context", "1024", "--kv-tokens", "16384",
				"--threads", "1", "--log-level", "warn", "--tenants", saltedTenantsFile(t, keys, c.salts))
			detected := 0
			for i := range runs {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				tm, err := audit.RunTiming(ctx, audit.Config{BaseURL: srv.url(), Style: audit.StyleCopy, Words: w,
					APIKeys: keys, TimingSamples: 24, Seed: uint64(100 + i)})
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				if tm.CacheShared {
					detected++
				}
				t.Logf("run %d: primed median %.2f ms, fresh %.2f ms, D %.2f, p %.2g, shared %v", i, tm.PrimedMedianMs, tm.FreshMedianMs, tm.D, tm.PValue, tm.CacheShared)
			}
			t.Logf("%s: detected in %d of %d runs", c.name, detected, runs)
			if c.shared && detected*10 < runs*9 {
				t.Errorf("shared salt detected in only %d of %d runs", detected, runs)
			}
			if !c.shared && detected*10 > runs {
				t.Errorf("separate salts flagged as shared in %d of %d runs", detected, runs)
			}
		})
	}
}
