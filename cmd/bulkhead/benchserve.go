package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/loadgen"
)

// runBenchServe is a load generator in the manner of vLLM's
// benchmark_serving: it works against any OpenAI-compatible server.
func runBenchServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench serve", "--url URL [flags]", stderr)
	var cfg loadgen.Config
	fs.StringVar(&cfg.URL, "url", "", "base URL of the server, e.g. http://127.0.0.1:8080 (required)")
	fs.StringVar(&cfg.Model, "model", "", "model name (default: the first one /v1/models lists)")
	fs.StringVar(&cfg.APIKey, "api-key", "", "API key sent as a bearer token")
	concurrency := fs.String("concurrency", "4", "requests in flight at once; a list (1,4,16) runs one benchmark per level")
	fs.IntVar(&cfg.Requests, "requests", 32, "requests in total")
	fs.IntVar(&cfg.InputLen, "input-len", 512, "prompt tokens per request (exact when the server offers /tokenize)")
	fs.IntVar(&cfg.OutputLen, "output-len", 128, "max_tokens per request")
	fs.BoolVar(&cfg.IgnoreEOS, "ignore-eos", true, "ask the server to generate exactly --output-len tokens (vLLM and llama.cpp honour it)")
	fs.Int64Var(&cfg.Seed, "seed", 1, "seed of the random prompts; level i of a sweep uses seed+i, so no level meets an earlier level's prompts in the server's prefix cache")
	fs.DurationVar(&cfg.Timeout, "timeout", 5*time.Minute, "deadline of each request")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.Stream = true
	if cfg.URL == "" {
		fs.Usage()
		return invalidUsage(errors.New("--url is required"))
	}
	levels, err := parseLevels(*concurrency)
	if err != nil {
		return invalidUsage(err)
	}
	for _, c := range levels {
		cfg.Concurrency = c
		if err := cfg.Validate(); err != nil {
			return invalidUsage(err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var reps []*loadgen.Report
	seed := cfg.Seed
	for i, c := range levels {
		cfg.Concurrency = c
		// Fresh prompts per level: with the same ones, every level after
		// the first would be served from the prefix cache and measure
		// decode alone.
		cfg.Seed = seed + int64(i)
		rep, err := loadgen.Run(ctx, cfg, stderr)
		if err != nil {
			return err
		}
		reps = append(reps, rep)
		if !*asJSON {
			if _, err := fmt.Fprint(stdout, rep.String()); err != nil {
				return err
			}
		}
	}
	if !*asJSON {
		if len(reps) > 1 {
			fmt.Fprint(stdout, sweepTable(reps))
		}
		return nil
	}
	// One level prints its report; a sweep prints the array of them.
	var v any = reps
	if len(reps) == 1 {
		v = reps[0]
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, string(b))
	return err
}

// parseLevels reads --concurrency: one count or a comma-separated list.
func parseLevels(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("--concurrency %q: want a count or a list like 1,4,16", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// sweepTable is one line per concurrency level, for comparing them.
func sweepTable(reps []*loadgen.Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-11s %10s %8s %8s %8s %10s %10s %10s\n", "concurrency", "out tok/s", "ok", "failed", "retries", "ttft p50", "itl p50", "e2e p99")
	for _, r := range reps {
		fmt.Fprintf(&b, "%-11d %10.2f %8d %8d %8d %8.1fms %8.1fms %8.1fms\n", r.Concurrency, r.OutputTokensPerSec,
			r.Completed, r.Failed, r.Retries, r.TTFT.P50, r.ITL.P50, r.E2E.P99)
	}
	return b.String()
}
