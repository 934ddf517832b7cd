package sched

import (
	"errors"
	"fmt"
	"slices"

	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
)

// Errors callers branch on.
var (
	ErrUnknownRequest = errors.New("sched: unknown request")
	ErrDuplicate      = errors.New("sched: duplicate request id")
	ErrStepInFlight   = errors.New("sched: previous step not completed")
	ErrNoPlan         = errors.New("sched: no step in flight")
	// ErrTransferInFlight refuses to free pages a KV transfer still uses.
	ErrTransferInFlight = errors.New("sched: KV transfer in flight; cancel the transfer")
)

// Config bounds each step.
type Config struct {
	TokenBudget int // tokens per forward step, decodes and prefill chunks together
	MaxRunning  int // sequences holding pages at once
	MaxContext  int // configured maximum context in tokens
}

// Validate reports the first field out of range, by name.
func (c Config) Validate() error {
	switch {
	case c.MaxRunning < 1:
		return fmt.Errorf("sched: MaxRunning %d must be at least 1", c.MaxRunning)
	case c.TokenBudget < c.MaxRunning:
		return fmt.Errorf("sched: TokenBudget %d must be at least MaxRunning %d so every decode fits a step", c.TokenBudget, c.MaxRunning)
	case c.MaxContext < 2:
		return fmt.Errorf("sched: MaxContext %d must be at least 2", c.MaxContext)
	}
	return nil
}

// seq is the scheduler's view of one admitted request.
type seq struct {
	req         Request
	state       State
	pt          *kvcache.PageTable
	tokens      []int32 // prompt then generated tokens
	computed    int     // leading tokens whose KV is committed
	generated   int
	pages       []int32  // reused buffer for the plan's page list
	planned     uint64   // the step that last planned it
	stale       bool     // admitted as an incident.Policy placeholder
	incoming    bool     // decode side of a transfer: KV arrives from prefill
	handoff     *Handoff // prefill side, Transferring: pages leased to the transfer
	cached      int      // prompt tokens the prefix cache supplied on first start
	preemptions int      // times preempted (see victim)
	started     bool     // has entered the running set once
}

// Scheduler is the continuous-batching scheduler over one KV pool.
type Scheduler struct {
	cfg      Config
	pool     *kvcache.Pool
	seqs     map[uint64]*seq
	waiting  fairQueue
	running  []*seq // in order of entry to the running set
	inflight *Plan
	steps    uint64 // steps planned so far

	// Reused every step so that steady decoding allocates nothing: the
	// plan Step returns (valid until the next Step), the running set's
	// snapshot Step iterates, and the updates Complete returns (valid
	// until the next Complete).
	cur   Plan
	order []*seq
	ups   []Update

	prefixQueries, prefixQueryTokens, prefixHitTokens uint64
}

// PrefixStats reports how many prefix-cache lookups the scheduler made, how
// many tokens they looked up and how many of those were cached. A request
// restarted after preemption looks up again, so both token counts grow
// together and hits never exceed queries.
func (s *Scheduler) PrefixStats() (queries, queryTokens, hitTokens uint64) {
	return s.prefixQueries, s.prefixQueryTokens, s.prefixHitTokens
}

// New returns a scheduler over pool. It refuses a pool that cannot hold one
// request of the maximum context (DESIGN I3).
func New(cfg Config, pool *kvcache.Pool) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := CheckCapacity(pool.Tokens(), cfg.MaxContext); err != nil {
		return nil, err
	}
	return &Scheduler{cfg: cfg, pool: pool, seqs: map[uint64]*seq{}}, nil
}

// Limits are the admission limits this scheduler enforces.
func (s *Scheduler) Limits() Limits {
	return Limits{MaxContext: s.cfg.MaxContext, PoolTokens: s.pool.Tokens()}
}

// Submit queues an admitted request. It checks the limits again, since the
// request may have been admitted elsewhere (a gateway) against others.
func (s *Scheduler) Submit(a *Admitted) error {
	if a == nil || a.state != StateAdmitted || a.spent {
		return fmt.Errorf("sched: submit of a request not freshly admitted: %w", ErrBadRequest)
	}
	r := a.req
	if _, err := Admit(r, s.Limits()); err != nil {
		return err
	}
	if _, ok := s.seqs[r.ID]; ok {
		return fmt.Errorf("sched: request %d: %w", r.ID, ErrDuplicate)
	}
	q := &seq{req: r, state: StateAdmitted, pt: s.pool.NewTable(), tokens: slices.Clone(r.Prompt), stale: a.stale}
	a.spent = true
	s.seqs[r.ID] = q
	s.waiting.push(q, false)
	return nil
}

// Cancel aborts a live request and frees its pages at once.
func (s *Scheduler) Cancel(id uint64) error {
	q, ok := s.seqs[id]
	if !ok {
		return fmt.Errorf("sched: cancel %d: %w", id, ErrUnknownRequest)
	}
	if q.state == StateTransferring {
		// A transfer still reads (prefill) or writes (decode) its pages: the
		// caller cancels the transfer, whose end calls HandoffDone or
		// TransferDone, which free them.
		return fmt.Errorf("sched: cancel %d: %w", id, ErrTransferInFlight)
	}
	return s.abort(q)
}

// State reports a request's state while the scheduler still tracks it.
// Requests leave once they reach a terminal state.
func (s *Scheduler) State(id uint64) (State, bool) {
	q, ok := s.seqs[id]
	if !ok {
		return 0, false
	}
	return q.state, true
}

// Running and Waiting count the sequences in each set.
func (s *Scheduler) Running() int { return len(s.running) }

// Waiting counts the sequences waiting to (re)enter the running set.
func (s *Scheduler) Waiting() int { return s.waiting.len() }

// transition applies ev to q through the one transition function.
func (q *seq) transition(ev Event) error {
	next, err := Transition(q.state, ev)
	if err != nil {
		return fmt.Errorf("sched: request %d: %w", q.req.ID, err)
	}
	q.state = next
	return nil
}

// abort moves q to Aborted, frees its pages and forgets it.
func (s *Scheduler) abort(q *seq) error {
	if err := q.transition(EvAbort); err != nil {
		return err
	}
	s.retire(q)
	return nil
}

// retire frees a terminal q's pages and removes it from every set. A q
// whose pages are pinned for a transfer (PinHandoff) stays tracked, so that
// HandoffDone can release the leases once the transfer has let go.
func (s *Scheduler) retire(q *seq) {
	s.pool.Free(q.pt)
	if i := slices.Index(s.running, q); i >= 0 {
		s.running = slices.Delete(s.running, i, i+1)
	} else {
		s.waiting.remove(q)
	}
	if q.handoff == nil {
		delete(s.seqs, q.req.ID)
	}
}

// preempt frees q's pages and sends it back to the front of its tenant's
// queue; it will recompute its tokens (prompt and output so far) later.
func (s *Scheduler) preempt(q *seq) error {
	if err := q.transition(EvPreempt); err != nil {
		return err
	}
	s.pool.Free(q.pt)
	q.computed = 0
	q.preemptions++
	s.running = slices.DeleteFunc(s.running, func(x *seq) bool { return x == q })
	s.waiting.push(q, true)
	return nil
}

// Preempt takes a running request's pages back and requeues it, as the
// scheduler does itself when pages run out. Not allowed mid-step.
func (s *Scheduler) Preempt(id uint64) error {
	if s.inflight != nil {
		return ErrStepInFlight
	}
	q, ok := s.seqs[id]
	if !ok {
		return fmt.Errorf("sched: preempt %d: %w", id, ErrUnknownRequest)
	}
	if !slices.Contains(s.running, q) {
		return fmt.Errorf("sched: preempt %d in state %s: not running: %w", id, q.state, ErrIllegalTransition)
	}
	return s.preempt(q)
}

// Tracked counts the requests the scheduler still holds pages or leases
// for, transfers in flight included.
func (s *Scheduler) Tracked() int { return len(s.seqs) }

// Drop ends every tracked request, transfers in flight included: leases
// are released and pages freed. The engine calls it at close, once
// transfers had their grace; nothing may use the pages afterwards.
func (s *Scheduler) Drop() {
	for id, q := range s.seqs {
		if q.handoff != nil {
			for _, l := range q.handoff.leases {
				_ = s.pool.Release(l)
			}
			q.handoff = nil
		}
		_ = q.transition(EvAbort)
		s.retire(q)
		delete(s.seqs, id)
	}
	s.inflight = nil
}
