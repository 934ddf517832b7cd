package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/incident"
	"github.com/bulkhead-llm/bulkhead/internal/sched"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

// MaxContext is the context the gateway advertises and admits against.
func (g *Gateway) MaxContext() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.want.MaxContext
}

// Ready reports whether a healthy prefill+decode pair exists.
func (g *Gateway) Ready() bool {
	return g.isStarted() && g.pick(worker.Prefill) != nil && g.pick(worker.Decode) != nil
}

// Stats sums the workers' last reported load.
func (g *Gateway) Stats() engine.Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	var st engine.Stats
	for _, m := range g.members {
		if m.role == worker.Decode {
			st.Running += m.info.Running
			st.Waiting += m.info.Waiting
		}
		st.PagesTotal += m.info.PagesTotal
		st.PagesFree += m.info.PagesFree
	}
	return st
}

// submit admits req (DESIGN I4: an oversized prompt is answered here and no
// worker hears of it), reserves its KV on a decode worker, has a prefill
// worker compute and transfer it, and returns decode's token stream.
// Prefill's and decode's client errors come back as the same typed errors
// an engine returns, so the client sees the same 4xx.
// submitOnce runs req on one prefill+decode pair (see submit). With
// mayRetry, a failure of the pair before the first token is a lostWorker
// (returned, or handled by the stream itself once it has begun).
func (g *Gateway) submitOnce(ctx context.Context, req engine.Request, mayRetry bool) (<-chan engine.Event, error) {
	if !g.isStarted() {
		return nil, fmt.Errorf("%w: no worker has answered yet", engine.ErrShuttingDown)
	}
	lengthErr := sched.CheckPromptLength(len(req.Prompt), sched.Limits{MaxContext: g.MaxContext()})
	switch {
	case len(req.Prompt) == 0:
		return nil, fmt.Errorf("%w: the prompt is empty", engine.ErrInvalidRequest)
	case lengthErr != nil && !incident.Active().PassOversized():
		return nil, lengthErr
	case req.MaxTokens < 1:
		return nil, fmt.Errorf("%w: max tokens %d must be at least 1", engine.ErrInvalidRequest, req.MaxTokens)
	case req.PromptLogprobs:
		// The prefill worker computes the prompt and samples nothing; the
		// decode worker receives it as KV, with no logits to score.
		return nil, fmt.Errorf("%w: echo with logprobs is not supported through the gateway: the prompt is computed on the prefill worker, which keeps no logits (use bulkhead serve)", engine.ErrInvalidRequest)
	}
	spec, err := constraintSpec(req) // structured.go
	if err != nil {
		return nil, err
	}
	decs, pre := g.ranked(worker.Decode), g.pick(worker.Prefill)
	if len(decs) == 0 || pre == nil {
		return nil, fmt.Errorf("%w: no healthy prefill and decode worker pair", engine.ErrShuttingDown)
	}
	tid, nonce := g.nextID.Add(1), rand.Uint64()
	dr := worker.DecodeRequest{TransferID: tid, Nonce: nonce, Request: req, Constraint: spec}
	r, err := g.reserve(ctx, decs, dr)
	if err != nil {
		return nil, err
	}
	cached := 0 // prompt tokens prefill found in its prefix cache
	if r.handoff > 0 {
		pctx, pcancel := context.WithTimeout(r.ctx, g.cfg.PrefillTimeout)
		pre.inflight.Add(1)
		presp, err := g.post(pctx, pre.url+"/v1/worker/prefill",
			worker.PrefillRequest{TransferID: tid, Nonce: nonce, DecodeKV: r.dec.info.KVAddr, DecodeIdentity: r.dec.info.Identity, Request: req})
		pre.inflight.Add(-1)
		if err == nil {
			var pr worker.PrefillResponse
			if json.NewDecoder(io.LimitReader(presp.Body, 1<<16)).Decode(&pr) == nil {
				cached = pr.CachedTokens
			}
			presp.Body.Close()
		} else if ctx.Err() == nil && pctx.Err() != nil {
			err = fmt.Errorf("%w: prefill worker %s: no answer within %s", engine.ErrInternal, pre.url, g.cfg.PrefillTimeout)
		}
		pcancel()
		if err != nil {
			// Closing decode's stream aborts its reservation and frees it.
			r.close()
			if de := (*worker.DriftError)(nil); errors.As(err, &de) {
				g.onDrift(ctx, pre, r.dec, de)
				return nil, err
			}
			if mayRetry && retryablePrefillError(ctx, err) {
				return nil, lostWorker{handoffError{err}}
			}
			return nil, handoffError{err}
		}
	}
	events := make(chan engine.Event, req.MaxTokens+1)
	go func() {
		defer close(events)
		defer r.close()
		// Every line must come within StreamIdle: a stalled decode worker
		// ends the stream with an error instead of holding the client.
		idle := time.AfterFunc(g.cfg.StreamIdle, r.cancel)
		defer idle.Stop()
		for sent := false; ; {
			l, err := readLine(r.lines)
			idle.Reset(g.cfg.StreamIdle)
			switch {
			case err != nil:
				if ctx.Err() != nil {
					events <- engine.Event{Err: engine.ErrAborted}
					return
				}
				lost := fmt.Errorf("%w: decode worker %s: stream ended: %v", engine.ErrInternal, r.dec.url, err)
				if !sent && mayRetry {
					// Nothing reached the client: run it again elsewhere.
					r.close()
					forward(events, func() (<-chan engine.Event, error) { return g.retryAfterLoss(ctx, req, lost) })
					return
				}
				events <- engine.Event{Err: lost}
				return
			case l.Token != nil:
				sent = true
				events <- engine.Event{Token: l.Token.ID, Logprob: l.Token.Logprob, TopLogprobs: l.Token.TopLogprobs}
			case l.Finish != nil:
				u := l.Finish.Usage
				u.CachedTokens += cached // decode computes none of the prompt from cache
				events <- engine.Event{Finish: &engine.Finish{Reason: l.Finish.Reason, Usage: u}}
				return
			case l.Error != nil:
				events <- engine.Event{Err: worker.DecodeError(l.Error)}
				return
			}
		}
	}()
	return events, nil
}

// forward sends the events of a retried request on events, or its
// failure to start.
func forward(events chan<- engine.Event, retry func() (<-chan engine.Event, error)) {
	ch, err := retry()
	if err != nil {
		events <- engine.Event{Err: err}
		return
	}
	for ev := range ch {
		events <- ev
	}
}

// reservation is an open decode stream whose pages are reserved.
type reservation struct {
	dec     *member
	ctx     context.Context
	cancel  context.CancelFunc
	resp    *http.Response
	lines   *bufio.Reader
	handoff int
	once    sync.Once
}

// close ends the stream (decode then aborts the request if it still runs)
// and stops counting it against the worker.
func (r *reservation) close() {
	r.once.Do(func() {
		r.resp.Body.Close()
		r.cancel()
		r.dec.inflight.Add(-1)
	})
}

// reserve asks the decode workers, least loaded first, to reserve the
// request's pages, each within ReserveTimeout. A worker that is full
// (overloaded), shutting down or unreachable has reserved nothing, so the
// next one is tried; when every one was full the client gets the
// OverloadedError (503 with Retry-After), never an internal error.
func (g *Gateway) reserve(ctx context.Context, decs []*member, dr worker.DecodeRequest) (*reservation, error) {
	var lastErr error
	overloaded := false
	for _, dec := range decs {
		actx, cancel := context.WithCancel(ctx)
		timer := time.AfterFunc(g.cfg.ReserveTimeout, cancel)
		dec.inflight.Add(1)
		r, err := g.reserveOn(actx, dec, dr)
		fired := !timer.Stop()
		if err == nil && !fired {
			r.ctx, r.cancel = actx, cancel
			return r, nil
		}
		if r != nil {
			r.resp.Body.Close()
		}
		cancel()
		dec.inflight.Add(-1)
		if ctx.Err() != nil {
			return nil, engine.ErrAborted
		}
		var ol *engine.OverloadedError
		var cl *engine.ContextLengthError
		switch {
		case fired:
			overloaded = true
			lastErr = &engine.OverloadedError{Reason: fmt.Sprintf("decode worker %s reserved no pages within %s", dec.url, g.cfg.ReserveTimeout), RetryAfter: g.cfg.ReserveTimeout}
		case errors.As(err, &ol):
			overloaded = true
			lastErr = err
		case errors.As(err, &cl), errors.Is(err, engine.ErrInvalidRequest):
			return nil, err // the request's fault: the same everywhere
		default:
			g.log.Warn("decode worker failed a reservation; trying the next", "worker", dec.url, "err", err)
			lastErr = err
		}
	}
	if overloaded {
		var ol *engine.OverloadedError
		if !errors.As(lastErr, &ol) {
			lastErr = &engine.OverloadedError{Reason: "every decode worker is full", RetryAfter: g.cfg.ReserveTimeout}
		}
	}
	return nil, lastErr
}

// reserveOn opens dec's decode stream and reads its first line, the
// reservation.
func (g *Gateway) reserveOn(ctx context.Context, dec *member, dr worker.DecodeRequest) (*reservation, error) {
	resp, err := g.post(ctx, dec.url+"/v1/worker/decode", dr)
	if err != nil {
		return nil, err
	}
	r := &reservation{dec: dec, resp: resp, lines: bufio.NewReader(resp.Body)}
	first, err := readLine(r.lines)
	switch {
	case err == nil && first.Reserved != nil:
		r.handoff = first.Reserved.HandoffTokens
		return r, nil
	case err == nil && first.Error != nil:
		return r, worker.DecodeError(first.Error)
	}
	return r, fmt.Errorf("%w: decode worker %s: no reservation (%v)", engine.ErrInternal, dec.url, err)
}

// post sends a JSON body; a non-200 answer becomes the typed error its body
// names (so prefill's 4xx reaches the client unchanged).
func (g *Gateway) post(ctx context.Context, url string, body any) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrInvalidRequest, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrInternal, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := g.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, engine.ErrAborted
		}
		return nil, fmt.Errorf("%w: %s: %v", engine.ErrInternal, url, err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	var eb struct {
		Error *worker.ErrorBody `json:"error"`
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if json.Unmarshal(raw, &eb) == nil && eb.Error != nil {
		return nil, worker.DecodeError(eb.Error)
	}
	return nil, fmt.Errorf("%w: %s: %s", engine.ErrInternal, url, resp.Status)
}

// readLine reads one NDJSON line of a decode stream.
func readLine(r *bufio.Reader) (worker.Line, error) {
	var l worker.Line
	b, err := r.ReadBytes('\n')
	if err != nil {
		if errors.Is(err, io.EOF) && len(b) == 0 {
			return l, io.ErrUnexpectedEOF
		}
		if len(b) == 0 {
			return l, err
		}
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return l, fmt.Errorf("malformed stream line: %v", err)
	}
	return l, nil
}
