package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
)

func TestStatusListsLiveRequestsAndRecordsAbortsWithReason(t *testing.T) {
	e, gate := newGatedEngine(t, 512, 16)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := e.Submit(ctx, Request{ID: "a", Tenant: "alice", Prompt: []int32{1, 2, 3}, MaxTokens: 200, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	<-ch // one token: the request is live and owns pages
	// The engine waits at the gate before its second step, so post the
	// status query first: the loop answers it before the step after.
	stc := make(chan Status, 1)
	if err := e.postMail(mail{status: stc}); err != nil {
		t.Fatal(err)
	}
	gate.Step()
	st := <-stc
	if len(st.Requests) != 1 || st.Requests[0].Tenant != "alice" || st.Requests[0].Owner == 0 || st.Requests[0].Pages == 0 {
		t.Fatalf("live requests: %+v", st.Requests)
	}
	cancel()
	waitCancelPosted(t, e)
	gate.Free()
	if r := collect(ch); !errors.Is(r.err, ErrAborted) {
		t.Fatalf("cancelled request ended with %v", r.err)
	}
	st, err = e.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Requests) != 0 || len(st.Aborts) != 1 || st.Aborts[0].Tenant != "alice" || st.Aborts[0].Reason != "cancelled" {
		t.Fatalf("after cancel: requests %+v aborts %+v", st.Requests, st.Aborts)
	}
}

func TestAbortReasons(t *testing.T) {
	for err, want := range map[error]string{
		fmt.Errorf("%w: %w", ErrInternal, &kvcache.OwnershipError{Reason: kvcache.ViolationStaleEpoch}): "ownership check failure",
		fmt.Errorf("%w: KV transfer: %v", ErrAborted, errors.New("checksum")):                           "rejected handoff",
		ErrShuttingDown: "shutdown",
		ErrAborted:      "cancelled",
		fmt.Errorf("%w: forward pass: boom", ErrInternal): "internal error",
	} {
		if got := abortReason(err); got != want {
			t.Errorf("abortReason(%v) = %q, want %q", err, got, want)
		}
	}
}

func TestAbortLogKeepsTheMostRecent(t *testing.T) {
	e := &Machine{now: time.Now}
	for i := range maxAborts + 5 {
		e.noteEnd(&job{id: uint64(i)}, Event{Err: ErrAborted})
	}
	if n := len(e.aborts.recent); n != maxAborts || e.aborts.recent[0].ID != 5 || e.aborts.recent[n-1].ID != maxAborts+4 {
		t.Fatalf("abort log: %d entries, first %d", n, e.aborts.recent[0].ID)
	}
}
