package engine

import (
	"fmt"
	"log/slog"

	"github.com/bulkhead-llm/bulkhead/internal/sched"
)

// reserve grants a reservation's pages now, queues it, or refuses it
// (transition of ReserveMsg). Waiting requests of the scheduler (preempted
// decodes) go first: a reservation only takes pages nobody already
// admitted is waiting for.
func (m *Machine) reserve(msg *ReserveMsg) {
	j := newJob(&msg.SubmitMsg)
	j.transferring = true
	if m.closing {
		m.reply(j.id, nil, ErrShuttingDown)
		return
	}
	if m.resq.len() == 0 && m.tryReserve(j) {
		return
	}
	if m.resq.len() >= m.cfg.ReserveQueue {
		m.reply(j.id, nil, m.overloaded("%d reservations already wait for KV pages", m.resq.len()))
		return
	}
	m.resq.push(j.req.Tenant, j)
}

// tryReserve asks the scheduler for j's pages; false means "not now".
func (m *Machine) tryReserve(j *job) bool {
	if m.sched.Waiting() > 0 {
		return false
	}
	pages, err := m.sched.SubmitTransfer(j.adm)
	if err != nil {
		if m.pool.PagesFor(len(j.req.Prompt)-1) > m.pool.Available() {
			return false // out of pages: wait for some to free
		}
		m.reply(j.id, nil, fmt.Errorf("engine: reserving pages: %w", err))
		return true
	}
	m.jobs[j.id] = j
	m.reply(j.id, pages, nil)
	return true
}

// grantReservations serves waiting reservations, tenant by tenant in
// turn, while pages allow (before every plan).
func (m *Machine) grantReservations() {
	for m.resq.len() > 0 {
		if !m.tryReserve(m.resq.peek()) {
			return
		}
		m.resq.pop()
	}
}

// withdraw refuses a waiting reservation with err; one already granted is
// left alone (transition of DeadlinePassedMsg, and of CancelMsg for a
// waiting reservation). It reports whether id was waiting.
func (m *Machine) withdraw(id uint64, err error) bool {
	j := m.resq.remove(func(j *job) bool { return j.id == id })
	if j == nil {
		return false
	}
	m.reply(id, nil, err)
	return true
}

func (m *Machine) overloaded(format string, args ...any) error {
	return &OverloadedError{Reason: fmt.Sprintf(format, args...), RetryAfter: m.cfg.ReserveWait}
}

// transferDone applies a transfer's end to its reservation (transition of
// KVVerifiedMsg with err nil and of TransferFailedMsg): verified KV joins
// the running set as Decoding; a failure aborts and frees the pages.
func (m *Machine) transferDone(id uint64, err error) {
	j := m.jobs[id]
	if j == nil || !j.transferring {
		return // ended meanwhile (forced at shutdown), or not a reservation
	}
	if m.closing && err == nil {
		err = ErrShuttingDown // nothing will decode it: free its pages now
	}
	if derr := m.sched.TransferDone(id, err); derr != nil || err != nil {
		if err == nil {
			err = derr
		}
		m.end(id, Event{Err: fmt.Errorf("%w: KV transfer: %w", ErrAborted, err)})
		return
	}
	j.transferring = false
}

// handoffReleased drops a prefill handoff's leases and frees its pages
// (transition of HandoffReleasedMsg).
func (m *Machine) handoffReleased(id uint64, err error) {
	if derr := m.sched.HandoffDone(id, err); derr != nil {
		slog.Error("engine: releasing a handoff", "err", derr)
	}
}

// handOff delivers a finished prefill's leased pages to its Prefill
// caller and ends the stream. A pinned handoff was delivered before the
// step: its stream just ends (the shell closes the layer channel).
func (m *Machine) handOff(j *job, h *sched.Handoff) {
	if j.pinned {
		m.end(j.id, Event{})
		return
	}
	delete(m.jobs, j.id)
	m.rd.Events = append(m.rd.Events, Delivery{ID: j.id, Event: Event{handoff: h}, Final: true})
}
