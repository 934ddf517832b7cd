package engine

import (
	"context"
	"fmt"
	"sync"
	"time"
)

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
// exists (DESIGN I4). When the pool has no room the call waits, in a queue
// served round robin across tenants, until pages free, ctx ends, or
// Config.ReserveWait passes; a full queue or an expired wait returns an
// *OverloadedError (retry elsewhere or later), never an internal error. The
// caller must call Done exactly once on a returned Reservation.
func (e *Engine) Reserve(ctx context.Context, req Request) (*Reservation, error) {
	msg, err := e.adm.admit(e.nextID.Add(1), req, false)
	if err != nil {
		return nil, err
	}
	if len(req.Prompt) < 2 {
		return nil, fmt.Errorf("%w: a transferred prompt needs at least 2 tokens", ErrInvalidRequest)
	}
	if req.PromptLogprobs {
		// The prompt's KV arrives computed: no logits to score it with.
		return nil, fmt.Errorf("%w: prompt logprobs cannot be computed for a prompt whose KV is transferred", ErrInvalidRequest)
	}
	st := &stream{events: make(chan Event, req.MaxTokens+1), reply: make(chan reserveReply, 1)}
	if err := e.open(ctx, msg.ID, &ReserveMsg{SubmitMsg: *msg}, st); err != nil {
		return nil, err
	}
	timer := time.NewTimer(e.cfg.ReserveWait)
	defer timer.Stop()
	var r reserveReply
	select {
	case r = <-st.reply:
	case <-timer.C:
		// The machine answers every ReserveMsg exactly once (a grant that
		// raced the timer still arrives and is used); once the shell has
		// exited, it has answered already.
		_ = e.post(&DeadlinePassedMsg{ID: msg.ID})
		r = <-st.reply
	}
	if r.err != nil {
		return nil, r.err
	}
	return &Reservation{Pages: r.pages, Events: st.events, e: e, id: msg.ID}, nil
}

// Done ends the transfer: nil means every reserved page holds verified KV
// and the transfer will not touch them again; an error aborts the request,
// frees its pages and ends Events with that error. Later calls do nothing.
// Done is accepted while the engine is closing (Close waits for
// transfers); once the shell has exited, its pages were freed already.
func (r *Reservation) Done(err error) {
	r.once.Do(func() {
		if err == nil {
			_ = r.e.post(&KVVerifiedMsg{ID: r.id})
			return
		}
		_ = r.e.post(&TransferFailedMsg{ID: r.id, Err: err})
	})
}
