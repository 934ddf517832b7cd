package sched

import (
	"fmt"
	"github.com/bulkhead-llm/bulkhead/internal/incident"
	"slices"
)

// Complete records the step in flight as done. sampled[i] is the token
// sampled for plan.Items[i] (ignored for items without Sample). Committed
// positions become readable, full pages enter the prefix cache, sampled
// tokens are appended, and finished requests leave, their pages freed. Items
// of requests cancelled meanwhile are skipped. The updates returned are
// valid until the next Complete (the scheduler reuses the slice).
func (s *Scheduler) Complete(sampled []int32) ([]Update, error) {
	plan := s.inflight
	if plan == nil {
		return nil, ErrNoPlan
	}
	if len(sampled) != len(plan.Items) {
		return nil, fmt.Errorf("sched: %d sampled tokens for %d plan items", len(sampled), len(plan.Items))
	}
	s.inflight = nil
	clear(s.ups)
	ups := s.ups[:0]
	defer func() { s.ups = ups }()
	for i, it := range plan.Items {
		q := plan.seqs[i]
		if !q.state.Live() || s.seqs[it.ID] != q || q.computed != it.Pos {
			continue // cancelled (or preempted) since planning
		}
		if err := s.pool.Commit(q.pt, it.Pos, len(it.Tokens)); err != nil {
			if aerr := s.abort(q); aerr != nil {
				return ups, aerr
			}
			ups = append(ups, Update{ID: q.req.ID, State: StateAborted, Err: err})
			continue
		}
		q.computed += len(it.Tokens)
		if !incident.Active().SkipPrefixCache() {
			s.pool.Cache(q.pt, q.req.Salt, q.tokens[:q.computed])
		}
		if q.req.PrefillOnly && q.computed == q.target() {
			h, err := s.handOff(q)
			if err != nil {
				return ups, err
			}
			ups = append(ups, Update{ID: q.req.ID, State: q.state, Handoff: h, Cached: q.cached})
			continue
		}
		if !it.Sample {
			continue
		}
		u, err := s.accept(q, sampled[i])
		if err != nil {
			return ups, err
		}
		ups = append(ups, u)
	}
	return ups, nil
}

// accept appends a sampled token to q and finishes q when a stop condition
// holds: a stop token, MaxTokens generated, or the context full.
func (s *Scheduler) accept(q *seq, tok int32) (Update, error) {
	if q.state == StatePrefilling {
		if err := q.transition(EvPrefillDone); err != nil {
			return Update{}, err
		}
	}
	q.tokens = append(q.tokens, tok)
	q.generated++
	if slices.Contains(q.req.Stop, tok) || q.generated >= q.req.MaxTokens || len(q.tokens) >= s.cfg.MaxContext {
		if err := q.transition(EvFinish); err != nil {
			return Update{}, err
		}
		s.retire(q)
	}
	return Update{ID: q.req.ID, Token: tok, HasToken: true, State: q.state, Cached: q.cached}, nil
}
