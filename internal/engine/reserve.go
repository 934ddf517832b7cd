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

// waitingReserve is a Reserve call the pool could not serve yet (loop only).
type waitingReserve struct {
	j     *job
	reply chan reserveReply
}

type reserveReply struct {
	pages []int32
	err   error
}

// Reserve admits req on this (decode) engine and reserves pages for the KV
// of every prompt token but the last. Admission runs first, before any page
// exists (DESIGN I4). When the pool has no room the call waits, in a queue
// served round robin across tenants, until pages free, ctx ends, or
// Config.ReserveWait passes; a full queue or an expired wait returns an
// *OverloadedError (retry elsewhere or later), never an internal error. The
// caller must call Done exactly once on a returned Reservation.
func (e *Engine) Reserve(ctx context.Context, req Request) (*Reservation, error) {
	j, err := e.newJob(req, false)
	if err != nil {
		return nil, err
	}
	if len(req.Prompt) < 2 {
		return nil, fmt.Errorf("%w: a transferred prompt needs at least 2 tokens", ErrInvalidRequest)
	}
	j.transferring = true
	w := &waitingReserve{j: j, reply: make(chan reserveReply, 1)}
	if err := e.enqueueFn(ctx, j, func() { e.reserve(w) }); err != nil {
		return nil, err
	}
	timer := time.NewTimer(e.cfg.ReserveWait)
	defer timer.Stop()
	var r reserveReply
	select {
	case r = <-w.reply:
	case <-timer.C:
		// Withdraw; the loop answers exactly once, so a grant that raced
		// the timer still arrives and is used.
		if e.postAlways(func() { e.withdraw(j.id, e.overloaded("no KV pages freed within %s", e.cfg.ReserveWait)) }) != nil {
			return nil, ErrShuttingDown
		}
		r = <-w.reply
	}
	if r.err != nil {
		j.stop()
		return nil, r.err
	}
	return &Reservation{Pages: r.pages, Events: j.events, e: e, id: j.id}, nil
}

// reserve grants w's pages now, queues it, or refuses it (loop only).
// Waiting requests of the scheduler (preempted decodes) go first: a
// reservation only takes pages nobody already admitted is waiting for.
func (e *Engine) reserve(w *waitingReserve) {
	if e.stopping {
		w.reply <- reserveReply{err: ErrShuttingDown}
		return
	}
	if e.resq.len() == 0 && e.tryReserve(w) {
		return
	}
	if e.resq.len() >= e.cfg.ReserveQueue {
		w.reply <- reserveReply{err: e.overloaded("%d reservations already wait for KV pages", e.resq.len())}
		return
	}
	e.resq.push(w.j.req.Tenant, w)
}

// tryReserve asks the scheduler for w's pages; false means "not now".
func (e *Engine) tryReserve(w *waitingReserve) bool {
	if e.sched.Waiting() > 0 {
		return false
	}
	pages, err := e.sched.SubmitTransfer(w.j.adm)
	if err != nil {
		if e.pool.PagesFor(len(w.j.req.Prompt)-1) > e.pool.Available() {
			return false // out of pages: wait for some to free
		}
		w.reply <- reserveReply{err: fmt.Errorf("engine: reserving pages: %w", err)}
		return true
	}
	e.jobs[w.j.id] = w.j
	w.reply <- reserveReply{pages: pages}
	return true
}

// grantReservations serves waiting reservations, tenant by tenant in
// turn, while pages allow (loop only, after every step and intake).
func (e *Engine) grantReservations() {
	for e.resq.len() > 0 {
		w := e.resq.peek()
		if !e.tryReserve(w) {
			return
		}
		e.resq.pop()
	}
}

// withdraw ends a waiting reservation with err; one already granted is
// left alone (loop only). It reports whether id was waiting.
func (e *Engine) withdraw(id uint64, err error) bool {
	w := e.resq.remove(func(w *waitingReserve) bool { return w.j.id == id })
	if w == nil {
		return false
	}
	w.reply <- reserveReply{err: err}
	return true
}

func (e *Engine) overloaded(format string, args ...any) error {
	return &OverloadedError{Reason: fmt.Sprintf(format, args...), RetryAfter: e.cfg.ReserveWait}
}

// Done ends the transfer: nil means every reserved page holds verified KV
// and the transfer will not touch them again; an error aborts the request,
// frees its pages and ends Events with that error. Later calls do nothing.
// Done is accepted while the engine is closing (Close waits for
// transfers); once the loop has exited, shutdown has freed the pages.
func (r *Reservation) Done(err error) {
	r.once.Do(func() {
		_ = r.e.postAlways(func() { r.e.transferDone(r.id, err) })
	})
}

// transferDone applies a transfer's end to its job (loop only).
func (e *Engine) transferDone(id uint64, err error) {
	j := e.jobs[id]
	if j == nil || !j.transferring {
		return // ended meanwhile (forced at shutdown)
	}
	if e.stopping && err == nil {
		err = ErrShuttingDown // nothing will decode it: free its pages now
	}
	if derr := e.sched.TransferDone(id, err); derr != nil || err != nil {
		if err == nil {
			err = derr
		}
		e.end(id, Event{Err: fmt.Errorf("%w: KV transfer: %w", ErrAborted, err)})
		return
	}
	j.transferring = false
}
