package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/incident"
	"github.com/bulkhead-llm/bulkhead/internal/sched"
)

// tokenLP is one generated token's logprob information.
type tokenLP struct {
	id      int32
	logprob float32
	top     []engine.TokenLogprob
	offset  int // character (code point) offset of the token's text in the completion
	// noContext marks the echoed prompt's first token, which has no
	// log-probability (null in the response).
	noContext bool
}

// chunk is what one engine event produced for the client.
type chunk struct {
	text   string
	tokens []tokenLP
}

type usageCounts struct {
	prompt, completion, cached int
}

type timing struct {
	arrival, first, last time.Time
}

// admission is an accepted generation: the engine stream and everything
// that must be released when it ends.
type admission struct {
	events  <-chan engine.Event
	cancel  context.CancelFunc // aborts the engine request
	release func()
	prompt  int
	// promptIDs are the prompt's tokens, for echo with logprobs.
	promptIDs []int32
}

// admit checks limits and the context size, then submits to the engine.
// Everything here happens before any KV page exists (DESIGN I4).
func (s *Server) admit(r *http.Request, info *requestInfo, prompt []int32, p *genParams, param string) (*admission, *apiError) {
	if e := s.checkPrompt(info, prompt, p, param); e != nil {
		return nil, e
	}
	ctx, cancel := context.WithCancel(r.Context())
	if info.kvt != nil {
		ctx = context.WithValue(ctx, kvTransferKey{}, info.kvt)
	}
	stopAfter := context.AfterFunc(s.base, cancel)
	req := engine.Request{
		ID: info.id, Tenant: info.tenant.ID, CacheSalt: info.tenant.CacheSalt,
		Prompt: prompt, MaxTokens: p.maxTokens, Sampling: p.sampling,
		Logprobs: p.logprobs, TopLogprobs: p.topLogprobs, IgnoreEOS: p.ignoreEOS, StopTokens: p.stopTokens,
		PromptLogprobs: p.promptLogprobs,
	}
	events, err := s.eng.Submit(ctx, req)
	if err != nil {
		stopAfter()
		cancel()
		if !errors.Is(err, engine.ErrShuttingDown) && engineError(err, param, info.id).Status >= 500 {
			info.log.Error("engine refused request", "err", err)
		}
		return nil, engineError(err, param, info.id)
	}
	info.promptTokens = len(prompt)
	return &admission{
		events: events, cancel: cancel, prompt: len(prompt), promptIDs: prompt,
		release: func() { stopAfter(); cancel() },
	}, nil
}

// checkPrompt refuses a prompt that is empty or does not fit the context
// beside p's max_tokens, which it settles (the endpoint's default applied).
func (s *Server) checkPrompt(info *requestInfo, prompt []int32, p *genParams, param string) *apiError {
	maxCtx := s.eng.MaxContext()
	if len(prompt) == 0 {
		return invalid(param, "invalid_value", "the prompt is empty")
	}
	if err := sched.CheckPromptLength(len(prompt), sched.Limits{MaxContext: maxCtx}); err != nil {
		var cle *engine.ContextLengthError
		if !errors.As(err, &cle) {
			return engineError(err, param, info.id)
		}
		if !incident.Active().PassOversized() {
			return contextLengthError(param, cle)
		}
		// An incident reproduction passes the oversized prompt on, as the
		// vulnerable engine did (see internal/incident).
		p.maxTokens = max(1, min(p.maxTokens, 32))
	} else if e := p.fitMaxTokens(param, len(prompt), maxCtx, p.defaultMax); e != nil {
		return e
	}
	return nil
}

// genResult is how a generation ended.
type genResult struct {
	finish    string // "stop" or "length" on success
	usage     usageCounts
	err       error // the engine's error event, or the client's write error
	clientErr bool  // err came from writing to the client
	timing    timing
}

// run consumes the engine stream, detokenizes, applies stop strings and
// hands each piece to emit. It returns once the engine has closed the
// stream, so the request's pages are released before the handler returns.
func (s *Server) run(a *admission, p genParams, arrival time.Time, emit func(chunk) error) genResult {
	res := genResult{usage: usageCounts{prompt: a.prompt}, timing: timing{arrival: arrival}}
	dec := s.decoderFor(p)
	stops := newStopMatcher(p.stop)
	sent := 0
	defer func() {
		a.cancel()
		for range a.events { // drain: the engine closes the stream once aborted
		}
	}()
	deliver := func(c chunk) bool {
		if c.text == "" && len(c.tokens) == 0 {
			return true
		}
		sent += utf8.RuneCountInString(c.text)
		if err := emit(c); err != nil {
			res.err, res.clientErr = err, true
			return false
		}
		return true
	}
	for ev := range a.events {
		now := time.Now()
		switch {
		case ev.Err != nil:
			res.err = ev.Err
			return res
		case ev.Finish != nil:
			res.finish = string(ev.Finish.Reason)
			res.usage = usageCounts{prompt: ev.Finish.Usage.PromptTokens, completion: ev.Finish.Usage.CompletionTokens,
				cached: ev.Finish.Usage.CachedTokens}
			if res.usage.prompt == 0 {
				res.usage.prompt = a.prompt
			}
			tail, stopped := stops.Feed(dec.Flush())
			if !stopped {
				tail += stops.Flush()
			}
			if stopped {
				res.finish = string(engine.FinishStop)
			}
			deliver(chunk{text: tail})
			return res
		}
		if p.promptLogprobs && res.timing.first.IsZero() && ev.Prompt == nil {
			// Never answer echo+logprobs without the prompt's scores.
			res.err = fmt.Errorf("%w: the engine returned no prompt log-probabilities", engine.ErrInternal)
			return res
		}
		if ev.Prompt != nil && p.promptLogprobs {
			// The echoed prompt's tokens lead the logprobs; the completion's
			// offsets then count from the end of the echoed text.
			pc, n := s.promptChunk(a.promptIDs, ev.Prompt)
			if !deliver(pc) {
				return res
			}
			sent = n
		}
		if res.timing.first.IsZero() {
			res.timing.first = now
		}
		res.timing.last = now
		res.usage.completion++
		var c chunk
		if p.logprobs {
			c.tokens = []tokenLP{{id: ev.Token, logprob: ev.Logprob, top: ev.TopLogprobs, offset: sent}}
		}
		if !s.tok.IsEOG(ev.Token) {
			var stopped bool
			c.text, stopped = stops.Feed(dec.Add(ev.Token))
			if stopped {
				res.finish = string(engine.FinishStop)
				deliver(c)
				return res
			}
		}
		if !deliver(c) {
			return res
		}
	}
	res.err = errors.New("engine closed the stream without a final event")
	return res
}

// promptChunk is the logprobs of an echoed prompt: each token with its
// score and character offset in the prompt's decoded text (the first has no
// score), and that text's length in characters.
func (s *Server) promptChunk(ids []int32, scores []engine.PromptLogprob) (chunk, int) {
	var c chunk
	dec := s.newDecoder()
	off := 0
	for i, id := range ids {
		t := tokenLP{id: id, offset: off, noContext: i == 0}
		if i > 0 && i < len(scores) {
			t.logprob, t.top = scores[i].Logprob, scores[i].Top
		}
		c.tokens = append(c.tokens, t)
		off += utf8.RuneCountInString(dec.Add(id))
	}
	return c, off + utf8.RuneCountInString(dec.Flush())
}
