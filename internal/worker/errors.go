package worker

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
)

// DriftError is a KV handshake refused because the two workers' models or
// KV layouts differ (a worker restarted with other flags since the
// gateway's last check). It is no client's fault and no internal bug: the
// gateway re-checks its workers and tries another pair.
type DriftError struct{ Reason string }

func (e *DriftError) Error() string { return "worker drift: " + e.Reason }

// EncodeError turns an engine error into a status and a body that DecodeError
// maps back, so a client error keeps its meaning across the hop.
func EncodeError(err error) (int, *ErrorBody) {
	var cl *engine.ContextLengthError
	var ol *engine.OverloadedError
	var de *DriftError
	switch {
	case errors.As(err, &de):
		return http.StatusServiceUnavailable, &ErrorBody{Message: de.Reason, Kind: "drift"}
	case errors.As(err, &ol):
		return http.StatusServiceUnavailable, &ErrorBody{Message: err.Error(), Kind: "overloaded", RetryAfterMs: ol.RetryAfter.Milliseconds()}
	case errors.As(err, &cl):
		return http.StatusBadRequest, &ErrorBody{Message: cl.Error(), Kind: "context_length_exceeded",
			PromptTokens: cl.PromptTokens, Limit: cl.Limit, MaxContext: cl.MaxContext, LimitName: cl.LimitName}
	case errors.Is(err, engine.ErrInvalidRequest):
		return http.StatusBadRequest, &ErrorBody{Message: err.Error(), Kind: "invalid_request"}
	case errors.Is(err, engine.ErrShuttingDown):
		return http.StatusServiceUnavailable, &ErrorBody{Message: err.Error(), Kind: "shutting_down"}
	case errors.Is(err, engine.ErrAborted):
		return http.StatusServiceUnavailable, &ErrorBody{Message: err.Error(), Kind: "aborted"}
	}
	return http.StatusInternalServerError, &ErrorBody{Message: err.Error(), Kind: "internal"}
}

// DecodeError is EncodeError's inverse: the typed engine error for a body.
func DecodeError(b *ErrorBody) error {
	switch b.Kind {
	case "context_length_exceeded":
		return &engine.ContextLengthError{PromptTokens: b.PromptTokens, Limit: b.Limit, MaxContext: b.MaxContext, LimitName: b.LimitName}
	case "invalid_request":
		return fmt.Errorf("%w: %s", engine.ErrInvalidRequest, b.Message)
	case "overloaded":
		return &engine.OverloadedError{Reason: b.Message, RetryAfter: time.Duration(b.RetryAfterMs) * time.Millisecond}
	case "shutting_down":
		return fmt.Errorf("%w: %s", engine.ErrShuttingDown, b.Message)
	case "drift":
		return &DriftError{Reason: b.Message}
	case "aborted":
		return fmt.Errorf("%w: %s", engine.ErrAborted, b.Message)
	}
	return fmt.Errorf("%w: %s", engine.ErrInternal, b.Message)
}
