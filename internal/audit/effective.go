package audit

import (
	"context"
	"fmt"
)

// ContextClaim is one statement of the server's context length: what
// /v1/models (max_model_len) or /props (n_ctx) advertise, or what the
// operator passed as --max-context.
type ContextClaim struct {
	Source string `json:"source"`
	Tokens int    `json:"tokens"`
}

// Effective is the context the server really enforces, found by probing:
// the longest prompt it answers plus the one token it must generate.
type Effective struct {
	// Tokens is the effective context; when Unbounded it is only a lower
	// bound (the server answered every length tried).
	Tokens    int  `json:"tokens"`
	Unbounded bool `json:"unbounded,omitempty"`
	// LongestAccepted and ShortestRefused bracket the boundary (prompt
	// tokens) with max_tokens 1.
	LongestAccepted int `json:"longest_accepted_prompt"`
	ShortestRefused int `json:"shortest_refused_prompt,omitempty"`
	// WithoutMaxTokens says whether requests without max_tokens are
	// answered at the same boundary.
	WithoutMaxTokens string `json:"without_max_tokens,omitempty"`
	accepted         ProbeResult
	refused          ProbeResult
}

// discoverSteps bounds the bisection; 2^20 covers any context we probe.
const discoverSteps = 24

// judgeDiscovery gives a discovery probe its verdict: whether the server
// answered is the measurement, so any clean answer or refusal passes; a
// server error or a broken answer still fails (a leak is found later, as
// for every probe).
func judgeDiscovery(r reply) (Verdict, string) {
	switch r.Outcome {
	case OutcomeOK:
		return Pass, "answered (context discovery)"
	case OutcomeRejected:
		return Pass, fmt.Sprintf("refused with %d %s (context discovery)", r.Status, errText(r))
	case OutcomeConnection, OutcomeTimeout:
		return Warn, fmt.Sprintf("no answer (%s): %s", r.Outcome, r.Detail)
	}
	return Fail, fmt.Sprintf("%s during context discovery %s", r.Outcome, errText(r))
}

// answered reports whether a discovery probe was served.
func answered(r ProbeResult) bool { return r.Outcome == OutcomeOK }

// discoverContext finds the effective context by bisection on prompt
// length between the sanity probe's length and four times the advertised
// context (galloping up, then bisecting), with max_tokens 1; then checks both sides of the boundary
// without max_tokens. It trusts no claim: every later probe is judged
// against what it finds.
func (a *auditor) discoverContext(ctx context.Context, sanity ProbeResult, advertised int) (*Effective, error) {
	e := &Effective{LongestAccepted: sanity.Tokens, accepted: sanity}
	lo, hi := sanity.Tokens, 0
	tol := max(1, a.contextTolerance())
	send := func(target, maxTokens int) (ProbeResult, error) {
		r, err := a.probe(ctx, probeSpec{Phase: PhaseDiscover, Target: target, Pos: PosStart, MaxTokens: maxTokens})
		if err != nil {
			return r, err
		}
		if err := ctx.Err(); err != nil {
			return r, fmt.Errorf("audit interrupted: %w", err)
		}
		if r.Outcome == OutcomeConnection || r.Outcome == OutcomeTimeout {
			return r, fmt.Errorf("%w: no answer to a %d-token prompt during context discovery: %s", ErrConnection, r.Tokens, r.Reason)
		}
		return r, nil
	}
	// Gallop up from the sanity length, doubling, to four times the
	// advertised context: no prompt much longer than the server accepts
	// is ever built.
	limit := 4 * max(advertised, 1)
	found := false
	for target := min(max(2*lo, advertised/2), limit); ; target = min(2*target, limit) {
		r, err := send(target, 1)
		if err != nil {
			return nil, err
		}
		if !answered(r) {
			hi, e.refused, found = r.Tokens, r, true
			break
		}
		lo, e.accepted = max(lo, r.Tokens), r
		if target >= limit {
			break
		}
	}
	if !found {
		e.Tokens, e.Unbounded, e.LongestAccepted = lo+1, true, lo
		return e, nil
	}
	for range discoverSteps {
		if hi-lo <= tol {
			break
		}
		r, err := send((lo+hi)/2, 1)
		if err != nil {
			return nil, err
		}
		if r.Tokens <= lo || r.Tokens >= hi {
			break // the tokenizer cannot split the bracket further
		}
		if answered(r) {
			lo, e.accepted = r.Tokens, r
		} else {
			hi, e.refused = r.Tokens, r
		}
	}
	e.Tokens, e.LongestAccepted, e.ShortestRefused = lo+1, lo, hi
	// The same boundary without max_tokens: a server may size its default
	// answer so that the longest prompt is refused, or accept more.
	in, err := send(lo, -1)
	if err != nil {
		return nil, err
	}
	out, err := send(hi, -1)
	if err != nil {
		return nil, err
	}
	switch {
	case answered(in) && !answered(out):
		e.WithoutMaxTokens = "same boundary"
	case !answered(in):
		e.WithoutMaxTokens = fmt.Sprintf("a %d-token prompt without max_tokens is refused (%d), though it is answered with max_tokens 1", in.Tokens, in.Status)
	default:
		e.WithoutMaxTokens = fmt.Sprintf("a %d-token prompt without max_tokens is answered, though it is refused with max_tokens 1", out.Tokens)
	}
	return e, nil
}

// contextTolerance is how far the effective context may differ from a
// claim before it counts as a mismatch: none when the server counts tokens
// for us, a quarter when lengths are estimated from bytes or words.
func (a *auditor) contextTolerance() int {
	if a.cnt.Exact() {
		return 0
	}
	return max(8, a.advertised/4)
}

// contextFindings compares every claim with the effective context.
func contextFindings(e *Effective, claims []ContextClaim, tol int) []Finding {
	var out []Finding
	ev := []Evidence{evidenceOf(e.accepted)}
	if e.refused.ID != 0 {
		ev = append(ev, evidenceOf(e.refused))
	}
	for _, c := range claims {
		switch {
		case e.Unbounded && e.Tokens > c.Tokens:
			out = append(out, Finding{Kind: "context-mismatch", Severity: High,
				Title:    fmt.Sprintf("%s says %d tokens, but the server answers a %d-token prompt (effective context at least %d)", c.Source, c.Tokens, e.LongestAccepted, e.Tokens),
				Meaning:  "the server does not enforce the context it advertises: over-long prompts are answered rather than refused, so they are truncated or served from pages the request never wrote",
				Evidence: ev})
		case e.Tokens < c.Tokens-tol:
			out = append(out, Finding{Kind: "context-mismatch", Severity: High,
				Title:    fmt.Sprintf("effective context %d tokens, but %s says %d", e.Tokens, c.Source, c.Tokens),
				Meaning:  "prompts the claim promises are refused or their answers clamped; whoever sized requests or the KV pool by the claim is wrong (the incident began with an advertised context larger than the pool)",
				Evidence: ev})
		case e.Tokens > c.Tokens+tol:
			out = append(out, Finding{Kind: "context-mismatch", Severity: High,
				Title:    fmt.Sprintf("effective context %d tokens, but %s says %d", e.Tokens, c.Source, c.Tokens),
				Meaning:  "the server accepts longer prompts than claimed: the limit you believe is configured is not the one enforced, and capacity planned from it is wrong",
				Evidence: ev})
		}
	}
	if e.WithoutMaxTokens != "" && e.WithoutMaxTokens != "same boundary" {
		out = append(out, Finding{Kind: "context-default-answer", Severity: Medium,
			Title:   "the boundary moves when max_tokens is omitted: " + e.WithoutMaxTokens,
			Meaning: "clients that do not set max_tokens see a different context limit than those that do"})
	}
	return out
}
