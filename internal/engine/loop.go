package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/model"
	"github.com/bulkhead-llm/bulkhead/internal/sample"
	"github.com/bulkhead-llm/bulkhead/internal/sched"
)

// loop is the step loop: take in submissions and cancellations, plan a step,
// run the model, sample, and deliver events. It is the only goroutine that
// touches the scheduler and the model.
func (e *Engine) loop() {
	defer close(e.done)
	var (
		seqs    []model.Seq
		sampled []int32
		pending = map[uint64]Event{} // sampled tokens with logprobs, awaiting Complete
	)
	for {
		if closing := e.intake(); closing {
			e.shutdown()
			return
		}
		e.grantReservations()
		if e.sched.Running()+e.sched.Waiting() == 0 {
			e.refreshStats()
			<-e.wake
			continue
		}
		plan, err := e.sched.Step()
		if err != nil {
			e.failAll(fmt.Errorf("%w: scheduler: %v", ErrInternal, err))
			continue
		}
		e.preemptions += uint64(len(plan.Evicted))
		for _, a := range plan.Aborted {
			e.end(a.ID, Event{Err: fmt.Errorf("%w: %v", ErrInternal, a.Err)})
		}
		for _, u := range plan.Handoffs {
			e.deliver(u, Event{})
		}
		seqs = seqs[:0]
		for _, it := range plan.Items {
			seqs = append(seqs, model.Seq{Tokens: it.Tokens, Pos: it.Pos, Pages: it.Pages})
		}
		sampled = slices.Grow(sampled[:0], len(plan.Items))[:len(plan.Items)]
		if len(seqs) > 0 {
			pinned := e.pinHandoffs(plan)
			logits, err := e.forward(seqs, pinned)
			if err != nil {
				for _, it := range plan.Items {
					_ = e.sched.Cancel(it.ID)
					e.end(it.ID, Event{Err: fmt.Errorf("%w: forward pass: %v", ErrInternal, err)})
				}
			} else {
				for i, it := range plan.Items {
					sampled[i] = 0
					j := e.jobs[it.ID]
					if !it.Sample || j == nil {
						continue
					}
					ev := e.sampleToken(j, logits[i])
					sampled[i] = ev.Token
					pending[it.ID] = ev
				}
			}
		}
		updates, err := e.sched.Complete(sampled)
		if err != nil {
			e.failAll(fmt.Errorf("%w: scheduler: %v", ErrInternal, err))
			continue
		}
		for _, u := range updates {
			ev := pending[u.ID]
			delete(pending, u.ID)
			e.deliver(u, ev)
		}
		clear(pending)
		if len(plan.Items) == 0 && len(plan.Aborted) == 0 && len(plan.Handoffs) == 0 {
			// Nothing could run (every waiting request needs pages that are
			// not there yet); wait for a submission, a cancel or a close.
			e.refreshStats()
			<-e.wake
			continue
		}
		e.refreshStats()
	}
}

// sampleToken draws j's next token from logits and its log-probabilities.
func (e *Engine) sampleToken(j *job, logits []float32) Event {
	tok := j.sampler.Sample(logits)
	ev := Event{Token: tok}
	if j.req.Logprobs {
		ev.Logprob = float32(sample.LogSoftmax(logits, tok))
		if j.req.TopLogprobs > 0 {
			for _, c := range sample.TopLogprobs(logits, j.req.TopLogprobs) {
				ev.TopLogprobs = append(ev.TopLogprobs, TokenLogprob{Token: c.ID, Logprob: float32(c.Logprob)})
			}
		}
	}
	return ev
}

// deliver turns a scheduler update into events.
func (e *Engine) deliver(u sched.Update, ev Event) {
	j := e.jobs[u.ID]
	if j == nil {
		return
	}
	if u.Err != nil {
		e.end(u.ID, Event{Err: fmt.Errorf("%w: %v", ErrInternal, u.Err)})
		return
	}
	if u.Handoff != nil {
		e.handOff(u.ID, u.Handoff)
		return
	}
	if u.HasToken {
		ev.Token = u.Token
		j.n++
		j.events <- ev
	}
	if u.State == sched.StateFinished {
		reason := FinishLength
		if u.HasToken && slices.Contains(j.stopSet, u.Token) {
			reason = FinishStop
		}
		e.end(u.ID, Event{Finish: &Finish{Reason: reason, Usage: Usage{PromptTokens: len(j.req.Prompt), CompletionTokens: j.n, CachedTokens: u.Cached}}})
	}
}

// end sends j's final event, closes its stream and forgets it. A pinned
// handoff's layer channel closes too: a transfer still waiting for layers
// then fails as incomplete.
func (e *Engine) end(id uint64, final Event) {
	j := e.jobs[id]
	if j == nil {
		return
	}
	delete(e.jobs, id)
	e.noteEnd(j, final)
	j.stop()
	if j.ready != nil {
		close(j.ready)
	}
	j.events <- final
	close(j.events)
}

// intake runs what Submit and the transfer paths posted, then applies
// cancellations. It reports whether the engine is closing.
func (e *Engine) intake() bool {
	e.mu.Lock()
	inbox, cancels, closing := e.inbox, e.cancels, e.closed
	e.inbox, e.cancels = nil, nil
	e.mu.Unlock()
	for _, fn := range inbox {
		fn()
	}
	for _, id := range cancels {
		if e.withdraw(id, ErrAborted) {
			continue // a reservation still waiting for pages
		}
		if j, live := e.jobs[id]; live && !j.transferring {
			// A transferring job is ended by its transfer, which sees the
			// same context and reports through Reservation.Done.
			_ = e.sched.Cancel(id)
			e.end(id, Event{Err: ErrAborted})
		}
	}
	return closing
}

// failAll aborts every request; used when the scheduler itself reports an
// inconsistency, so that nothing keeps running on doubtful state.
func (e *Engine) failAll(err error) {
	for id := range e.jobs {
		_ = e.sched.Cancel(id)
		e.end(id, Event{Err: err})
	}
}

// shutdown ends every request. Waiting reservations and running requests
// end at once; transfers in flight get CloseGrace to report (Done and
// Release stay accepted), then every page left is freed, leases included,
// so the pool drains (DESIGN I7) whatever the callers do.
func (e *Engine) shutdown() {
	e.stopping = true
	for w := e.resq.peek(); w != nil; w = e.resq.peek() {
		e.resq.pop()
		w.reply <- reserveReply{err: ErrShuttingDown}
	}
	for id, j := range e.jobs {
		if !j.transferring {
			_ = e.sched.Cancel(id)
			e.end(id, Event{Err: ErrShuttingDown})
		}
	}
	grace := time.NewTimer(e.cfg.CloseGrace)
	defer grace.Stop()
	for waiting := true; waiting && e.sched.Tracked() > 0; {
		select {
		case <-e.wake:
			e.runInbox()
		case <-grace.C:
			waiting = false
		}
	}
	e.sched.Drop()
	for id := range e.jobs {
		e.end(id, Event{Err: ErrShuttingDown})
	}
	e.mu.Lock()
	e.exited = true
	e.mu.Unlock()
	e.runInbox() // posted before exit: each answers its caller
	e.refreshStats()
}

// runInbox runs what was posted, during shutdown (cancels no longer matter).
func (e *Engine) runInbox() {
	e.mu.Lock()
	inbox := e.inbox
	e.inbox, e.cancels = nil, nil
	e.mu.Unlock()
	for _, fn := range inbox {
		fn()
	}
}

// refreshStats publishes a snapshot for Stats.
func (e *Engine) refreshStats() {
	st := Stats{
		Running: e.sched.Running(), Waiting: e.sched.Waiting(), ReservationsWaiting: e.resq.len(),
		PagesTotal: e.pool.UsablePages(), PagesFree: e.pool.FreePages(),
		OwnershipFailures: e.pool.OwnershipFailures(), Preemptions: e.preemptions,
	}
	st.PrefixQueries, st.PrefixHitTokens = e.sched.PrefixStats()
	st.PagesCached = e.pool.CachedPages()
	e.mu.Lock()
	e.stats = st
	e.mu.Unlock()
}
