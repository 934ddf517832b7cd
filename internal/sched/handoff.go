package sched

import (
	"fmt"
	"slices"

	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
)

// Handoff is a prefill worker's finished prompt: the pages holding the KV of
// positions [0, Tokens), pinned by leases until HandoffDone, so they never
// return to the free list while a transfer reads them.
type Handoff struct {
	Tokens int
	Cached int     // of Tokens, how many the prefix cache supplied
	Pages  []int32 // physical pages in logical order
	leases []kvcache.Lease
}

// target is how many of q's tokens must have KV before q samples (or, for a
// prefill-only request, hands off): all of them, or all but the last.
func (q *seq) target() int {
	if q.req.PrefillOnly {
		return len(q.tokens) - 1
	}
	return len(q.tokens)
}

// lease pins the pages holding q's first n positions.
func (s *Scheduler) lease(q *seq, n int) (*Handoff, error) {
	h := &Handoff{Tokens: n, Cached: q.cached}
	for i := range s.pool.PagesFor(n) {
		l, err := s.pool.Lease(q.pt, i)
		if err != nil {
			for _, l := range h.leases {
				_ = s.pool.Release(l)
			}
			return nil, err
		}
		h.leases = append(h.leases, l)
		h.Pages = append(h.Pages, l.Entry.Page)
	}
	return h, nil
}

// PinHandoff leases, ahead of time, the pages of a prefill-only request
// whose last prompt chunk is in the step in flight, so the transfer can
// stream each layer as soon as the forward pass has computed it (the
// caller learns per layer from the model). The request stays Prefilling
// until Complete; whatever happens to it, its leases last until
// HandoffDone, which the caller must call exactly once.
func (s *Scheduler) PinHandoff(id uint64) (*Handoff, error) {
	q, ok := s.seqs[id]
	if !ok || s.inflight == nil {
		return nil, fmt.Errorf("sched: pin handoff %d: %w", id, ErrUnknownRequest)
	}
	i := slices.Index(s.inflight.seqs, q)
	if i < 0 || !q.req.PrefillOnly || q.handoff != nil || s.inflight.Items[i].Pos+len(s.inflight.Items[i].Tokens) != q.target() {
		return nil, fmt.Errorf("sched: pin handoff %d: not a prefill-only request finishing its prompt this step: %w", id, ErrBadRequest)
	}
	h, err := s.lease(q, q.target())
	if err != nil {
		return nil, err
	}
	q.handoff = h
	return h, nil
}

// handOff moves a prefill-only q whose KV is complete to Transferring: its
// pages are leased (unless PinHandoff already did), its table freed (the
// leases keep the pages), and it leaves the running set. It stays tracked
// until HandoffDone.
func (s *Scheduler) handOff(q *seq) (*Handoff, error) {
	h := q.handoff
	if h == nil {
		var err error
		if h, err = s.lease(q, q.computed); err != nil {
			return nil, err
		}
	}
	if err := q.transition(EvTransfer); err != nil {
		return nil, err
	}
	s.pool.Free(q.pt)
	s.running = slices.DeleteFunc(s.running, func(x *seq) bool { return x == q })
	q.handoff = h
	return h, nil
}

// HandoffDone ends a prefill-only request after its transfer returned: the
// leases are released and the request is Finished when decode acknowledged
// (err nil), Aborted otherwise. The caller calls it exactly once per
// Handoff, on every path.
func (s *Scheduler) HandoffDone(id uint64, err error) error {
	q, ok := s.seqs[id]
	if !ok || q.handoff == nil {
		return fmt.Errorf("sched: handoff done for %d: %w", id, ErrUnknownRequest)
	}
	for _, l := range q.handoff.leases {
		if rerr := s.pool.Release(l); rerr != nil {
			return rerr
		}
	}
	q.handoff = nil
	ev := EvFinish
	if err != nil || q.state != StateTransferring {
		ev = EvAbort // failed, or pinned and aborted before its prompt was done
	}
	if terr := q.transition(ev); terr != nil {
		return terr
	}
	delete(s.seqs, id)
	return nil
}

// SubmitTransfer queues a decode worker's admitted request whose prompt KV
// will arrive from a prefill worker: it reserves pages for the KV of every
// prompt token but the last and returns them, verified, for the transfer to
// fill. The request stays Transferring until TransferDone. It fails with
// kvcache.ErrOutOfPages, leaving nothing allocated, when the pool is full.
func (s *Scheduler) SubmitTransfer(a *Admitted) ([]int32, error) {
	if a == nil || a.state != StateAdmitted || a.spent {
		return nil, fmt.Errorf("sched: transfer of a request not freshly admitted: %w", ErrBadRequest)
	}
	r := a.req
	if _, err := Admit(r, s.Limits()); err != nil {
		return nil, err
	}
	if r.PrefillOnly || len(r.Prompt) < 2 {
		return nil, fmt.Errorf("sched: request %d: a transfer needs a decode request of 2 tokens or more: %w", r.ID, ErrBadRequest)
	}
	if _, ok := s.seqs[r.ID]; ok {
		return nil, fmt.Errorf("sched: request %d: %w", r.ID, ErrDuplicate)
	}
	q := &seq{req: r, state: StateAdmitted, pt: s.pool.NewTable(), tokens: slices.Clone(r.Prompt), incoming: true}
	s.growBuffers(q)
	n := len(q.tokens) - 1
	if err := s.pool.Reserve(q.pt, n); err != nil {
		return nil, fmt.Errorf("sched: request %d: %w", r.ID, err)
	}
	pages, err := s.pool.AppendStepPages(nil, q.pt, 0, n)
	if err != nil {
		s.pool.Free(q.pt)
		return nil, err
	}
	if err := q.transition(EvTransfer); err != nil {
		s.pool.Free(q.pt)
		return nil, err
	}
	a.spent = true
	s.seqs[r.ID] = q
	return pages, nil
}

// TransferDone ends a decode-side transfer. With err nil the KV of every
// prompt token but the last is in the pages: they are marked written, and
// the request joins the running set as Decoding, its next step running the
// last prompt token. Otherwise the request is aborted and its pages freed.
// The transfer must no longer write the pages (its sink was dropped or it
// verified complete).
func (s *Scheduler) TransferDone(id uint64, err error) error {
	q, ok := s.seqs[id]
	if !ok || !q.incoming || q.state != StateTransferring {
		return fmt.Errorf("sched: transfer done for %d: %w", id, ErrUnknownRequest)
	}
	if err == nil {
		n := len(q.tokens) - 1
		err = s.pool.Commit(q.pt, 0, n)
		if err == nil {
			q.computed = n
			if err = q.transition(EvPrefillDone); err == nil {
				s.running = append(s.running, q)
				return nil
			}
		}
	}
	if aerr := s.abort(q); aerr != nil {
		return aerr
	}
	return err
}

// handOffCached hands off a waiting prefill-only q whose target is all in
// the prefix cache: it is scheduled and handed off in one go.
func (s *Scheduler) handOffCached(q *seq) (Update, error) {
	if err := q.transition(EvSchedule); err != nil {
		return Update{}, err
	}
	h, err := s.handOff(q)
	if err != nil {
		return Update{}, err
	}
	return Update{ID: q.req.ID, State: q.state, Handoff: h, Cached: q.cached}, nil
}
