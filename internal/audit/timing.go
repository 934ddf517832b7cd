package audit

import (
	"context"
	"fmt"
	"time"
)

// Timing is the cross-tenant prefix-cache timing probe (the method of Gu
// et al., "Auditing Prompt Caching in Language Model APIs", ICML 2025):
// tenant A sends a fresh prompt twice so any cache holds it; tenant B then
// sends that prompt and a prompt nobody sent, in random order. If the
// server shares cache entries across tenants, B's time to first token on
// A's prompts is drawn from the faster cache-hit distribution; a
// two-sample Kolmogorov–Smirnov test on the two sets of times says how
// unlikely the difference is if nothing is shared.
type Timing struct {
	PromptTokens   int     `json:"prompt_tokens"`
	Samples        int     `json:"samples_each"`
	PrimedMedianMs float64 `json:"primed_median_ms"`
	FreshMedianMs  float64 `json:"fresh_median_ms"`
	D              float64 `json:"ks_statistic"`
	PValue         float64 `json:"p_value"`
	Alpha          float64 `json:"alpha"`
	// CacheShared is true when p < Alpha and B was faster on A's prompts.
	CacheShared bool `json:"cache_shared"`
	// PrimedMs and FreshMs are the measured times (milliseconds).
	PrimedMs []float64 `json:"primed_ms"`
	FreshMs  []float64 `json:"fresh_ms"`
}

// timingAlpha is the test's significance level; the false-positive rate
// measured against a server known not to share is in the README.
const timingAlpha = 0.01

// timedPrompt builds a prompt no other request started with. Its words
// come from the canary book, but it is not a probe: it is never judged,
// and B's answer (A's words) is not a leak, because B sent them itself.
func (a *auditor) timedPrompt(ctx context.Context, target int) (fitted, error) {
	a.mu.Lock()
	seed := a.rng.Uint64()
	a.mu.Unlock()
	l := layout{style: a.cfg.Style, words: a.cfg.Words, canary: a.book.issue(), pos: PosStart, seed: seed}
	return fit(ctx, a.cnt, l, target, 0, false)
}

// ttft sends prompt as tenant t with a one-token answer and returns the
// time to the complete answer, which for one token is the time to first
// token.
func (a *auditor) ttft(ctx context.Context, t int, prompt string) (float64, error) {
	start := time.Now()
	r := a.c.generate(ctx, genRequest{Style: a.cfg.Style, Prompt: prompt, MaxTokens: 1,
		Key: a.keys[t], User: fmt.Sprintf("bulkhead-audit-tenant-%d", t)})
	ms := float64(time.Since(start).Microseconds()) / 1000
	if r.Outcome != OutcomeOK {
		return 0, fmt.Errorf("timing probe of %d bytes as tenant %d: %s %s", len(prompt), t, r.Outcome, errText(r))
	}
	return ms, nil
}

// timing runs the probe between tenants 0 and 1 with samples of each kind.
func (a *auditor) timing(ctx context.Context, samples int) (*Timing, error) {
	a.mu.Lock()
	target := min(a.maxCtx/2, 512)
	a.mu.Unlock()
	tm := &Timing{Samples: samples, Alpha: timingAlpha}
	for i := range samples {
		primed, err := a.timedPrompt(ctx, target)
		if err != nil {
			return nil, err
		}
		fresh, err := a.timedPrompt(ctx, target)
		if err != nil {
			return nil, err
		}
		tm.PromptTokens = primed.Tokens
		for range 2 {
			if _, err := a.ttft(ctx, 0, primed.Text); err != nil {
				return nil, err
			}
		}
		// Alternate the order so drift in the server's load hits both
		// samples alike.
		order := []string{primed.Text, fresh.Text}
		if i%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, p := range order {
			ms, err := a.ttft(ctx, 1, p)
			if err != nil {
				return nil, err
			}
			if p == primed.Text {
				tm.PrimedMs = append(tm.PrimedMs, ms)
			} else {
				tm.FreshMs = append(tm.FreshMs, ms)
			}
		}
		a.progress.line(fmt.Sprintf("timing probe %d/%d", i+1, samples))
	}
	tm.D, tm.PValue = ksTwoSample(tm.PrimedMs, tm.FreshMs)
	tm.PrimedMedianMs, tm.FreshMedianMs = median(tm.PrimedMs), median(tm.FreshMs)
	tm.CacheShared = tm.PValue < tm.Alpha && tm.PrimedMedianMs < tm.FreshMedianMs
	return tm, nil
}

// timingFinding states the probe's result.
func timingFinding(tm *Timing) Finding {
	ev := []Evidence{{Request: fmt.Sprintf("%d prompts of %d tokens sent twice by tenant 0, then by tenant 1, beside %d fresh prompts from tenant 1 (max_tokens 1)", tm.Samples, tm.PromptTokens, tm.Samples),
		Response: fmt.Sprintf("median time to first token %.2f ms on tenant 0's prompts, %.2f ms on fresh ones; KS D=%.2f p=%.2g", tm.PrimedMedianMs, tm.FreshMedianMs, tm.D, tm.PValue)}}
	if tm.CacheShared {
		return Finding{Kind: "prefix-cache-shared", Severity: High,
			Title:    fmt.Sprintf("tenant 1 is served tenant 0's prompts from cache (KS p=%.2g < %.2g, %d+%d samples)", tm.PValue, tm.Alpha, tm.Samples, tm.Samples),
			Meaning:  "the prefix cache is shared across tenants: a tenant can tell by timing whether another tenant sent a prompt (a side channel; DESIGN I6 forbids it)",
			Evidence: ev}
	}
	return Finding{Kind: "prefix-cache-timing", Severity: Info,
		Title:    fmt.Sprintf("no sign that tenants share the prefix cache (KS p=%.2g, %d+%d samples)", tm.PValue, tm.Samples, tm.Samples),
		Meaning:  "tenant 1 was not measurably faster on tenant 0's prompts than on fresh ones",
		Evidence: ev}
}

// RunTiming runs only the prefix-cache timing probe, as Run would after
// its other phases; it needs two real tenants. It is what measures the
// probe's false-positive and detection rates over many runs.
func RunTiming(ctx context.Context, cfg Config) (*Timing, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := newAuditor(cfg, nil)
	rep := &Report{}
	if err := a.setup(ctx, rep); err != nil {
		return nil, err
	}
	if rep.Tenants < 2 {
		return nil, fmt.Errorf("%w: the timing probe needs two real tenants, have %d", ErrConfig, rep.Tenants)
	}
	return a.timing(ctx, cfg.TimingSamples)
}
