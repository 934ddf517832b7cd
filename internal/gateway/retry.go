package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

// lostWorker marks a failure of the pair itself before anything reached
// the client: the prefill worker did not answer, or its transfer to the
// decode worker broke, or the decode stream ended before its first token.
// The client's request was sound, and nothing of it was delivered, so it
// may run again on another pair.
type lostWorker struct{ error }

func (e lostWorker) Unwrap() error { return e.error }

// retryablePrefillError reports whether a failed prefill call is the
// pair's failure (worth one more try elsewhere) rather than the request's
// own fault, the client leaving, drift (submit handles it) or a stall
// (the client has already waited PrefillTimeout once).
func retryablePrefillError(ctx context.Context, err error) bool {
	var cl *engine.ContextLengthError
	var ol *engine.OverloadedError
	var de *worker.DriftError
	switch {
	case ctx.Err() != nil, errors.Is(err, engine.ErrAborted):
		return false
	case errors.Is(err, engine.ErrInvalidRequest), errors.As(err, &cl), errors.As(err, &ol), errors.As(err, &de):
		return false
	}
	return errors.Is(err, engine.ErrInternal) || errors.Is(err, engine.ErrShuttingDown)
}

// retryAfterLoss re-reads every worker (so the one that died is no longer
// ranked) and runs req once more; first is the failure that started it,
// kept in the answer when no other pair can take the request.
func (g *Gateway) retryAfterLoss(ctx context.Context, req engine.Request, first error) (<-chan engine.Event, error) {
	g.Check(ctx)
	g.log.Warn("worker pair failed before the first token; trying another pair", "err", first)
	ch, err := g.submitOnce(ctx, req, false)
	if err != nil {
		if errors.Is(err, engine.ErrShuttingDown) {
			return nil, fmt.Errorf("%w (no other worker pair to retry on: %v)", first, err)
		}
		return nil, err
	}
	return ch, nil
}
