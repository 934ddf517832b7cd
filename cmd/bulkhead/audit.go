package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/audit"
	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
)

// copyModelWords supplies the built-in copy model's vocabulary for
// --prompt-style copy. It is a variable so the copy model's package can
// be wired in without the audit importing it, and so tests can substitute
// their own words.
var copyModelWords = func() (audit.Words, error) {
	w := copymodel.AuditWords()
	return audit.Words{Key: w.Key, Canary: w.Canary, Filler: w.Filler}, nil
}

// runAudit probes a server for context-length and cross-tenant leaks. It
// exits 0 when every probe passes, 1 on any FAIL or LEAK, and 2 on a usage
// or connection error.
func runAudit(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("audit", "--url URL [--model NAME] [--api-key KEY ...] [flags]", stderr)
	url := fs.String("url", "", "base URL of the OpenAI-compatible server, e.g. http://127.0.0.1:8080")
	selfCheck := fs.Bool("self-check", false, "start an in-process bulkhead on the built-in copy model with a small pool and audit it (no --url)")
	model := fs.String("model", "", "model name (default: the only model /v1/models lists)")
	var keys []string
	fs.Func("api-key", "API key of one tenant; repeat for one tenant per key (one key: --sessions tenants share it)", func(s string) error {
		keys = append(keys, s)
		return nil
	})
	metricsURL := fs.String("metrics-url", "", "the server's Prometheus page, when not URL/metrics (bulkhead: its admin listener, e.g. http://127.0.0.1:9464/metrics); read to size and report pool pressure")
	maxCtx := fs.Int("max-context", 0, "advertised context in tokens (default: discovered from /v1/models or /props)")
	style := fs.String("prompt-style", "auto", "copy (the built-in copy model), natural (instruction models), or auto: copy when the model is "+copymodel.Name)
	concurrency := fs.Int("concurrency", 4, "requests in flight during the cross-tenant phase")
	sessions := fs.Int("sessions", 0, "tenants sharing one API key (default: max(2, concurrency))")
	rounds := fs.Int("rounds", 1, "probes per boundary length per tenant in the cross-tenant phase")
	timeout := fs.Duration("timeout", 5*time.Minute, "deadline of each request")
	seed := fs.Uint64("seed", 0, "seed for canaries and filler (default: random)")
	asJSON := fs.Bool("json", false, "write the report as JSON to stdout instead of the summary")
	htmlOut := fs.String("html", "", "also write the report as a self-contained HTML page to this file")
	timingSamples := fs.Int("timing-samples", 24, "prompts of each kind in the cross-tenant prefix-cache timing probe (needs two real tenants; negative skips it)")
	fs.Usage = auditUsage(fs, stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &exitCode{code: 2, err: err}
	}
	if fs.NArg() > 0 {
		return &exitCode{code: 2, err: fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *selfCheck {
		if *url != "" {
			return &exitCode{code: 2, err: errors.New("--self-check starts its own server: drop --url")}
		}
		base, keys2, mURL, stopServer, err := startSelfCheckServer(ctx, stderr)
		if err != nil {
			return &exitCode{code: 2, err: fmt.Errorf("self-check server: %w", err)}
		}
		defer stopServer()
		*url, *style, *model, *metricsURL = base, string(audit.StyleCopy), copymodel.Name, mURL
		keys = keys2
	}
	if *url == "" {
		fs.Usage()
		return &exitCode{code: 2, err: errors.New("--url is required (or --self-check)")}
	}
	if *style == "auto" {
		*style = string(audit.StyleNatural)
		if *model == copymodel.Name || (*model == "" && servesOnly(ctx, *url, keys, copymodel.Name)) {
			*style = string(audit.StyleCopy)
		}
	}
	cfg := audit.Config{
		BaseURL: *url, MetricsURL: *metricsURL, Model: *model, APIKeys: keys, MaxContext: *maxCtx,
		Style: audit.Style(*style), Concurrency: *concurrency, Sessions: *sessions,
		Rounds: *rounds, Timeout: *timeout, Seed: *seed, TimingSamples: *timingSamples,
	}
	if cfg.Style == audit.StyleCopy {
		w, err := copyModelWords()
		if err != nil {
			return &exitCode{code: 2, err: err}
		}
		cfg.Words = w
	}
	rep, err := audit.Run(ctx, cfg, stderr)
	if rep != nil {
		if werr := writeReport(stdout, rep, *asJSON); werr != nil && err == nil {
			err = werr
		}
		if *htmlOut != "" {
			if werr := writeHTMLReport(*htmlOut, rep); werr != nil && err == nil {
				err = werr
			}
		}
	}
	if rep != nil && rep.Failed() {
		// Evidence of a wrong answer or a leak outranks a later connection
		// error: a server that crashed mid-audit still failed it.
		if err != nil {
			return &exitCode{code: 1, err: fmt.Errorf("the server failed the audit (%d fail, %d leak), then: %w", rep.Counts.Fail, rep.Counts.Leak, err)}
		}
		return &exitCode{code: 1, err: fmt.Errorf("the server failed the audit: %d fail, %d leak", rep.Counts.Fail, rep.Counts.Leak)}
	}
	if err != nil {
		return &exitCode{code: 2, err: err}
	}
	return nil
}

func writeReport(w io.Writer, rep *audit.Report, asJSON bool) error {
	if !asJSON {
		return rep.WriteSummary(w)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// servesOnly reports whether the server's /v1/models lists exactly the
// model id, so the audit can pick the copy style by itself.
func servesOnly(ctx context.Context, base string, keys []string, id string) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/v1/models", nil)
	if err != nil {
		return false
	}
	if len(keys) > 0 {
		req.Header.Set("Authorization", "Bearer "+keys[0])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&list) != nil {
		return false
	}
	return len(list.Data) == 1 && list.Data[0].ID == id
}
