package audit

import (
	"context"
	"fmt"
	"io"
	"sync"

	prog "github.com/bulkhead-llm/bulkhead/internal/progress"
)

// probeSpec says what one probe should look like.
type probeSpec struct {
	Phase  Phase
	Tenant int
	Target int // prompt tokens; 0 means the shortest prompt the layout allows
	Pos    Position
	Stream bool
	// MaxTokens is the answer budget sent: 0 means the probe's usual
	// budget, -1 leaves max_tokens out of the request.
	MaxTokens int
}

// prepared is a probe ready to send: its canary and fitted prompt.
type prepared struct {
	probeSpec
	ID     int
	Canary []string
	Prompt fitted
}

// hintKey caches the filler count that fitted a length and position, so
// later probes of the same shape need one /tokenize call, not several.
type hintKey struct {
	target int
	pos    Position
}

// prepare issues a canary and builds a prompt of the target length.
func (a *auditor) prepare(ctx context.Context, s probeSpec) (prepared, error) {
	if err := ctx.Err(); err != nil {
		return prepared{}, fmt.Errorf("audit interrupted: %w", err)
	}
	canary := a.book.issue()
	a.mu.Lock()
	a.nextID++
	id := a.nextID
	seed := a.rng.Uint64()
	hint := a.hints[hintKey{s.Target, s.Pos}]
	a.issued = append(a.issued, issuedCanary{Probe: id, Tenant: s.Tenant, Words: canary})
	a.mu.Unlock()
	l := layout{style: a.cfg.Style, words: a.cfg.Words, canary: canary, pos: s.Pos, seed: seed}
	f, err := fit(ctx, a.cnt, l, s.Target, hint, s.Target >= a.maxCtx)
	if err != nil {
		return prepared{}, fmt.Errorf("building a %d-token prompt: %w", s.Target, err)
	}
	a.mu.Lock()
	a.hints[hintKey{s.Target, s.Pos}] = f.filler
	a.mu.Unlock()
	return prepared{probeSpec: s, ID: id, Canary: canary, Prompt: f}, nil
}

// send runs a prepared probe, judges the reply and records the result.
func (a *auditor) send(ctx context.Context, p prepared) ProbeResult {
	maxTokens := p.MaxTokens
	if maxTokens == 0 {
		maxTokens = a.genTokens
	}
	r := a.c.generate(ctx, genRequest{
		Style:     a.cfg.Style,
		Prompt:    p.Prompt.Text,
		MaxTokens: max(maxTokens, 0),
		Stream:    p.Stream,
		Key:       a.keys[p.Tenant],
		User:      fmt.Sprintf("bulkhead-audit-tenant-%d", p.Tenant),
	})
	a.mu.Lock()
	maxCtx := a.maxCtx
	a.mu.Unlock()
	class := classify(p.Prompt.Tokens, a.genTokens, maxCtx)
	v, reason := judge(a.cfg.Style, class, p.Canary, r)
	if p.Phase == PhaseDiscover {
		v, reason = judgeDiscovery(r)
	}
	if ctx.Err() != nil && v == Fail && r.Outcome != OutcomeOK {
		v, reason = Warn, "interrupted before the server answered"
	}
	res := ProbeResult{
		ID: p.ID, Phase: p.Phase, Tenant: p.Tenant,
		Target: p.Target, Tokens: p.Prompt.Tokens, Fit: class.String(),
		Position: p.Pos, Stream: p.Stream, Canary: render(a.cfg.Style, p.Canary),
		MaxTokens: max(maxTokens, 0),
		Status:    r.Status, Outcome: r.Outcome, FinishReason: r.FinishReason, Output: r.Text,
		Verdict: v, Reason: reason,
	}
	a.mu.Lock()
	a.results = append(a.results, res)
	a.mu.Unlock()
	a.progress.step(res)
	return res
}

// probe prepares and sends one probe.
func (a *auditor) probe(ctx context.Context, s probeSpec) (ProbeResult, error) {
	p, err := a.prepare(ctx, s)
	if err != nil {
		return ProbeResult{}, err
	}
	return a.send(ctx, p), nil
}

// progress reports the audit's probes through internal/progress, as every
// long command does: one line per probe in a log, a line redrawn in place
// with the count, rate and latest verdict on a terminal. The probe count is
// adaptive (discovery, the cliff search), so there is no total and no ETA.
type progress struct {
	mu        sync.Mutex
	rep       *prog.Reporter
	done, bad int
}

func newProgress(w io.Writer) *progress {
	return &progress{rep: prog.New(w, "audit", 0, "probes")}
}

func (p *progress) step(r ProbeResult) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if r.Verdict == Fail || r.Verdict == Leak {
		p.bad++
	}
	p.rep.Add(1)
	p.rep.Status("%d probes, %d failed; #%d %s %d tokens -> %s", p.done, p.bad, r.ID, r.Phase, r.Tokens, r.Verdict)
}

// line reports a status that is not a probe's.
func (p *progress) line(line string) { p.rep.Status("%s", line) }

func (p *progress) finish() { p.rep.Done() }
