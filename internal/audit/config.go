package audit

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"
)

// ErrConfig marks an invalid Config; the CLI maps it to a usage error.
var ErrConfig = errors.New("audit: invalid config")

// Style selects how probes are phrased and which endpoint they use.
type Style string

const (
	// StyleCopy phrases probes for the built-in copy model:
	// "KEY c1 … c8 filler … KEY" sent to /v1/completions.
	StyleCopy Style = "copy"
	// StyleNatural phrases probes for instruction models: an access code
	// and a question, sent to /v1/chat/completions.
	StyleNatural Style = "natural"
)

// Words is the vocabulary of copy-style prompts. The three sets must be
// disjoint whole words, each a single token when written after a space;
// the caller supplies them (the CLI passes the copy model's words), so this
// package never depends on the model code.
type Words struct {
	Key    string
	Canary []string
	Filler []string
}

// copyCanaryLen is the number of words in a copy-style canary; a copy
// probe asks for exactly that many tokens back.
const copyCanaryLen = 8

// naturalAnswerTokens is the answer budget of a natural-style probe:
// enough for a sentence around a 15-character code.
const naturalAnswerTokens = 32

// Validate reports whether the word sets can build copy-style prompts.
func (w Words) Validate() error {
	if w.Key == "" {
		return fmt.Errorf("%w: Words.Key is empty", ErrConfig)
	}
	if len(w.Canary) < copyCanaryLen {
		return fmt.Errorf("%w: Words.Canary has %d words, need at least %d", ErrConfig, len(w.Canary), copyCanaryLen)
	}
	if len(w.Filler) == 0 {
		return fmt.Errorf("%w: Words.Filler is empty", ErrConfig)
	}
	seen := map[string]string{}
	check := func(set, word string) error {
		if word == "" || strings.IndexFunc(word, unicode.IsSpace) >= 0 {
			return fmt.Errorf("%w: %s word %q is empty or contains a space", ErrConfig, set, word)
		}
		if prev, ok := seen[word]; ok && prev != set {
			return fmt.Errorf("%w: word %q is in both %s and %s", ErrConfig, word, prev, set)
		}
		seen[word] = set
		return nil
	}
	if err := check("Key", w.Key); err != nil {
		return err
	}
	for _, c := range w.Canary {
		if err := check("Canary", c); err != nil {
			return err
		}
	}
	for _, f := range w.Filler {
		if err := check("Filler", f); err != nil {
			return err
		}
	}
	return nil
}

// Config describes one audit run.
type Config struct {
	// BaseURL is the server's root, e.g. http://host:8000 (a trailing /v1
	// is accepted and removed).
	BaseURL string
	// MetricsURL is the server's Prometheus page when it is not BaseURL +
	// "/metrics": bulkhead serves it on its admin listener, apart from
	// tenant traffic. Empty means BaseURL + "/metrics".
	MetricsURL string
	// Model is the model name sent with every request; empty means the
	// only model /v1/models lists.
	Model string
	// APIKeys are the tenants' keys. Two or more keys make one tenant per
	// key; zero or one key make Sessions tenants sharing it.
	APIKeys []string
	// MaxContext overrides the advertised context; 0 discovers it.
	MaxContext int
	Style      Style
	// Words is required for StyleCopy.
	Words Words
	// Concurrency bounds the requests in flight in the cross-tenant phase.
	Concurrency int
	// Sessions is the number of tenants when fewer than two keys are given
	// (0 means max(2, Concurrency)).
	Sessions int
	// Rounds is how many probes per boundary length each tenant sends in
	// the cross-tenant phase (0 means 1).
	Rounds int
	// TimingSamples is the number of prompts of each kind in the
	// cross-tenant prefix-cache timing probe (0 means 24, negative skips
	// it). It runs only with two or more real tenants.
	TimingSamples int
	// Timeout bounds each HTTP request (0 means 5 minutes).
	Timeout time.Duration
	// Seed makes canaries and filler reproducible; 0 picks a random seed.
	Seed uint64
	// HTTPClient is used for every request; nil means a default client.
	HTTPClient *http.Client
}

// Validate checks the fields and fills defaults in place.
func (c *Config) Validate() error {
	if c.BaseURL == "" {
		return fmt.Errorf("%w: BaseURL is empty", ErrConfig)
	}
	if !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://") {
		return fmt.Errorf("%w: BaseURL %q must start with http:// or https://", ErrConfig, c.BaseURL)
	}
	c.BaseURL = strings.TrimSuffix(strings.TrimRight(c.BaseURL, "/"), "/v1")
	switch c.Style {
	case StyleCopy:
		if err := c.Words.Validate(); err != nil {
			return err
		}
	case StyleNatural:
	default:
		return fmt.Errorf("%w: Style %q must be %q or %q", ErrConfig, c.Style, StyleCopy, StyleNatural)
	}
	if c.MaxContext < 0 {
		return fmt.Errorf("%w: MaxContext %d is negative", ErrConfig, c.MaxContext)
	}
	if c.Concurrency < 0 || c.Sessions < 0 || c.Rounds < 0 || c.Timeout < 0 {
		return fmt.Errorf("%w: Concurrency, Sessions, Rounds and Timeout must not be negative", ErrConfig)
	}
	if c.Concurrency == 0 {
		c.Concurrency = 4
	}
	if c.Sessions == 0 {
		c.Sessions = max(2, c.Concurrency)
	}
	if c.Rounds == 0 {
		c.Rounds = 1
	}
	if c.TimingSamples == 0 {
		c.TimingSamples = 24
	}
	if c.Timeout == 0 {
		c.Timeout = 5 * time.Minute
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	return nil
}

// tenantKeys returns the API key each tenant uses ("" means none).
func (c *Config) tenantKeys() []string {
	d := distinctKeys(c.APIKeys)
	if len(d) >= 2 {
		return d
	}
	key := ""
	if len(d) == 1 {
		key = d[0]
	}
	keys := make([]string, c.Sessions)
	for i := range keys {
		keys[i] = key
	}
	return keys
}
