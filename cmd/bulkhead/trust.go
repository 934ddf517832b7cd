package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/bulkhead-llm/bulkhead/internal/admin"
	"github.com/bulkhead-llm/bulkhead/internal/model"
	"github.com/bulkhead-llm/bulkhead/internal/tenant"
)

// trustOptions are the flags that draw the trust boundary of a server
// (docs/SECURITY.md): where operator endpoints listen, where tenant salts
// come from, whether user text may carry control tokens, and whether a
// context beyond the model's training is allowed.
type trustOptions struct {
	adminListen      string // "" in process: no admin listener
	tenantSecret     string
	parseSpecial     bool
	allowLongContext bool
	onAdmin          func(addr string) // in-process callers learn the bound address
}

// registerEngine adds the flag every local engine honours.
func (t *trustOptions) registerEngine(fs *flag.FlagSet) {
	fs.BoolVar(&t.allowLongContext, "allow-long-context", false, "allow --max-context above the model's trained context (quality beyond it is not guaranteed)")
}

// registerServer adds the flags of a process that serves tenants.
func (t *trustOptions) registerServer(fs *flag.FlagSet) {
	fs.StringVar(&t.adminListen, "admin-listen", admin.DefaultAddr, `address of the admin listener (/metrics); "off" disables it`)
	fs.StringVar(&t.tenantSecret, "tenant-secret", "", "file holding the server secret tenant cache salts are derived from (default: a random secret per process)")
	fs.BoolVar(&t.parseSpecial, "parse-special", false, "parse control-token text (e.g. </s>, <|im_start|>) in user prompts and messages as control tokens, as llama-server does (default: plain text)")
}

// checkContext refuses a maximum context above the model's trained one
// unless allowed; allowed, it says what rope scaling is in effect.
func (t *trustOptions) checkContext(maxContext int, c *model.Config, log *slog.Logger) error {
	if maxContext <= c.Context {
		return nil
	}
	rope := c.RopeScale.Type
	if rope == "" {
		rope = "none"
	}
	if rope != "none" {
		rope = fmt.Sprintf("%s ×%g", rope, c.RopeScale.Factor)
	}
	if !t.allowLongContext {
		return &exitCode{2, fmt.Errorf("--max-context %d exceeds the model's trained context %d (rope scaling: %s); pass --allow-long-context to run beyond it anyway", maxContext, c.Context, rope)}
	}
	log.Warn("serving beyond the model's trained context", "max_context", maxContext, "trained_context", c.Context, "rope_scaling", rope)
	return nil
}

// applySecret re-derives tenant salts from the server secret file, if any.
func (t *trustOptions) applySecret(r *tenant.Registry) error {
	if t.tenantSecret == "" || r == nil {
		return nil
	}
	s, err := tenant.LoadSecret(t.tenantSecret)
	if err != nil {
		return &exitCode{2, err}
	}
	r.UseSecret(s)
	return nil
}

// startAdmin serves metrics on the admin listener; the returned function
// stops it. A non-loopback address is allowed but warned about: anyone who
// reaches it reads every tenant's usage.
func (t *trustOptions) startAdmin(metrics, ui http.Handler, log *slog.Logger) (func(), error) {
	if t.adminListen == "" || t.adminListen == "off" {
		return func() {}, nil
	}
	a := admin.New(t.adminListen)
	a.Handle("GET /metrics", metrics)
	endpoints := "/metrics"
	if ui != nil {
		a.Handle("/ui", ui)
		a.Handle("/ui/", ui)
		endpoints += " /ui"
	}
	addr, err := a.Start()
	if err != nil {
		return nil, err
	}
	if !admin.Loopback(t.adminListen) {
		log.Warn("admin listener is not loopback-only: /metrics names tenants and their usage", "addr", addr)
	}
	// Printed whatever the log level: operators and tests need the address.
	// ("at", not "on": the API's own announcement is the line to wait for.)
	fmt.Fprintf(os.Stderr, "bulkhead: admin listener at http://%s (%s)\n", addr, endpoints)
	if t.onAdmin != nil {
		t.onAdmin(addr)
	}
	return func() { a.Close() }, nil
}
