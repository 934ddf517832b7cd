package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
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
	fs.IntVar(&cfg.Concurrency, "concurrency", 4, "requests in flight at once")
	fs.IntVar(&cfg.Requests, "requests", 32, "requests in total")
	fs.IntVar(&cfg.InputLen, "input-len", 512, "prompt tokens per request (exact when the server offers /tokenize)")
	fs.IntVar(&cfg.OutputLen, "output-len", 128, "max_tokens per request")
	fs.BoolVar(&cfg.IgnoreEOS, "ignore-eos", true, "ask the server to generate exactly --output-len tokens (vLLM and llama.cpp honour it)")
	fs.Int64Var(&cfg.Seed, "seed", 1, "seed of the random prompts")
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
	if err := cfg.Validate(); err != nil {
		return invalidUsage(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := loadgen.Run(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	if *asJSON {
		b, err := rep.JSON()
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, string(b))
		return err
	}
	_, err = fmt.Fprint(stdout, rep.String())
	return err
}
