package gateway

import (
	"context"
	"errors"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

type nopConstraint struct{}

func (nopConstraint) Mask([]float32) {}
func (nopConstraint) Accept(int32)   {}

// A constrained request cannot cross the worker wire (the matcher is
// in-process state): the gateway refuses it as invalid, before any worker
// hears of it, rather than let decode run unconstrained.
func TestStructuredOutputIsRefusedAtTheGateway(t *testing.T) {
	pre, dec := startWorker(t, worker.Prefill, smallPool), startWorker(t, worker.Decode, smallPool)
	g := newGateway(t, []*node{pre}, []*node{dec})
	req := engine.Request{Prompt: []int32{5, 6, 7}, MaxTokens: 2}
	req.Sampling.Constraint = nopConstraint{}
	if _, err := g.Submit(context.Background(), req); !errors.Is(err, engine.ErrInvalidRequest) {
		t.Fatalf("constrained request: %v, want ErrInvalidRequest", err)
	}
	if pre.hits.Load()+dec.hits.Load() != 0 {
		t.Fatalf("workers heard of a refused request: prefill %d, decode %d", pre.hits.Load(), dec.hits.Load())
	}
}
