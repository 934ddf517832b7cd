package sched

import (
	"errors"
	"slices"
	"testing"
)

// copyKV is the transfer, in memory: it copies the KV of positions [0, n)
// from the prefill pool's pages to the decode pool's.
func copyKV(t *testing.T, from, to *run, src, dst []int32, n int) {
	t.Helper()
	ps := from.pool.PageSize()
	for pos := range n {
		k, v := from.pool.PageF32(0, int(src[pos/ps]))
		dk, dv := to.pool.PageF32(0, int(dst[pos/ps]))
		o := (pos % ps) * 2
		copy(dk[o:o+2], k[o:o+2])
		copy(dv[o:o+2], v[o:o+2])
	}
}

func TestDisaggregatedHandoffGivesTheMonolithicResult(t *testing.T) {
	cfg := Config{TokenBudget: 16, MaxRunning: 4, MaxContext: 128}
	ps, pagesP := newTestScheduler(t, 32, 4, cfg)
	ds, pagesD := newTestScheduler(t, 32, 4, cfg)
	pre, dec := newRun(ps, pagesP), newRun(ds, pagesD)
	req := Request{ID: 9, Tenant: "a", Prompt: prompt(3, 37), MaxTokens: 6}

	// Decode reserves pages for the prompt's KV first (all but the last token).
	a, err := Admit(req, ds.Limits())
	if err != nil {
		t.Fatal(err)
	}
	dst, err := ds.SubmitTransfer(a)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := ds.State(9); st != StateTransferring || len(dst) != 9 {
		t.Fatalf("decode: state %s with %d pages, want transferring with 9", st, len(dst))
	}
	if err := ds.Cancel(9); !errors.Is(err, ErrTransferInFlight) {
		t.Fatalf("cancel during transfer: %v, want ErrTransferInFlight", err)
	}

	// Prefill computes 36 positions in chunks and hands them off, sampling nothing.
	pr := req
	pr.PrefillOnly = true
	pre.submit(t, pr)
	var h *Handoff
	for range 10 {
		plan, err := ps.Step()
		if err != nil {
			t.Fatal(err)
		}
		sampled, err := fakeForward(pagesP, plan)
		if err != nil {
			t.Fatal(err)
		}
		ups, err := ps.Complete(sampled)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range ups {
			if u.HasToken {
				t.Fatalf("prefill-only request sampled %d", u.Token)
			}
			if u.Handoff != nil {
				h = u.Handoff
			}
		}
		if h != nil {
			break
		}
	}
	if h == nil || h.Tokens != 36 || len(h.Pages) != 9 {
		t.Fatalf("handoff %+v, want 36 tokens on 9 pages", h)
	}
	if st, _ := ps.State(9); st != StateTransferring || ps.Running() != 0 {
		t.Fatalf("prefill after handoff: %s, %d running", st, ps.Running())
	}
	if pagesP.FreePages() > pagesP.UsablePages()-9 {
		t.Fatal("leased pages went back to the free list during the transfer")
	}
	copyKV(t, pre, dec, h.Pages, dst, h.Tokens)
	if err := ps.HandoffDone(9, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := ps.State(9); ok {
		t.Fatal("prefill side still tracks the request after HandoffDone")
	}
	checkDrained(t, pagesP)

	if err := ds.TransferDone(9, nil); err != nil {
		t.Fatal(err)
	}
	dec.drain(t, 50)
	if got, want := dec.out[9], reference(req, cfg.MaxContext); !slices.Equal(got, want) {
		t.Fatalf("disaggregated output %v, monolithic reference %v", got, want)
	}
	checkDrained(t, pagesD)
}

func TestFailedTransferAbortsAndFreesTheReservation(t *testing.T) {
	s, pool := newTestScheduler(t, 16, 4, Config{TokenBudget: 8, MaxRunning: 2, MaxContext: 64})
	a, err := Admit(Request{ID: 1, Prompt: prompt(1, 20), MaxTokens: 2}, s.Limits())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SubmitTransfer(a); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SubmitTransfer(a); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("second transfer of one admission: %v", err)
	}
	boom := errors.New("checksum mismatch")
	if err := s.TransferDone(1, boom); !errors.Is(err, boom) {
		t.Fatalf("TransferDone: %v", err)
	}
	if _, ok := s.State(1); ok {
		t.Fatal("aborted transfer still tracked")
	}
	checkDrained(t, pool)
	if err := s.TransferDone(1, nil); !errors.Is(err, ErrUnknownRequest) {
		t.Fatalf("TransferDone twice: %v", err)
	}
}

func TestTransferReservationFailsCleanlyWhenPoolIsFull(t *testing.T) {
	s, pool := newTestScheduler(t, 16, 4, Config{TokenBudget: 8, MaxRunning: 2, MaxContext: 64})
	var held [][]int32
	for id := uint64(1); id <= 3; id++ {
		a, _ := Admit(Request{ID: id, Prompt: prompt(int(id), 25), MaxTokens: 1}, s.Limits())
		pages, err := s.SubmitTransfer(a)
		if id == 3 {
			if err == nil {
				t.Fatal("third 6-page reservation fit a 16-page pool")
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, pages)
	}
	for id := uint64(1); id <= 2; id++ {
		if err := s.TransferDone(id, errors.New("cancelled")); err == nil {
			t.Fatal("TransferDone with an error returned nil")
		}
	}
	checkDrained(t, pool)
}

func TestAbortedHandoffReleasesLeases(t *testing.T) {
	s, pool := newTestScheduler(t, 16, 4, Config{TokenBudget: 64, MaxRunning: 2, MaxContext: 64})
	r := newRun(s, pool)
	r.submit(t, Request{ID: 5, Prompt: prompt(5, 13), MaxTokens: 1, PrefillOnly: true})
	r.step(t)
	if st, _ := s.State(5); st != StateTransferring {
		t.Fatalf("state %s after a 12-token prefill in one step", st)
	}
	if err := s.HandoffDone(5, errors.New("decode NACK")); err != nil {
		t.Fatal(err)
	}
	checkDrained(t, pool)
	if _, err := Admit(Request{ID: 6, Prompt: []int32{1}, MaxTokens: 1, PrefillOnly: true}, s.Limits()); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("one-token prefill-only prompt: %v", err)
	}
}

func TestPinnedHandoffLeasesBeforeTheLastChunkRuns(t *testing.T) {
	s, pool := newTestScheduler(t, 16, 4, Config{TokenBudget: 8, MaxRunning: 2, MaxContext: 64})
	r := newRun(s, pool)
	r.submit(t, Request{ID: 3, Prompt: prompt(3, 13), MaxTokens: 1, PrefillOnly: true}) // 12 positions: chunks 8 + 4
	plan, err := s.Step()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PinHandoff(3); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("pin during the first chunk: %v", err)
	}
	sampled, _ := fakeForward(pool, plan)
	if _, err := s.Complete(sampled); err != nil {
		t.Fatal(err)
	}
	plan, _ = s.Step()
	h, err := s.PinHandoff(3)
	if err != nil {
		t.Fatal(err)
	}
	if h.Tokens != 12 || len(h.Pages) != 3 {
		t.Fatalf("pinned %+v", h)
	}
	sampled, _ = fakeForward(pool, plan)
	ups, err := s.Complete(sampled)
	if err != nil || len(ups) != 1 || ups[0].Handoff != h || ups[0].State != StateTransferring {
		t.Fatalf("complete: %+v %v", ups, err)
	}
	if err := s.HandoffDone(3, nil); err != nil {
		t.Fatal(err)
	}
	checkDrained(t, pool)
}

func TestPinnedHandoffOfAnAbortedStepStillReleases(t *testing.T) {
	s, pool := newTestScheduler(t, 16, 4, Config{TokenBudget: 64, MaxRunning: 2, MaxContext: 64})
	r := newRun(s, pool)
	r.submit(t, Request{ID: 4, Prompt: prompt(4, 30), MaxTokens: 1, PrefillOnly: true})
	if _, err := s.Step(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PinHandoff(4); err != nil {
		t.Fatal(err)
	}
	// The forward pass failed: the engine cancels, then completes the step.
	if err := s.Cancel(4); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(make([]int32, 1)); err != nil {
		t.Fatal(err)
	}
	if err := pool.CheckDrained(); err == nil {
		t.Fatal("pinned pages returned to the pool while the transfer may still read them")
	}
	if err := s.HandoffDone(4, errors.New("forward failed")); err != nil {
		t.Fatal(err)
	}
	checkDrained(t, pool)
}
