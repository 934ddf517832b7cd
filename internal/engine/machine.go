package engine

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
	"github.com/bulkhead-llm/bulkhead/internal/sample"
	"github.com/bulkhead-llm/bulkhead/internal/sched"
)

// Machine is the engine's core: a single-threaded state machine that owns
// every request's lifecycle and bookkeeping (its jobs, the reservation
// queue, the scheduler and through it the pool's pages, leases and
// refcounts) as plain data. Its only inputs are messages (Step); its only
// outputs are Ready values, which the caller acknowledges with Advance.
// It runs no goroutine, no model and no I/O: the Engine's loop (loop.go)
// is its shell, and tests drive it directly (transcript_test.go, testdata/*.txt).
// It is not safe for concurrent use.
type Machine struct {
	cfg     Config
	pool    *kvcache.Pool
	sched   *sched.Scheduler
	layered bool             // the forwarder reports layers: pin handoffs ahead
	now     func() time.Time // for the abort log only

	jobs        map[uint64]*job
	resq        fairQueue // reservations waiting for pages
	closing     bool      // CloseMsg stepped
	preemptions uint64
	aborts      abortLog

	inflight *sched.Plan // the batch handed out, until its StepResultMsg
	rd       Ready       // outputs since the last Advance
	batch    Batch
	sampled  []int32
	pending  map[uint64]Event // sampled tokens with logprobs, awaiting Complete
}

// job is one request as the machine sees it; only the machine reads or
// writes it.
type job struct {
	id      uint64
	req     Request
	adm     *sched.Admitted
	sampler *sample.Sampler
	stopSet []int32
	n       int // tokens emitted
	// transferring: decode side, KV still arriving; only the transfer's
	// end (KVVerifiedMsg, TransferFailedMsg) or GraceOverMsg ends the job.
	transferring bool
	// pinned: prefill side, handoff delivered before its last chunk ran.
	pinned bool
	// prompt collects a PromptLogprobs request's prompt scores until its
	// first token carries them.
	prompt []PromptLogprob
}

// NewMachine builds a machine over pool. layered says the forwarder
// reports each finished layer (model.Model.ForwardLayers), so prefill
// handoffs are delivered before their last chunk runs. It fails, naming
// both numbers, when the pool cannot hold one request of the maximum
// context (DESIGN I3).
func NewMachine(cfg Config, pool *kvcache.Pool, layered bool) (*Machine, error) {
	cfg.defaults()
	if cfg.VocabSize < 1 {
		return nil, fmt.Errorf("engine: VocabSize %d must be positive", cfg.VocabSize)
	}
	s, err := sched.New(sched.Config{TokenBudget: cfg.TokenBudget, MaxRunning: cfg.MaxRunning, MaxContext: cfg.MaxContext}, pool)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	return &Machine{cfg: cfg, pool: pool, sched: s, layered: layered, now: time.Now,
		jobs: map[uint64]*job{}, pending: map[uint64]Event{}}, nil
}

// admission returns the admission checks for this machine's limits; they
// read only immutable configuration and are safe for concurrent use.
func (m *Machine) admission() admission {
	return admission{cfg: m.cfg, limits: m.sched.Limits()}
}

// Step applies one message through its transition function.
func (m *Machine) Step(msg Msg) {
	switch msg := msg.(type) {
	case *SubmitMsg:
		m.submit(msg)
	case *ReserveMsg:
		m.reserve(msg)
	case *CancelMsg:
		m.cancel(msg.ID)
	case *KVVerifiedMsg:
		m.transferDone(msg.ID, nil)
	case *TransferFailedMsg:
		m.transferDone(msg.ID, msg.Err)
	case *HandoffReleasedMsg:
		m.handoffReleased(msg.ID, msg.Err)
	case *DeadlinePassedMsg:
		m.withdraw(msg.ID, m.overloaded("no KV pages freed within %s", m.cfg.ReserveWait))
	case *CloseMsg:
		m.close()
	case *GraceOverMsg:
		m.graceOver()
	case *StepResultMsg:
		m.stepResult(msg)
	default:
		panic(fmt.Sprintf("engine: unknown message %T", msg))
	}
}

// Ready returns what the shell must do now. Unless a batch is in flight or
// the machine is closing, it first grants waiting reservations the pool can
// now serve and plans the next batch. While a batch is out (handed to the
// shell, its StepResultMsg not stepped yet) nothing new is planned.
func (m *Machine) Ready() Ready {
	if !m.closing && m.inflight == nil {
		m.grantReservations()
		m.plan()
	}
	return m.rd
}

// Advance acknowledges the last Ready: its events and replies were
// delivered and its batch, if any, is running. The batch's buffers stay
// valid until its StepResultMsg.
func (m *Machine) Advance() {
	clear(m.rd.Events) // drop references to delivered events
	m.rd.Events = m.rd.Events[:0]
	clear(m.rd.Replies)
	m.rd.Replies = m.rd.Replies[:0]
	m.rd.Batch = nil
}

// Tracked counts the requests still holding pages or leases, transfers in
// flight included; Close waits for it to reach zero (or the grace).
func (m *Machine) Tracked() int { return m.sched.Tracked() }

// submit queues a request (transition of SubmitMsg).
func (m *Machine) submit(msg *SubmitMsg) {
	j := newJob(msg)
	m.jobs[j.id] = j
	if m.closing {
		m.end(j.id, Event{Err: ErrShuttingDown})
		return
	}
	if err := m.sched.Submit(j.adm); err != nil {
		m.end(j.id, Event{Err: fmt.Errorf("%w: %v", ErrInvalidRequest, err)})
	}
}

func newJob(msg *SubmitMsg) *job {
	return &job{id: msg.ID, req: msg.Req, adm: msg.Adm, sampler: msg.Sampler, stopSet: msg.StopSet}
}

// cancel ends a request whose context ended (transition of CancelMsg). A
// transferring request is ended by its transfer, which sees the same
// context and reports through KVVerifiedMsg or TransferFailedMsg.
func (m *Machine) cancel(id uint64) {
	if m.withdraw(id, ErrAborted) {
		return // a reservation still waiting for pages
	}
	if j, live := m.jobs[id]; live && !j.transferring {
		_ = m.sched.Cancel(id)
		m.end(id, Event{Err: ErrAborted})
	}
}

// close starts shutting down (transition of CloseMsg).
func (m *Machine) close() {
	if m.closing {
		return
	}
	m.closing = true
	for w := m.resq.peek(); w != nil; w = m.resq.peek() {
		m.resq.pop()
		m.reply(w.id, nil, ErrShuttingDown)
	}
	for _, id := range slices.Sorted(maps.Keys(m.jobs)) {
		if !m.jobs[id].transferring {
			_ = m.sched.Cancel(id)
			m.end(id, Event{Err: ErrShuttingDown})
		}
	}
}

// graceOver frees everything Close left (transition of GraceOverMsg):
// leases are released and pages freed even if a transfer still holds them,
// so the pool drains (DESIGN I7) whatever the callers do.
func (m *Machine) graceOver() {
	m.close()
	m.sched.Drop()
	m.inflight = nil
	for _, id := range slices.Sorted(maps.Keys(m.jobs)) {
		m.end(id, Event{Err: ErrShuttingDown})
	}
}

// end sends j's final event and forgets j.
func (m *Machine) end(id uint64, final Event) {
	j := m.jobs[id]
	if j == nil {
		return
	}
	delete(m.jobs, id)
	m.noteEnd(j, final)
	m.rd.Events = append(m.rd.Events, Delivery{ID: id, Event: final, Final: true})
}

// emit sends a non-final event to j's stream.
func (m *Machine) emit(id uint64, ev Event) {
	m.rd.Events = append(m.rd.Events, Delivery{ID: id, Event: ev})
}

func (m *Machine) reply(id uint64, pages []int32, err error) {
	m.rd.Replies = append(m.rd.Replies, Reply{ID: id, Pages: pages, Err: err})
}

// failAll aborts every request; used when the scheduler itself reports an
// inconsistency, so that nothing keeps running on doubtful state.
func (m *Machine) failAll(err error) {
	for _, id := range slices.Sorted(maps.Keys(m.jobs)) {
		_ = m.sched.Cancel(id)
		m.end(id, Event{Err: err})
	}
}

// Stats is the machine's counters and pool figures now.
func (m *Machine) Stats() Stats {
	st := Stats{
		Running: m.sched.Running(), Waiting: m.sched.Waiting(), ReservationsWaiting: m.resq.len(),
		PagesTotal: m.pool.UsablePages(), PagesFree: m.pool.FreePages(),
		OwnershipFailures: m.pool.OwnershipFailures(), Preemptions: m.preemptions,
	}
	st.PrefixQueries, st.PrefixQueryTokens, st.PrefixHitTokens = m.sched.PrefixStats()
	st.PagesCached = m.pool.CachedPages()
	return st
}

// Closing reports whether CloseMsg was stepped.
func (m *Machine) Closing() bool { return m.closing }
