package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/model"
)

// steppedForward is a fake model whose every forward pass waits for the
// test to feed it a step, so the test knows which batch is in flight. Its
// logits always pick token 1.
type steppedForward struct{ steps chan struct{} }

func (f *steppedForward) Forward(_ model.KVStore, seqs []model.Seq) ([][]float32, error) {
	<-f.steps
	out := make([][]float32, len(seqs))
	for i := range out {
		out[i] = make([]float32, testVocab)
		out[i][1] = 1
	}
	return out, nil
}

// feed lets n forward passes run.
func (f *steppedForward) feed(n int) {
	for range n {
		f.steps <- struct{}{}
	}
}

// whileFeeding runs fn, letting passes run until it returns: the shell
// steps messages only between passes.
func (f *steppedForward) whileFeeding(fn func()) {
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	for {
		select {
		case <-done:
			return
		case <-time.After(time.Millisecond): // let fn post before the next pass
		}
		select {
		case <-done:
			return
		case f.steps <- struct{}{}:
		}
	}
}

// flood lets every pass run until stop is closed.
func (f *steppedForward) flood(stop <-chan struct{}) {
	for {
		select {
		case f.steps <- struct{}{}:
		case <-stop:
			return
		}
	}
}

// phases holds one request in each phase, with a forward pass in flight:
// decoding, prefilling (prefill side), queued, transferring on the decode
// side (a reservation whose KV never came) and on the prefill side (a
// handoff whose transfer never returned).
type phases struct {
	e                                  *Engine
	f                                  *steppedForward
	decoding, queued                   <-chan Event
	prefilling                         chan error // what its Prefill call returned
	reservation                        *Reservation
	handoff                            *Handoff
	cancelDec, cancelPre, cancelQueued context.CancelFunc
	cancelRes                          context.CancelFunc
	resCtx                             context.Context
}

func setUpPhases(t *testing.T) *phases {
	t.Helper()
	f := &steppedForward{steps: make(chan struct{})}
	e, err := New(Config{MaxContext: 256, VocabSize: testVocab, TokenBudget: 4, MaxRunning: 2, CloseGrace: 50 * time.Millisecond},
		f, newPool(t, tiny(t), 1024, 16))
	if err != nil {
		t.Fatal(err)
	}
	p := &phases{e: e, f: f, prefilling: make(chan error, 1)}
	var ctx context.Context

	ctx, p.cancelDec = context.WithCancel(context.Background())
	if p.decoding, err = e.Submit(ctx, Request{Prompt: []int32{1, 2, 3}, MaxTokens: 250}); err != nil {
		t.Fatal(err)
	}
	f.feed(1)
	if ev := <-p.decoding; ev.Err != nil || ev.Finish != nil {
		t.Fatalf("first token: %+v", ev)
	}

	p.resCtx, p.cancelRes = context.WithCancel(context.Background())
	f.whileFeeding(func() { p.reservation, err = e.Reserve(p.resCtx, Request{Prompt: randPromptN(40), MaxTokens: 4}) })
	if err != nil {
		t.Fatal(err)
	}
	f.whileFeeding(func() {
		p.handoff, err = e.Prefill(context.Background(), Request{Prompt: randPromptN(17), MaxTokens: 1})
	})
	if err != nil {
		t.Fatal(err)
	}

	ctx, p.cancelPre = context.WithCancel(context.Background())
	go func(ctx context.Context) {
		_, err := e.Prefill(ctx, Request{Prompt: randPromptN(240)[1:], MaxTokens: 1}) // no cached prefix
		p.prefilling <- err
	}(ctx)
	waitPhase(t, p, func(st Status) bool { return phaseOf(st, "prefilling") == 1 })

	ctx, p.cancelQueued = context.WithCancel(context.Background())
	if p.queued, err = e.Submit(ctx, Request{Prompt: randPromptN(30), MaxTokens: 4}); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, p, func(st Status) bool {
		return phaseOf(st, "admitted") == 1 && phaseOf(st, "decoding") == 1 && phaseOf(st, "prefilling") == 1 &&
			phaseOf(st, "transferring") == 2
	})
	return p
}

func randPromptN(n int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(2 + i%(testVocab-2))
	}
	return p
}

func phaseOf(st Status, phase string) int {
	n := 0
	for _, r := range st.Requests {
		if r.Phase == phase {
			n++
		}
	}
	return n
}

// waitPhase polls Status, letting one pass run per poll: Status is answered
// between steps.
func waitPhase(t *testing.T, p *phases, cond func(Status) bool) {
	t.Helper()
	for range 20 {
		ch := make(chan Status, 1)
		go func() {
			st, err := p.e.Status(context.Background())
			if err != nil {
				t.Error(err)
			}
			ch <- st
		}()
		var st Status
		p.f.whileFeeding(func() { st = <-ch }) // the shell may be in a pass
		if cond(st) {
			return
		}
	}
	t.Fatal("the requests never reached their phases")
}

// endsWithError drains ch and returns its final error (nil if it finished).
func endsWithError(t *testing.T, name string, ch <-chan Event) error {
	t.Helper()
	var last Event
	timeout := time.After(10 * time.Second)
	for open := true; open; {
		select {
		case ev, ok := <-ch:
			if ok {
				last = ev
			}
			open = ok
		case <-timeout:
			t.Errorf("%s: stream not closed within 10s", name)
			return nil
		}
	}
	if last.Err == nil {
		t.Errorf("%s: stream ended without an error (finish %+v)", name, last.Finish)
	}
	return last.Err
}

// TestCloseInEveryPhase: Close with a forward pass in flight and a request
// in each phase, two transfers never reporting: no panic, every stream ends
// with an error, the pool drains.
func TestCloseInEveryPhase(t *testing.T) {
	p := setUpPhases(t)
	closed := make(chan struct{})
	go func() { p.e.Close(); close(closed) }()
	waitUntil(t, func() bool { return !p.e.Ready() }) // CloseMsg posted, the pass still in flight
	stop := make(chan struct{})
	defer close(stop)
	go p.f.flood(stop)
	<-closed
	for name, ch := range map[string]<-chan Event{"decoding": p.decoding, "queued": p.queued, "transferring (decode)": p.reservation.Events} {
		if err := endsWithError(t, name, ch); err != nil && !errors.Is(err, ErrShuttingDown) {
			t.Errorf("%s: %v, want ErrShuttingDown", name, err)
		}
	}
	if err := <-p.prefilling; !errors.Is(err, ErrShuttingDown) {
		t.Errorf("prefilling: Prefill returned %v", err)
	}
	p.reservation.Done(nil) // after close: nothing, no panic
	p.handoff.Release(nil)
	if err := p.e.Pool().CheckDrained(); err != nil {
		t.Fatal(err)
	}
}

// TestCancelInEveryPhase: every request's context ends with a forward pass
// in flight; the transfers see it and report, as the workers' do. Every
// stream ends with ErrAborted and the pool drains.
func TestCancelInEveryPhase(t *testing.T) {
	p := setUpPhases(t)
	stop := make(chan struct{})
	defer close(stop)
	p.cancelDec()
	p.cancelPre()
	p.cancelQueued()
	p.cancelRes()
	p.reservation.Done(p.resCtx.Err())
	p.handoff.Release(context.Canceled)
	// The context callbacks post on their own goroutines: let every
	// message in before the pass in flight ends, so no request moves on.
	waitUntil(t, func() bool {
		p.e.mu.Lock()
		defer p.e.mu.Unlock()
		return len(p.e.mailbox) == 6
	})
	go p.f.flood(stop)
	for name, ch := range map[string]<-chan Event{"decoding": p.decoding, "queued": p.queued, "transferring (decode)": p.reservation.Events} {
		if err := endsWithError(t, name, ch); !errors.Is(err, ErrAborted) {
			t.Errorf("%s: %v, want ErrAborted", name, err)
		}
	}
	if err := <-p.prefilling; !errors.Is(err, ErrAborted) {
		t.Errorf("prefilling: Prefill returned %v", err)
	}
	waitDrained(t, p.e)
	p.e.Close()
	if err := p.e.Pool().CheckDrained(); err != nil {
		t.Fatal(err)
	}
}
