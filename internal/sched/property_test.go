package sched

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// schedModel drives random submits, steps, cancels and preemptions against
// a small pool and checks I1, I2 and I7 after every operation.
type schedModel struct {
	r       *run
	reqs    map[uint64]Request
	next    uint64
	maxCtx  int
	checked int // completed requests verified
}

func (m *schedModel) Submit(t *rapid.T) {
	m.next++
	tenant := rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "tenant")
	n := rapid.IntRange(1, m.maxCtx-1).Draw(t, "len")
	req := Request{
		ID: m.next, Tenant: tenant, Salt: tenant,
		Prompt:    rapid.SliceOfN(rapid.Int32Range(1, 2), n, n).Draw(t, "prompt"), // prefixes repeat
		MaxTokens: rapid.IntRange(1, 8).Draw(t, "max"),
		Stop:      []int32{int32(rapid.IntRange(1, vocab).Draw(t, "stop"))},
	}
	m.reqs[req.ID] = req
	m.r.submit(t, req)
}

func (m *schedModel) Step(t *rapid.T) { m.r.step(t) }

func (m *schedModel) tracked(t *rapid.T) uint64 {
	ids := make([]uint64, 0, len(m.r.s.seqs))
	for id := range m.r.s.seqs {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		t.Skip("nothing tracked")
	}
	slices.Sort(ids)
	return rapid.SampledFrom(ids).Draw(t, "id")
}

func (m *schedModel) Cancel(t *rapid.T) {
	id := m.tracked(t)
	if err := m.r.s.Cancel(id); err != nil {
		t.Fatal(err)
	}
	m.r.final[id] = StateAborted
}

func (m *schedModel) Preempt(t *rapid.T) {
	id := m.tracked(t)
	if st, _ := m.r.s.State(id); st != StatePrefilling && st != StateDecoding {
		t.Skip("not running")
	}
	if err := m.r.s.Preempt(id); err != nil {
		t.Fatal(err)
	}
}

func (m *schedModel) Check(t *rapid.T) {
	s, pool := m.r.s, m.r.pool
	// I1: the scheduler tracks exactly the live requests, each in its set.
	if s.Running()+s.Waiting() != len(s.seqs) {
		t.Fatalf("%d running + %d waiting != %d tracked", s.Running(), s.Waiting(), len(s.seqs))
	}
	for _, q := range s.running {
		if q.state != StatePrefilling && q.state != StateDecoding {
			t.Fatalf("running request %d in state %s", q.req.ID, q.state)
		}
	}
	for id, q := range s.seqs {
		if !q.state.Live() {
			t.Fatalf("request %d tracked in terminal state %s", id, q.state)
		}
		if !slices.Contains(s.running, q) && (q.pt.Len() != 0 || (q.state != StateAdmitted && q.state != StatePreempted)) {
			t.Fatalf("waiting request %d in state %s holds %d pages", id, q.state, q.pt.Len())
		}
	}
	// Outputs: finished ones equal the reference, others are a prefix of it.
	for id, out := range m.r.out {
		want := reference(m.reqs[id], m.maxCtx)
		if m.r.final[id] == StateFinished && !slices.Equal(out, want) || len(out) > len(want) || !slices.Equal(out, want[:len(out)]) {
			t.Fatalf("request %d (%s) produced %v, reference %v", id, m.r.final[id], out, want)
		}
	}
	// I2: no check failed; a failure would also have aborted a request.
	if f := pool.OwnershipFailures(); f != 0 {
		t.Fatalf("%d ownership check failures", f)
	}
	// I7: pages held by running tables plus available pages are the pool.
	held := map[int32]bool{}
	for _, q := range s.running {
		for i := range q.pt.Len() {
			held[q.pt.Entry(i).Page] = true
		}
	}
	if len(held)+pool.Available() != pool.UsablePages() {
		t.Fatalf("%d pages held + %d available != %d", len(held), pool.Available(), pool.UsablePages())
	}
}

func TestSchedulerKeepsInvariantsUnderRandomInterleavings(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := Config{TokenBudget: rapid.IntRange(3, 10).Draw(t, "budget"), MaxRunning: 3, MaxContext: 16}
		s, pool := newTestScheduler(t, 10, 2, cfg)
		m := &schedModel{r: newRun(s, pool), reqs: map[uint64]Request{}, maxCtx: cfg.MaxContext}
		t.Repeat(rapid.StateMachineActions(m))
		m.r.drain(t, 1000)
		m.Check(t)
		for id, req := range m.reqs {
			if m.r.final[id] != StateAborted && !slices.Equal(m.r.out[id], reference(req, cfg.MaxContext)) {
				t.Fatalf("request %d ended %s with %v, reference %v", id, m.r.final[id], m.r.out[id], reference(req, cfg.MaxContext))
			}
		}
		checkDrained(t, pool)
	})
}
