package audit

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"
)

// auditor holds one run's state; probes from several goroutines record
// their results under mu.
type auditor struct {
	cfg        Config
	c          *client
	cnt        *counter
	book       *canaryBook
	keys       []string
	maxCtx     int // the context probes are judged against: the effective one once found
	claims     []ContextClaim
	advertised int
	genTokens  int
	progress   *progress

	mu      sync.Mutex
	rng     *rand.Rand
	nextID  int
	hints   map[hintKey]int
	issued  []issuedCanary
	results []ProbeResult
}

// Run audits the server at cfg.BaseURL and returns the report, writing a
// progress line to progress (nil for none). It returns an error wrapping
// ErrConfig for a bad configuration and ErrConnection when the server
// cannot be reached or refuses the audit's basic requests; everything the
// server answers wrongly is in the report instead. When an error ends the
// run early the report holds what ran so far and may be nil.
func Run(ctx context.Context, cfg Config, progressW io.Writer) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := newAuditor(cfg, progressW)
	rep := &Report{URL: cfg.BaseURL, Style: cfg.Style, Tenants: len(a.keys), Started: time.Now()}
	defer a.progress.finish()

	if err := a.setup(ctx, rep); err != nil {
		return nil, err
	}
	err := a.phases(ctx, rep)
	if err != nil {
		rep.Incomplete = err.Error()
		if errors.Is(err, ErrConnection) && ctx.Err() == nil {
			a.blameCrash()
		}
	}
	a.finish(rep)
	return rep, err
}

// newAuditor sets up one run's state for a validated config.
func newAuditor(cfg Config, progressW io.Writer) *auditor {
	if progressW == nil {
		progressW = io.Discard
	}
	a := &auditor{
		cfg:      cfg,
		c:        &client{base: cfg.BaseURL, metricsURL: cfg.MetricsURL, model: cfg.Model, http: cfg.HTTPClient, timeout: cfg.Timeout},
		keys:     cfg.tenantKeys(),
		progress: newProgress(progressW),
		rng:      rand.New(rand.NewChaCha8(seedBytes(cfg.Seed))),
		hints:    map[hintKey]int{},
	}
	a.genTokens = copyCanaryLen
	vocab := cfg.Words.Canary
	if cfg.Style == StyleNatural {
		a.genTokens = naturalAnswerTokens
		vocab = nil
	}
	a.book = newCanaryBook(cfg.Style, vocab, rand.New(rand.NewChaCha8(seedBytes(a.rng.Uint64()))))
	return a
}

// seedBytes expands a seed for ChaCha8; seed 0 draws one from crypto/rand
// so canaries cannot be guessed.
func seedBytes(seed uint64) [32]byte {
	var b [32]byte
	if seed == 0 {
		crand.Read(b[:])
		return b
	}
	for i := range 4 {
		binary.LittleEndian.PutUint64(b[i*8:], mix(seed, uint64(i)))
	}
	return b
}

// setup resolves the model, the claimed contexts, the tokenizer and the
// tenants.
func (a *auditor) setup(ctx context.Context, rep *Report) error {
	key := a.keys[0]
	n, src, err := a.c.discover(ctx, key)
	if err != nil && (a.cfg.MaxContext == 0 || a.c.model == "") {
		return err
	}
	if n > 0 {
		a.claims = append(a.claims, ContextClaim{Source: src, Tokens: n})
	}
	a.advertised, rep.MaxContextSource = n, src
	if a.cfg.MaxContext > 0 {
		a.claims = append(a.claims, ContextClaim{Source: "--max-context", Tokens: a.cfg.MaxContext})
		a.advertised, rep.MaxContextSource = a.cfg.MaxContext, "--max-context"
	}
	a.maxCtx = a.advertised
	rep.Model, rep.MaxContext, rep.Claims = a.c.model, a.advertised, a.claims
	a.cnt = &counter{c: a.c, key: key, style: a.cfg.Style, shape: tokUnprobed}
	sample := layout{style: a.cfg.Style, words: a.cfg.Words, canary: a.book.issue(), pos: PosEnd, seed: 1}
	if err := a.cnt.detect(ctx, sample.render(0)); err != nil {
		return err
	}
	rep.Tokenizer = a.cnt.Name()
	a.accountTenants(ctx, rep)
	if !a.cnt.Exact() {
		rep.Notes = append(rep.Notes, "prompt lengths are estimated: boundary probes may miss the boundary by a few tokens")
	}
	return nil
}

// phases runs the sanity probe, then the boundary, cliff and tenant
// phases. A sanity probe that fails stops the run: nothing later could be
// judged.
func (a *auditor) phases(ctx context.Context, rep *Report) error {
	s, err := a.probe(ctx, probeSpec{Phase: PhaseSanity, Pos: PosEnd})
	if err != nil {
		return err
	}
	if classify(s.Tokens, a.genTokens, a.maxCtx) != fitsWhole {
		return fmt.Errorf("%w: context of %d tokens is too small for a %d-token probe", ErrConfig, a.maxCtx, s.Tokens+a.genTokens)
	}
	switch s.Outcome {
	case OutcomeConnection, OutcomeTimeout, OutcomeRejected:
		return fmt.Errorf("%w: the server did not serve the audit's shortest probe: %s", ErrConnection, s.Reason)
	}
	if s.Verdict != Pass {
		note := "stopped after the first probe: the server could not answer the shortest prompt"
		if s.Outcome == OutcomeOK {
			note = "stopped after the first probe: the model does not retrieve a canary from a short prompt (check --prompt-style and --model)"
		}
		rep.Notes = append(rep.Notes, note)
		return nil
	}
	e, err := a.discoverContext(ctx, s, a.advertised)
	if err != nil {
		return err
	}
	rep.Effective = e
	tol := a.contextTolerance()
	if !e.Unbounded && (e.Tokens < a.advertised-tol || e.Tokens > a.advertised+tol) {
		a.mu.Lock()
		a.maxCtx = e.Tokens
		a.mu.Unlock()
	}
	rep.Findings = append(rep.Findings, contextFindings(e, a.claims, tol)...)
	if err := a.boundary(ctx); err != nil {
		return err
	}
	cliff, err := a.cliff(ctx, s.Tokens)
	if err != nil {
		return err
	}
	rep.Cliff = cliff
	if err := a.tenants(ctx); err != nil {
		return err
	}
	pr, err := a.pressure(ctx)
	if err != nil {
		return err
	}
	rep.Pressure = pr
	rep.Findings = append(rep.Findings, pressureFinding(pr))
	if rep.Tenants >= 2 && a.cfg.TimingSamples > 0 {
		tm, err := a.timing(ctx, a.cfg.TimingSamples)
		if err != nil {
			return err
		}
		rep.Timing = tm
		rep.Findings = append(rep.Findings, timingFinding(tm))
	}
	return nil
}

// blameCrash runs when the server became unreachable mid-audit. If the
// last probe sent got no answer either, that prompt took the server down:
// it becomes a failure rather than a setup problem.
func (a *auditor) blameCrash() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.results) == 0 {
		return
	}
	r := &a.results[len(a.results)-1]
	if r.Outcome == OutcomeConnection || r.Outcome == OutcomeTimeout {
		r.Verdict = Fail
		r.Reason += "; the server answered nothing after this probe"
	}
}

// finish finds leaks across all probes, clips outputs and counts.
func (a *auditor) finish(rep *Report) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ix := newLeakIndex(a.cfg.Style, a.issued)
	byProbe := map[int]issuedCanary{}
	for _, c := range a.issued {
		byProbe[c.Probe] = c
	}
	for i := range a.results {
		r := &a.results[i]
		victim := byProbe[r.ID]
		for _, src := range ix.sources(victim, r.Output) {
			r.LeakedFrom = append(r.LeakedFrom, LeakSource{Probe: src.Probe, Tenant: src.Tenant, CrossTenant: src.Tenant != r.Tenant})
		}
		if len(r.LeakedFrom) > 0 {
			r.Verdict = Leak
			r.Reason = fmt.Sprintf("output carries another request's canary: %q", clip(r.Output))
		}
		r.Output = clip(r.Output)
	}
	rep.Probes = a.results
	rep.Duration = time.Since(rep.Started)
	rep.count()
	rep.Findings = append(rep.Findings, probeFindings(rep.Probes)...)
	if rep.Cliff != nil {
		rep.Findings = append(rep.Findings, Finding{Kind: "capacity-cliff", Severity: High,
			Title:   fmt.Sprintf("answers stay 200 but the canary is lost between %d and %d prompt tokens (context %d)", rep.Cliff.LastGood, rep.Cliff.FirstBad, a.maxCtx),
			Meaning: "the server serves long prompts it cannot hold: its KV pool or attention is smaller than the context it accepts"})
	}
	sortFindings(rep.Findings)
}
