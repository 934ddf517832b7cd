package sched

import (
	"errors"
	"fmt"
	"github.com/bulkhead-llm/bulkhead/internal/incident"
	"slices"

	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
)

// Step plans the next forward pass. Decoding sequences go first, one token
// each; running prefills take chunks of what budget remains; then waiting
// sequences enter the running set, tenant by tenant in turn, reusing cached
// prefixes. When pages run out, the most recently started sequence not yet
// planned is preempted. Each planned sequence's pages pass the ownership
// check (DESIGN I2); one that fails is aborted and reported in the plan.
// An empty plan means there is nothing to run.
func (s *Scheduler) Step() (*Plan, error) {
	if s.inflight != nil {
		return nil, ErrStepInFlight
	}
	plan := &s.cur
	plan.reset()
	budget := s.cfg.TokenBudget
	s.steps++
	s.order = append(s.order[:0], s.running...) // plan may preempt from running
	defer clear(s.order)
	for _, decoding := range []bool{true, false} {
		for _, q := range s.order {
			want := StatePrefilling
			if decoding {
				want = StateDecoding
			}
			if budget == 0 || q.planned == s.steps || q.state != want { // preempted meanwhile, or other pass
				continue
			}
			n, err := s.plan(plan, q, budget)
			if err != nil {
				return nil, err
			}
			budget -= n
		}
	}
	for budget > 0 && len(s.running) < s.cfg.MaxRunning && s.waiting.len() > 0 {
		q := s.waiting.peek()
		if err := s.start(q); err != nil {
			return nil, err
		}
		if q.target() == q.computed {
			// Entirely cached (a prefill-only prompt whose first n-1
			// tokens are whole cached pages): nothing to compute, so it
			// hands off now rather than wait for room it does not need.
			s.waiting.pop()
			u, err := s.handOffCached(q)
			if err != nil {
				return nil, err
			}
			plan.Handoffs = append(plan.Handoffs, u)
			continue
		}
		if s.fits(q) == 0 || !s.roomToStart(q) { // no room: leave it at the head of its queue
			s.pool.Free(q.pt)
			q.computed = 0
			break
		}
		s.waiting.pop()
		if err := q.transition(EvSchedule); err != nil {
			return nil, err
		}
		s.running = append(s.running, q)
		n, err := s.plan(plan, q, budget)
		if err != nil {
			return nil, err
		}
		budget -= n
	}
	s.inflight = plan
	return plan, nil
}

// start prepares a waiting q to run: its table takes the cached prefix.
func (s *Scheduler) start(q *seq) error {
	s.growBuffers(q)
	if q.stale { // pretend the prompt's KV is in the pages it is given
		q.computed = len(q.tokens) - 1
		return nil
	}
	if incident.Active().SkipPrefixCache() {
		return nil // freed pages go straight back to the free list
	}
	if q.req.OwnPrefix {
		q.started = true
		return nil
	}
	n, err := s.pool.MatchPrefix(q.pt, q.req.Salt, q.tokens)
	if err != nil {
		return fmt.Errorf("sched: request %d: %w", q.req.ID, err)
	}
	q.computed = n
	if !q.started {
		q.started, q.cached = true, n // a restart after preemption is not a new hit for usage
	}
	s.prefixQueries++
	s.prefixQueryTokens += uint64(len(q.tokens))
	s.prefixHitTokens += uint64(n)
	return nil
}

// growBuffers gives q's tokens, plan page list and page table room for
// the longest q can grow (its MaxTokens or the context), so that decoding
// does not regrow them step by step. It runs when q is about to run, not
// at Submit, so waiting requests hold no such room; after the first time
// it finds the room there.
func (s *Scheduler) growBuffers(q *seq) {
	n := len(q.tokens)
	if !q.req.PrefillOnly {
		n = max(n, min(n+q.req.MaxTokens-q.generated, s.cfg.MaxContext))
	}
	q.tokens = slices.Grow(q.tokens, n-len(q.tokens))
	q.pages = slices.Grow(q.pages[:0], s.pool.PagesFor(n))
	s.pool.GrowTable(q.pt, n)
}

// fits is how many of q's pending tokens the pool's pages can hold now.
func (s *Scheduler) fits(q *seq) int {
	ps := s.pool.PageSize()
	room := (q.pt.Len()+s.pool.Available())*ps - q.computed
	return max(0, min(q.target()-q.computed, room))
}

// plan adds up to budget of q's pending tokens to the plan, preempting
// others (or q itself) when pages run out. It returns the tokens planned.
func (s *Scheduler) plan(plan *Plan, q *seq, budget int) (int, error) {
	n := min(q.target()-q.computed, budget)
	for {
		if f := s.fits(q); f > 0 {
			n = min(n, f)
			break
		}
		victim := s.victim(q)
		if err := s.preempt(victim); err != nil {
			return 0, err
		}
		plan.Evicted = append(plan.Evicted, victim.req.ID)
		if victim == q {
			return 0, nil
		}
	}
	if err := s.pool.Reserve(q.pt, q.computed+n); err != nil {
		return 0, fmt.Errorf("sched: request %d: %w", q.req.ID, err)
	}
	verified, err := s.pool.VerifyStep(q.pages[:0], q.pt, q.computed, n)
	pages := verified.Pages()
	if errors.Is(err, kvcache.ErrOwnership) {
		plan.Aborted = append(plan.Aborted, Abort{ID: q.req.ID, Err: err})
		return 0, s.abort(q)
	} else if err != nil {
		return 0, err
	}
	q.pages = pages
	q.planned = s.steps
	plan.seqs = append(plan.seqs, q)
	plan.Items = append(plan.Items, Item{
		ID:       q.req.ID,
		Tokens:   q.tokens[q.computed : q.computed+n : q.computed+n],
		Pos:      q.computed,
		Pages:    pages,
		Verified: verified,
		Sample:   q.computed+n == len(q.tokens),
	})
	return n, nil
}

// MaxPreemptions is how often a request may be preempted to make room for
// another before it is protected: a protected request is preempted only
// when every candidate is protected, and then only the youngest.
const MaxPreemptions = 2

// victim chooses whose pages q's step takes (q itself means q yields).
// Policy, so that no request thrashes: among running requests not planned
// this step, an unprotected one (fewer than MaxPreemptions preemptions)
// with the fewest preemptions goes first, the latest started on a tie (it
// loses the least work); if every candidate is protected, the youngest of
// them and q yields. The oldest running request is therefore preempted at
// most MaxPreemptions times, always progresses, and (the pool holding one
// maximum-context request, I3) finishes; then the next oldest does.
func (s *Scheduler) victim(q *seq) *seq {
	var best *seq
	youngest := q
	qAge := slices.Index(s.running, q)
	for i := len(s.running) - 1; i >= 0; i-- {
		r := s.running[i]
		if r == q || r.planned == s.steps {
			continue
		}
		if r.preemptions < MaxPreemptions && (best == nil || r.preemptions < best.preemptions) {
			best = r
		}
		if youngest == q && qAge >= 0 && i > qAge {
			youngest = r // started after q
		}
	}
	if best != nil {
		return best
	}
	return youngest
}

// roomToStart is the re-admission half of the anti-thrash policy: with
// others running, a request that was already preempted re-enters only when
// its whole remaining growth (to MaxTokens or the context) fits, plus one
// page of headroom per running request, so it does not come back only to
// be preempted and recompute again. First-time requests and an empty
// running set always pass (the pool holds one maximum-context request, I3,
// so something always progresses).
func (s *Scheduler) roomToStart(q *seq) bool {
	if len(s.running) == 0 || q.preemptions == 0 {
		return true
	}
	remaining := q.req.MaxTokens - q.generated
	tokens := min(len(q.tokens)+remaining, s.cfg.MaxContext)
	need := s.pool.PagesFor(tokens) - q.pt.Len()
	return s.pool.Available()-need >= len(s.running)
}
