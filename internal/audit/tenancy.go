package audit

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
)

// distinctKeys drops repeated keys, keeping the first occurrence: the same
// key twice is one tenant, not two.
func distinctKeys(keys []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// acceptsMadeUpKey reports whether the server answers /v1/models with a
// key nobody issued. A server that does has no tenants to tell apart:
// every key, real or not, is the same tenant.
func (c *client) acceptsMadeUpKey(ctx context.Context) bool {
	b := make([]byte, 12)
	crand.Read(b)
	resp, err := c.send(ctx, http.MethodGet, "/v1/models", "sk-bulkhead-audit-made-up-"+hex.EncodeToString(b), nil)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// accountTenants decides how many real tenants the audit has and says so.
func (a *auditor) accountTenants(ctx context.Context, rep *Report) {
	given := len(a.cfg.APIKeys)
	distinct := distinctKeys(a.cfg.APIKeys)
	if len(distinct) < given {
		rep.Findings = append(rep.Findings, Finding{Kind: "duplicate-keys", Severity: Info,
			Title:   fmt.Sprintf("%d API keys given, %d distinct: duplicates collapsed", given, len(distinct)),
			Meaning: "the same key twice is one tenant; its requests count as sessions of that tenant"})
	}
	real := len(distinct)
	open := a.c.acceptsMadeUpKey(ctx)
	if open {
		real = 1
		rep.Findings = append(rep.Findings, Finding{Kind: "no-authentication", Severity: Medium,
			Title:    "the server accepts a made-up API key: every key is the same tenant",
			Meaning:  "the server does not tell tenants apart; the audit's tenants are sessions of one tenant",
			Evidence: []Evidence{{Request: "GET /v1/models with a random key nobody issued", Status: http.StatusOK}}})
	}
	real = max(real, 1)
	rep.Tenants, rep.Sessions = real, len(a.keys)
	if real < 2 {
		rep.Findings = append(rep.Findings, Finding{Kind: "isolation-untested", Severity: Medium,
			Title:   fmt.Sprintf("cross-tenant isolation was not tested: one real tenant, %d sessions", len(a.keys)),
			Meaning: "leaks between requests of one tenant are still caught, but to test isolation between tenants pass two or more --api-key of different tenants"})
	}
}
