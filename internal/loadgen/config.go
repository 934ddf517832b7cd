// Package loadgen is bulkhead's serving benchmark, in the manner of vLLM's
// benchmark_serving: it sends a fixed number of completions requests with
// random prompts of about InputLen tokens at a fixed concurrency, streams
// the answers and reports throughput, time to first token, inter-token
// latency and errors. It speaks plain OpenAI-compatible HTTP, so it works
// against bulkhead, vLLM or llama.cpp's server alike; the only optional
// extra it uses is /tokenize, to calibrate prompt lengths, and it falls back
// to one word per token when that is missing.
package loadgen

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Config describes one benchmark run.
type Config struct {
	URL         string // server base URL, e.g. http://127.0.0.1:8080 (a trailing /v1 is accepted)
	Model       string // "" asks /v1/models for the first model
	APIKey      string
	Concurrency int // requests in flight at once
	Requests    int // total requests
	InputLen    int // prompt tokens per request (approximately)
	OutputLen   int // max_tokens per request
	Stream      bool
	// IgnoreEOS asks the server to generate exactly OutputLen tokens
	// (a vLLM and llama.cpp extension; other servers ignore it).
	IgnoreEOS bool
	Seed      int64         // prompt randomness
	Timeout   time.Duration // per request (default 5 minutes)
	// HTTPClient is used for every call (default: a client without timeout;
	// Timeout applies per request).
	HTTPClient *http.Client
}

// Validate checks the configuration, naming the field at fault.
func (c *Config) Validate() error {
	u, err := url.Parse(c.URL)
	switch {
	case c.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("loadgen: URL %q must be an http(s) URL with a host", c.URL)
	case c.Concurrency < 1:
		return fmt.Errorf("loadgen: Concurrency %d must be >= 1", c.Concurrency)
	case c.Requests < 1:
		return fmt.Errorf("loadgen: Requests %d must be >= 1", c.Requests)
	case c.InputLen < 1:
		return fmt.Errorf("loadgen: InputLen %d must be >= 1", c.InputLen)
	case c.OutputLen < 1:
		return fmt.Errorf("loadgen: OutputLen %d must be >= 1", c.OutputLen)
	case c.Timeout < 0:
		return errors.New("loadgen: Timeout must be >= 0")
	}
	return nil
}
