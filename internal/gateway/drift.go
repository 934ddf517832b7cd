package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

// submit runs req on a prefill+decode pair. A pair whose KV handshake is
// refused because a worker's configuration changed since the last check
// (drift inside the check interval) is taken out of the pool at once and
// the request tried once on another pair; with none left the client gets a
// 503 with Retry-After, never a 500 and never a truncated answer. A pair
// that fails before the first token (a worker died) is retried once on
// another pair too (retry.go).
func (g *Gateway) submit(ctx context.Context, req engine.Request) (<-chan engine.Event, error) {
	ch, err := g.submitOnce(ctx, req, true)
	var lost lostWorker
	if errors.As(err, &lost) {
		return g.retryAfterLoss(ctx, req, lost.error)
	}
	var de *worker.DriftError
	if !errors.As(err, &de) {
		return ch, err
	}
	ch, err = g.submitOnce(ctx, req, true)
	if errors.As(err, &de) || errors.Is(err, engine.ErrShuttingDown) {
		return nil, driftRefusal{de: de, ol: &engine.OverloadedError{
			Reason:     fmt.Sprintf("no worker pair agrees on the model and KV layout (%s)", de.Reason),
			RetryAfter: g.cfg.CheckInterval,
		}}
	}
	return ch, err
}

// driftRefusal is the 503 a client gets when drift left no sound pair: an
// OverloadedError (Retry-After) for the API, a DriftError for the page
// map's refusal log.
type driftRefusal struct {
	de *worker.DriftError
	ol *engine.OverloadedError
}

func (e driftRefusal) Error() string   { return e.ol.Error() }
func (e driftRefusal) Unwrap() []error { return []error{e.ol, e.de} }

// onDrift re-checks every worker now, so the one that drifted gets no more
// traffic before the next periodic check. If the check cannot tell which
// (both still report the reference), the decode worker that refused the
// handshake is the one taken out until a check finds it sound again.
func (g *Gateway) onDrift(ctx context.Context, pre, dec *member, de *worker.DriftError) {
	g.Check(ctx)
	g.mu.Lock()
	defer g.mu.Unlock()
	// pre and dec are ranked copies: look the members up by URL, so the
	// mark reaches the pool's own entry.
	p, d := pre, dec // the copies, if the members are gone
	for _, m := range g.members {
		switch {
		case m.url == pre.url && m.role == pre.role:
			p = m
		case m.url == dec.url && m.role == dec.role:
			d = m
		}
	}
	if p.healthy && d.healthy {
		d.healthy, d.problem = false, "drift: "+de.Reason
	}
	g.log.Warn("KV handshake refused: worker configuration drifted", "prefill", pre.url, "decode", dec.url,
		"reason", de.Reason, "prefill_problem", p.problem, "decode_problem", d.problem)
}
