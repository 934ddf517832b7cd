package engine

import (
	"context"
	"fmt"
	"sync"

	"github.com/bulkhead-llm/bulkhead/internal/model"
)

// Disaggregated serving splits one request across two engines. The prefill
// worker's engine computes the KV of every prompt token but the last
// (Prefill) and lends those pages to the transfer. The decode worker's
// engine reserves pages for the same positions (Reserve), lets the transfer
// fill them, and, once the transfer verified them (Reservation.Done(nil)),
// runs the last prompt token itself, which gives the logits of the first
// output token, and decodes on. The decode side therefore never needs the
// prefill side's logits or sampler state, and its output is exactly what one
// engine would have produced.

// Handoff is a prefill worker's computed prompt: the pages holding the KV of
// positions [0, Tokens), pinned by leases until Release, so they never
// return to the free list while the transfer reads them.
type Handoff struct {
	Tokens int
	// CachedTokens of Tokens came from the prefix cache (the request's
	// usage.cached_tokens in disaggregated serving).
	CachedTokens int
	Pages        []int32 // physical pages, logical order
	// Ready delivers how many layers of the pages are final, as the last
	// chunk's forward pass computes them; it is closed when that step
	// ended (early, if it failed). Pass it to transfer.Sender.Send so the
	// KV streams while later layers compute. Nil means every layer is
	// ready now.
	Ready <-chan int

	e    *Engine
	id   uint64
	once sync.Once
}

// Prefill runs req's prompt, but its last token, on this (prefill) engine and
// returns the leased pages. Admission runs first (DESIGN I4). Cancelling ctx
// before the handoff aborts the request. The caller must call Release
// exactly once, when the transfer returned, on every path.
func (e *Engine) Prefill(ctx context.Context, req Request) (*Handoff, error) {
	req.MaxTokens = max(req.MaxTokens, 1)
	msg, err := e.adm.admit(e.nextID.Add(1), req, true)
	if err != nil {
		return nil, err
	}
	if len(req.Prompt) < 2 {
		return nil, fmt.Errorf("%w: a prefill-only prompt needs at least 2 tokens", ErrInvalidRequest)
	}
	st := &stream{events: make(chan Event, req.MaxTokens+1)}
	if err := e.open(ctx, msg.ID, msg, st); err != nil {
		return nil, err
	}
	for ev := range st.events {
		switch {
		case ev.handoff != nil:
			h := &Handoff{Tokens: ev.handoff.Tokens, CachedTokens: ev.handoff.Cached, Pages: ev.handoff.Pages, e: e, id: msg.ID}
			if ev.ready != nil {
				h.Ready = ev.ready
			}
			return h, nil
		case ev.Err != nil:
			return nil, ev.Err
		}
	}
	return nil, fmt.Errorf("%w: prefill ended without a handoff", ErrInternal)
}

// Release ends the handoff: nil when decode acknowledged the KV, else the
// transfer's error. The leases are dropped and the pages freed.
func (h *Handoff) Release(err error) {
	h.once.Do(func() { _ = h.e.post(&HandoffReleasedMsg{ID: h.id, Err: err}) })
}

// layerForwarder is a Forwarder that reports each layer as it completes
// (*model.Model is one).
type layerForwarder interface {
	ForwardLayers(kv model.KVStore, seqs []model.Seq, afterLayer func(n int)) ([][]float32, error)
}
