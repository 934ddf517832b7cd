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

// Reservation is a decode worker's request waiting for its prompt's KV.
type Reservation struct {
	// Pages are the physical pages for positions [0, len(prompt)-1), in
	// logical order, owned by this request; the transfer writes into them.
	Pages []int32
	// Events delivers the request's output once Done(nil) was called, as
	// Submit's channel does. It ends with an error if the transfer failed.
	Events <-chan Event

	e    *Engine
	id   uint64
	once sync.Once
}

// Reserve admits req on this (decode) engine and reserves pages for the KV
// of every prompt token but the last. Admission runs first, before any page
// exists (DESIGN I4). The caller must call Done exactly once.
func (e *Engine) Reserve(ctx context.Context, req Request) (*Reservation, error) {
	j, err := e.newJob(req, false)
	if err != nil {
		return nil, err
	}
	if len(req.Prompt) < 2 {
		return nil, fmt.Errorf("%w: a transferred prompt needs at least 2 tokens", ErrInvalidRequest)
	}
	j.transferring = true
	type reply struct {
		pages []int32
		err   error
	}
	rc := make(chan reply, 1)
	if err := e.post(func() {
		pages, err := e.sched.SubmitTransfer(j.adm)
		if err == nil {
			e.jobs[j.id] = j
		}
		rc <- reply{pages, err}
	}); err != nil {
		return nil, err
	}
	r := <-rc
	if r.err != nil {
		return nil, fmt.Errorf("engine: reserving pages: %w", r.err)
	}
	j.stop = context.AfterFunc(ctx, func() { e.cancel(j.id) })
	return &Reservation{Pages: r.pages, Events: j.events, e: e, id: j.id}, nil
}

// Done ends the transfer: nil means every reserved page holds verified KV
// and the transfer will not touch them again; an error aborts the request,
// frees its pages and ends Events with that error. Later calls do nothing.
func (r *Reservation) Done(err error) {
	r.once.Do(func() {
		perr := r.e.post(func() {
			j := r.e.jobs[r.id]
			if j == nil && err == nil {
				err = ErrAborted // ended meanwhile (shutdown, internal error)
			}
			if derr := r.e.sched.TransferDone(r.id, err); derr != nil || err != nil {
				if err == nil {
					err = derr
				}
				r.e.end(r.id, Event{Err: fmt.Errorf("%w: KV transfer: %v", ErrAborted, err)})
				return
			}
			j.transferring = false
		})
		_ = perr // closed: shutdown already ended the stream
	})
}

// Handoff is a prefill worker's computed prompt: the pages holding the KV of
// positions [0, Tokens), pinned by leases until Release, so they never
// return to the free list while the transfer reads them.
type Handoff struct {
	Tokens int
	Pages  []int32 // physical pages, logical order
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
			h := &Handoff{Tokens: ev.handoff.Tokens, Pages: ev.handoff.Pages, e: e, id: j.id}
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
		_ = h.e.post(func() {
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
