package gateway

import (
	"fmt"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/grammar"
)

// specSource is a constraint that knows the source it was compiled from
// (grammar.Constraint, as the API builds it).
type specSource interface {
	Spec() (grammar.Spec, bool)
}

// constraintSpec is what the decode worker needs to apply req's
// constraint itself: the constraint is a live matcher over this process's
// vocabulary and cannot cross the wire, its source can. The API has
// compiled the source already, so a bad schema was a 400 before the
// gateway was asked. A constraint without a source is refused rather than
// let decode run unconstrained.
func constraintSpec(req engine.Request) (*grammar.Spec, error) {
	c := req.Sampling.Constraint
	if c == nil {
		return nil, nil
	}
	if ss, ok := c.(specSource); ok {
		if s, ok := ss.Spec(); ok {
			return &s, nil
		}
	}
	return nil, fmt.Errorf("%w: this structured-output constraint has no source to send to the decode worker", engine.ErrInvalidRequest)
}
