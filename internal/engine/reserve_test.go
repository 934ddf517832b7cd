package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// hold reserves most of e's pool for a prompt of n tokens.
func hold(t *testing.T, e *Engine, n int, tenant string) *Reservation {
	t.Helper()
	r, err := e.Reserve(context.Background(), Request{Prompt: make([]int32, n), MaxTokens: 1, Tenant: tenant})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestReserveWaitsForPagesInsteadOfFailing(t *testing.T) {
	e := newEngine(t, Config{}, 256, 16)
	first := hold(t, e, 200, "a")
	got := make(chan error, 1)
	go func() {
		r, err := e.Reserve(context.Background(), Request{Prompt: make([]int32, 200), MaxTokens: 1})
		if err == nil {
			r.Done(errors.New("test: done"))
			collect(r.Events)
		}
		got <- err
	}()
	waitUntil(t, func() bool { return e.Stats().ReservationsWaiting == 1 })
	first.Done(errors.New("test: released"))
	if r := collect(first.Events); !errors.Is(r.err, ErrAborted) {
		t.Fatalf("released reservation ended with %v", r.err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiting reservation, once pages freed: %v", err)
	}
	waitDrained(t, e)
}

func TestReserveWaitIsBoundedAndCancellable(t *testing.T) {
	e := newEngine(t, Config{ReserveWait: 30 * time.Millisecond}, 256, 16)
	first := hold(t, e, 200, "a")
	_, err := e.Reserve(context.Background(), Request{Prompt: make([]int32, 200), MaxTokens: 1})
	var ol *OverloadedError
	if !errors.As(err, &ol) || ol.RetryAfter <= 0 {
		t.Fatalf("reservation past its wait: %v, want an OverloadedError", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(5*time.Millisecond, cancel)
	if _, err := e.Reserve(ctx, Request{Prompt: make([]int32, 200), MaxTokens: 1}); !errors.Is(err, ErrAborted) && !errors.As(err, &ol) {
		t.Fatalf("cancelled reservation: %v", err)
	}
	if n := e.Stats().ReservationsWaiting; n != 0 {
		t.Fatalf("%d reservations still queued", n)
	}
	first.Done(errors.New("test: released"))
	collect(first.Events)
	waitDrained(t, e)
}

func TestReserveQueueBoundAnswersOverloadedAtOnce(t *testing.T) {
	e := newEngine(t, Config{ReserveQueue: 1}, 256, 16)
	first := hold(t, e, 200, "a")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = e.Reserve(ctx, Request{Prompt: make([]int32, 200), MaxTokens: 1})
	}()
	waitUntil(t, func() bool { return e.Stats().ReservationsWaiting == 1 })
	_, err := e.Reserve(context.Background(), Request{Prompt: make([]int32, 200), MaxTokens: 1})
	var ol *OverloadedError
	if !errors.As(err, &ol) {
		t.Fatalf("reservation with the queue full: %v", err)
	}
	cancel()
	<-done
	first.Done(errors.New("test: released"))
	collect(first.Events)
	waitDrained(t, e)
}

func TestWaitingReservationsAreServedRoundRobinAcrossTenants(t *testing.T) {
	e := newEngine(t, Config{}, 256, 16)
	blocker := hold(t, e, 200, "x")
	order := make(chan string, 4)
	var wg sync.WaitGroup
	for i, tenant := range []string{"a", "a", "a", "b"} {
		wg.Go(func() {
			r, err := e.Reserve(context.Background(), Request{Prompt: make([]int32, 200), MaxTokens: 1, Tenant: tenant})
			if err != nil {
				t.Error(err)
				return
			}
			order <- tenant
			r.Done(errors.New("test: next"))
			collect(r.Events)
		})
		waitUntil(t, func() bool { return e.Stats().ReservationsWaiting == i+1 })
	}
	blocker.Done(errors.New("test: released"))
	collect(blocker.Events)
	wg.Wait()
	close(order)
	var got []string
	for s := range order {
		got = append(got, s)
	}
	if len(got) != 4 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("grant order %v: tenant b's single request should come second", got)
	}
	waitDrained(t, e)
}

func TestCloseWithALiveReservationFreesItsPages(t *testing.T) {
	m := tiny(t)
	e, err := New(Config{MaxContext: 256, VocabSize: testVocab, CloseGrace: 10 * time.Millisecond}, m, newPool(t, m, 1024, 16))
	if err != nil {
		t.Fatal(err)
	}
	r := hold(t, e, 100, "a")
	e.Close()
	if err := e.Pool().CheckDrained(); err != nil {
		t.Fatalf("after Close with a reservation never done: %v", err)
	}
	if res := collect(r.Events); res.err == nil {
		t.Fatal("the reservation's stream ended without an error")
	}
	r.Done(nil) // after the loop exited: nothing to do, no panic
}

func TestCloseWaitsForADoneInFlight(t *testing.T) {
	m := tiny(t)
	e, err := New(Config{MaxContext: 256, VocabSize: testVocab, CloseGrace: time.Minute}, m, newPool(t, m, 1024, 16))
	if err != nil {
		t.Fatal(err)
	}
	r := hold(t, e, 100, "a")
	closed := make(chan struct{})
	go func() { e.Close(); close(closed) }()
	waitUntil(t, func() bool { return !e.Ready() })
	r.Done(nil) // the transfer finishing during Close is still heard
	<-closed
	if err := e.Pool().CheckDrained(); err != nil {
		t.Fatal(err)
	}
	if res := collect(r.Events); !errors.Is(res.err, ErrShuttingDown) {
		t.Fatalf("stream of a transfer done during Close: %v", res.err)
	}
}

func TestCloseRacingReserveAndSubmitNeverPanics(t *testing.T) {
	m := tiny(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		e, err := New(Config{MaxContext: 256, VocabSize: testVocab, CloseGrace: 5 * time.Millisecond}, m, newPool(t, m, 512, 16))
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for i := range 6 {
			prompt := randPrompt(rng, 20+i*30)
			wg.Go(func() {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if i%2 == 0 {
					if r, err := e.Reserve(ctx, Request{Prompt: prompt, MaxTokens: 4}); err == nil {
						if i%4 == 0 {
							r.Done(nil)
						} else {
							r.Done(errors.New("test"))
						}
						collect(r.Events)
					}
					return
				}
				if ch, err := e.Submit(ctx, Request{Prompt: prompt, MaxTokens: 4}); err == nil {
					collect(ch)
				}
			})
		}
		e.Close()
		wg.Wait()
		if err := e.Pool().CheckDrained(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFullyCachedPrefillDoesNotFreezeTheQueue(t *testing.T) {
	e := newEngine(t, Config{}, 1024, 16)
	prompt := randPrompt(rand.New(rand.NewPCG(5, 6)), 17) // 16 = one whole page to hand off
	for i := range 2 {
		h, err := e.Prefill(context.Background(), Request{Prompt: prompt, MaxTokens: 1, Tenant: "a", CacheSalt: []byte("a")})
		if err != nil {
			t.Fatalf("prefill %d: %v", i, err)
		}
		if h.Ready != nil {
			for range h.Ready {
			}
		}
		if h.Tokens != 16 || len(h.Pages) != 1 {
			t.Fatalf("prefill %d handed off %d tokens on %d pages", i, h.Tokens, len(h.Pages))
		}
		if i == 1 {
			// Another tenant, queued behind the cached one, is served.
			if r := run(t, e, Request{Prompt: randPrompt(rand.New(rand.NewPCG(7, 8)), 9), MaxTokens: 2, Tenant: "b"}); r.err != nil {
				t.Fatal(r.err)
			}
		}
		h.Release(nil)
	}
	waitDrained(t, e)
}

func TestUsageCountsPrefixCachedPromptTokens(t *testing.T) {
	e := newEngine(t, Config{}, 1024, 16)
	req := Request{Prompt: randPrompt(rand.New(rand.NewPCG(9, 9)), 40), MaxTokens: 2, Tenant: "a", CacheSalt: []byte("a")}
	if r := run(t, e, req); r.err != nil || r.finish.Usage.CachedTokens != 0 {
		t.Fatalf("first run: %+v", r)
	}
	before := e.Stats().PrefixHitTokens
	r := run(t, e, req)
	if r.err != nil {
		t.Fatal(r.err)
	}
	hit := int(e.Stats().PrefixHitTokens - before)
	if r.finish.Usage.CachedTokens != 32 || hit != 32 {
		t.Fatalf("second run: usage cached_tokens %d, prefix hits %d; want 32 (two whole pages of the 40-token prompt)", r.finish.Usage.CachedTokens, hit)
	}
	other := req
	other.CacheSalt = []byte("b")
	if r := run(t, e, other); r.finish.Usage.CachedTokens != 0 {
		t.Fatalf("another tenant's salt reported %d cached tokens", r.finish.Usage.CachedTokens)
	}
	waitDrained(t, e)
}
