package sched

import (
	"errors"
	"fmt"
	"github.com/bulkhead-llm/bulkhead/internal/incident"
)

// ErrContextLength matches a prompt too long to serve (an HTTP 400
// context_length_exceeded); see ContextLengthError.
var ErrContextLength = errors.New("context_length_exceeded")

// ContextLengthError rejects a prompt that cannot be served, before any KV
// page is allocated (DESIGN I4). It is the one such type: engine, api,
// gateway and workers use it (engine.ContextLengthError is an alias), and
// callers answer it with HTTP 400 context_length_exceeded.
type ContextLengthError struct {
	PromptTokens int // prompt length
	// Limit is the largest prompt accepted: max context − 1 (one position
	// is kept for the first generated token), or pool tokens − 1.
	Limit      int
	MaxContext int
	LimitName  string // "" (max context) or "KV pool"
}

func (e *ContextLengthError) Error() string {
	if e.LimitName == "KV pool" {
		return fmt.Sprintf("prompt has %d tokens, but the KV pool accepts at most %d prompt tokens (max context %d)",
			e.PromptTokens, e.Limit, e.MaxContext)
	}
	return fmt.Sprintf("prompt has %d tokens, but this model accepts at most %d prompt tokens (max context %d, one position is kept for the first generated token)",
		e.PromptTokens, e.Limit, e.MaxContext)
}

// CheckPromptLength is the one prompt-length admission rule (DESIGN I4):
// prompt + 1 must fit the max context and, when known (PoolTokens > 0),
// the pool. The api, the gateway and Admit all call it.
func CheckPromptLength(n int, lim Limits) error {
	switch {
	case n+1 > lim.MaxContext:
		return &ContextLengthError{PromptTokens: n, Limit: lim.MaxContext - 1, MaxContext: lim.MaxContext}
	case lim.PoolTokens > 0 && n+1 > lim.PoolTokens:
		return &ContextLengthError{PromptTokens: n, Limit: lim.PoolTokens - 1, MaxContext: lim.MaxContext, LimitName: "KV pool"}
	}
	return nil
}

// Unwrap lets errors.Is(err, ErrContextLength) hold.
func (e *ContextLengthError) Unwrap() error { return ErrContextLength }

// ErrBadRequest matches a request admission refuses for another reason.
var ErrBadRequest = errors.New("sched: bad request")

// Request is what a client asked for, before admission.
type Request struct {
	ID        uint64  // unique among live requests, non-zero
	Tenant    string  // fair-share unit
	Salt      string  // prefix-cache domain; usually the tenant's secret salt
	Prompt    []int32 // token ids
	MaxTokens int     // tokens to generate at most (≥ 1)
	Stop      []int32 // token ids that end generation (emitted, then finish)
	// PrefillOnly (a prefill worker's request) computes the KV of every
	// prompt token but the last and then hands its pages off; it samples
	// nothing. The decode worker runs the last prompt token itself, which
	// yields the logits of the first output token.
	PrefillOnly bool
	// OwnPrefix skips the prefix cache: every prompt position is computed
	// by this request (prompt log-probabilities need each one's logits).
	OwnPrefix bool
}

// Limits are what admission checks a request against.
type Limits struct {
	MaxContext int // configured maximum context in tokens
	PoolTokens int // KV pool capacity in tokens
}

// Admitted is a request that passed admission. Only Admit constructs one, so
// a rejected request has nothing the scheduler's queues would accept.
type Admitted struct {
	req   Request
	state State
	spent bool // queued once already
	stale bool // a placeholder (incident.Policy): runs its last token on unwritten pages
}

// Request returns the admitted request.
func (a *Admitted) Request() Request { return a.req }

// Admit checks r against lim before anything is allocated (DESIGN I4): the
// prompt plus one generated token must fit both the maximum context and the
// pool. It returns the admitted request or an error and no request.
func Admit(r Request, lim Limits) (*Admitted, error) {
	state := StateReceived
	reject := func(err error) (*Admitted, error) {
		_, _ = Transition(state, EvReject) // Received → Rejected: nothing to keep
		return nil, err
	}
	switch {
	case r.ID == 0:
		return reject(fmt.Errorf("sched: request id must not be zero: %w", ErrBadRequest))
	case len(r.Prompt) == 0:
		return reject(fmt.Errorf("sched: request %d has an empty prompt: %w", r.ID, ErrBadRequest))
	case r.MaxTokens < 1:
		return reject(fmt.Errorf("sched: request %d max tokens %d < 1: %w", r.ID, r.MaxTokens, ErrBadRequest))
	case r.PrefillOnly && len(r.Prompt) < 2:
		return reject(fmt.Errorf("sched: request %d: a prefill-only prompt needs 2 tokens or more: %w", r.ID, ErrBadRequest))
	}
	if err := CheckPromptLength(len(r.Prompt), lim); err != nil {
		if p, ok := incident.Active().Placeholder(r.Prompt, lim.MaxContext, lim.PoolTokens); ok {
			r.Prompt = p
			return &Admitted{req: r, state: StateAdmitted, stale: true}, nil
		}
		return reject(err)
	}
	next, err := Transition(state, EvAdmit)
	if err != nil {
		return nil, err
	}
	return &Admitted{req: r, state: next}, nil
}

// ErrPoolTooSmall matches a pool that cannot hold one maximum-length request.
var ErrPoolTooSmall = errors.New("sched: KV pool smaller than max context")

// CheckCapacity is the startup check (DESIGN I3): a worker whose pool holds
// fewer tokens than the configured maximum context must not start. There is
// deliberately no way to skip it.
func CheckCapacity(poolTokens, maxContext int) error {
	if maxContext < 1 {
		return fmt.Errorf("sched: max context %d must be positive", maxContext)
	}
	if poolTokens < maxContext {
		return fmt.Errorf("sched: KV pool holds %d tokens but max context is %d tokens: %w",
			poolTokens, maxContext, ErrPoolTooSmall)
	}
	return nil
}
