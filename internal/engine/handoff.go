package engine

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/bulkhead-llm/bulkhead/internal/model"
	"github.com/bulkhead-llm/bulkhead/internal/sched"
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
	j, err := e.newJob(req, true)
	if err != nil {
		return nil, err
	}
	if len(req.Prompt) < 2 {
		return nil, fmt.Errorf("%w: a prefill-only prompt needs at least 2 tokens", ErrInvalidRequest)
	}
	if err := e.enqueue(ctx, j); err != nil {
		return nil, err
	}
	for ev := range j.events {
		switch {
		case ev.handoff != nil:
			h := &Handoff{Tokens: ev.handoff.Tokens, CachedTokens: ev.handoff.Cached, Pages: ev.handoff.Pages, e: e, id: j.id}
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
	h.once.Do(func() {
		_ = h.e.postAlways(func() {
			if derr := h.e.sched.HandoffDone(h.id, err); derr != nil {
				slog.Error("engine: releasing a handoff", "err", derr)
			}
		})
	})
}

// handOff delivers a finished prefill's pages to the Prefill caller (loop).
// A pinned handoff was delivered before the step: its layer channel closes.
func (e *Engine) handOff(id uint64, h *sched.Handoff) {
	j := e.jobs[id]
	if j == nil {
		_ = e.sched.HandoffDone(id, ErrAborted)
		return
	}
	if j.ready != nil {
		e.end(id, Event{})
		return
	}
	delete(e.jobs, id)
	j.stop()
	j.events <- Event{handoff: h}
	close(j.events)
}

// layerForwarder is a Forwarder that reports each layer as it completes
// (*model.Model is one).
type layerForwarder interface {
	ForwardLayers(kv model.KVStore, seqs []model.Seq, afterLayer func(n int)) ([][]float32, error)
}

// pinHandoffs pins the pages of every prefill-only request whose last
// prompt chunk is in this step and hands them to its Prefill caller now,
// with a channel on which the forward pass publishes finished layers. It
// returns the jobs pinned (loop only).
func (e *Engine) pinHandoffs(plan *sched.Plan) []*job {
	if _, ok := e.fwd.(layerForwarder); !ok {
		return nil
	}
	var pinned []*job
	for _, it := range plan.Items {
		j := e.jobs[it.ID]
		if j == nil || !j.adm.Request().PrefillOnly || it.Pos+len(it.Tokens) != len(j.req.Prompt)-1 {
			continue
		}
		h, err := e.sched.PinHandoff(it.ID)
		if err != nil {
			continue // handed off after the step instead
		}
		j.ready = make(chan int, 1)
		j.events <- Event{handoff: h, ready: j.ready}
		pinned = append(pinned, j)
	}
	return pinned
}

// forward runs the step, publishing layer progress to pinned handoffs.
func (e *Engine) forward(seqs []model.Seq, pinned []*job) ([][]float32, error) {
	if len(pinned) == 0 {
		return e.fwd.Forward(e.pool, seqs)
	}
	return e.fwd.(layerForwarder).ForwardLayers(e.pool, seqs, func(n int) {
		for _, j := range pinned {
			select { // keep only the newest count; the loop is the only sender
			case <-j.ready:
			default:
			}
			j.ready <- n
		}
	})
}
