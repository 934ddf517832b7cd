package engine

import (
	"errors"
	"fmt"
	"slices"

	"github.com/bulkhead-llm/bulkhead/internal/sample"
	"github.com/bulkhead-llm/bulkhead/internal/sched"
)

// admission validates and admits requests on the caller's goroutine, before
// anything reaches the machine (DESIGN I4): nothing is allocated for a
// request that cannot be served. It reads only immutable configuration.
type admission struct {
	cfg    Config
	limits sched.Limits
}

// admit turns req into the message that starts it, or the error that
// refuses it: *ContextLengthError for an oversized prompt, ErrInvalidRequest
// for a malformed one.
func (a admission) admit(id uint64, req Request, prefillOnly bool) (*SubmitMsg, error) {
	if err := a.validate(req, prefillOnly); err != nil {
		return nil, err
	}
	stopSet := slices.Clone(req.StopTokens)
	if !req.IgnoreEOS {
		stopSet = append(stopSet, a.cfg.EOG...)
	}
	smp, err := sample.New(samplerParams(req, stopSet))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	adm, err := sched.Admit(sched.Request{
		ID: id, Tenant: req.Tenant, Salt: string(req.CacheSalt), PrefillOnly: prefillOnly, OwnPrefix: req.PromptLogprobs,
		Prompt: slices.Clone(req.Prompt), MaxTokens: req.MaxTokens, Stop: stopSet,
	}, a.limits)
	if err != nil {
		var cl *ContextLengthError
		if errors.As(err, &cl) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	return &SubmitMsg{ID: id, Req: req, Adm: adm, Sampler: smp, StopSet: stopSet}, nil
}

func (a admission) validate(req Request, prefillOnly bool) error {
	switch {
	case len(req.Prompt) == 0:
		return fmt.Errorf("%w: the prompt is empty", ErrInvalidRequest)
	case req.MaxTokens < 1:
		return fmt.Errorf("%w: max tokens %d must be at least 1", ErrInvalidRequest, req.MaxTokens)
	case req.TopLogprobs < 0 || req.TopLogprobs > 20:
		return fmt.Errorf("%w: top logprobs %d must be in [0, 20]", ErrInvalidRequest, req.TopLogprobs)
	case req.PromptLogprobs && prefillOnly:
		return fmt.Errorf("%w: prompt logprobs on a prefill-only request: its logits are never sampled", ErrInvalidRequest)
	}
	for i, t := range req.Prompt {
		if t < 0 || int(t) >= a.cfg.VocabSize {
			return fmt.Errorf("%w: prompt token %d at position %d is outside the vocabulary [0, %d)", ErrInvalidRequest, t, i, a.cfg.VocabSize)
		}
	}
	// Over-long generation is clipped by the context, not rejected: the
	// request finishes with reason "length" when the context is full.
	return nil
}

// samplerParams maps a request's sampling settings onto the sampler's.
func samplerParams(req Request, stopSet []int32) sample.Params {
	sp := req.Sampling
	p := sample.Params{
		Temperature: float64(sp.Temperature), TopK: sp.TopK,
		TopP: float64(sp.TopP), MinP: float64(sp.MinP), Seed: sp.Seed,
		LogitBias: sp.LogitBias, PresencePenalty: sp.PresencePenalty, FrequencyPenalty: sp.FrequencyPenalty,
		RepetitionPenalty: sp.RepetitionPenalty, MinTokens: sp.MinTokens,
		Constraint: sp.Constraint,
	}
	if sp.MinTokens > 0 {
		p.Suppress = stopSet
	}
	if sp.RepetitionPenalty != 0 && sp.RepetitionPenalty != 1 {
		p.Prompt = req.Prompt
	}
	return p
}
