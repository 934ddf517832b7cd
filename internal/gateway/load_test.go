package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/loader"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

// tightPool holds exactly one request of the maximum context: the issue's
// "decode pool full → 500" configuration.
var tightPool = loader.PoolOptions{MaxContext: 512, KVTokens: 512}

// patient is a worker's engine for the burst tests: a burst of 16
// whole-pool requests is served one after another, so the last waits for
// fifteen others (a minute or more under -race on a loaded 2-core
// machine); these tests are about queueing, not the bound on the wait
// (TestEveryDecodeWorkerFullAnswersOverloadedNotInternal is).
var patient = engine.Config{TokenBudget: 256, MaxRunning: 8, ReserveWait: 10 * time.Minute}

// patientGateway is newGateway whose reservations may wait as long.
func patientGateway(t *testing.T, pre, dec []*node) *Gateway {
	t.Helper()
	return newGatewayWith(t, pre, dec, func(c *Config) { c.ReserveTimeout = 10 * time.Minute })
}

// burst sends n concurrent 492-token canary prompts through g and checks
// that every one is answered with its own canary.
func burst(t *testing.T, g *Gateway, n int) {
	t.Helper()
	burstTo(t, g, g.Submit, n)
}

// burstTo is burst with prompts tokenized by g and sent to submit.
func burstTo(t *testing.T, g *Gateway, submit func(context.Context, engine.Request) (<-chan engine.Event, error), n int) {
	t.Helper()
	words := copymodel.AuditWords()
	type res struct {
		got, want []int32
		err       error
	}
	out := make([]res, n)
	var wg sync.WaitGroup
	for i := range n {
		canary := words.Canary[(8*i)%(len(words.Canary)-8):][:8]
		prompt, want := canaryPrompt(t, g, canary, 10+i, 492, uint64(100+i))
		wg.Go(func() {
			req := engine.Request{Prompt: prompt, MaxTokens: 8, Tenant: fmt.Sprintf("t%d", i%3)}
			ch, err := submit(context.Background(), req)
			if err != nil {
				out[i] = res{err: err}
				return
			}
			var got []int32
			for ev := range ch {
				if ev.Err != nil {
					err = ev.Err
				} else if ev.Finish == nil {
					got = append(got, ev.Token)
				}
			}
			out[i] = res{got, want, err}
		})
	}
	wg.Wait()
	ok := 0
	for i, r := range out {
		switch {
		case r.err != nil:
			t.Errorf("request %d: %v", i, r.err)
		case !slices.Equal(r.got, r.want):
			t.Errorf("request %d: got %v, want its canary %v", i, r.got, r.want)
		default:
			ok++
		}
	}
	if ok != n {
		t.Fatalf("%d of %d requests answered with their canary", ok, n)
	}
}

func TestFullDecodePoolQueuesInsteadOfFailing(t *testing.T) {
	pre, dec := startWorkerWith(t, worker.Prefill, tightPool, patient), startWorkerWith(t, worker.Decode, tightPool, patient)
	g := patientGateway(t, []*node{pre}, []*node{dec})
	burst(t, g, 16)
	pre.drained(t)
	dec.drained(t)
}

// The monolithic engine (`serve`) under the same burst: it queues and
// preempts, and every request gets its canary.
func TestMonolithicEngineServesTheSameBurst(t *testing.T) {
	pre, dec := startWorker(t, worker.Prefill, tightPool), startWorker(t, worker.Decode, tightPool)
	mono := startWorkerWith(t, worker.Decode, tightPool, patient)
	g := newGateway(t, []*node{pre}, []*node{dec}) // for its tokenizer
	burstTo(t, g, mono.eng.Submit, 16)
	mono.drained(t)
}

func TestTwoDecodeWorkersShareABurstAndDrain(t *testing.T) {
	pre := startWorkerWith(t, worker.Prefill, tightPool, patient)
	d1, d2 := startWorkerWith(t, worker.Decode, tightPool, patient), startWorkerWith(t, worker.Decode, tightPool, patient)
	g := patientGateway(t, []*node{pre}, []*node{d1, d2})
	burst(t, g, 16)
	if d1.hits.Load() == 0 || d2.hits.Load() == 0 {
		t.Errorf("one decode worker took everything: %d and %d requests", d1.hits.Load(), d2.hits.Load())
	}
	pre.drained(t)
	d1.drained(t)
	d2.drained(t)
}

func TestEveryDecodeWorkerFullAnswersOverloadedNotInternal(t *testing.T) {
	pre := startWorker(t, worker.Prefill, tightPool)
	dec := startWorkerWith(t, worker.Decode, tightPool, engine.Config{TokenBudget: 256, MaxRunning: 8, ReserveQueue: 1})
	g := newGateway(t, []*node{pre}, []*node{dec})
	words := copymodel.AuditWords()
	prompt, _ := canaryPrompt(t, g, words.Canary[:8], 5, 492, 7)
	// A reservation made directly on the decode engine holds its whole
	// pool; the second request waits in the (one-place) queue; the third
	// finds the queue full.
	held, err := dec.eng.Reserve(context.Background(), engine.Request{Prompt: prompt, MaxTokens: 1})
	if err != nil {
		t.Fatal(err)
	}
	secondErr := make(chan error, 1)
	go func() {
		ch, err := g.Submit(context.Background(), engine.Request{Prompt: prompt, MaxTokens: 8})
		if err == nil {
			_, err = collect(t, ch)
		}
		secondErr <- err
	}()
	waitFor(t, func() bool { return dec.eng.Stats().ReservationsWaiting == 1 })
	_, err = g.Submit(context.Background(), engine.Request{Prompt: prompt, MaxTokens: 1})
	var ol *engine.OverloadedError
	if !errors.As(err, &ol) || ol.RetryAfter <= 0 {
		t.Fatalf("third request with every decode queue full: %v, want an OverloadedError with a retry delay", err)
	}
	held.Done(errors.New("test: released"))
	if err := <-secondErr; err != nil {
		t.Fatalf("the queued request, once pages freed: %v", err)
	}
	pre.drained(t)
	dec.drained(t)
}

// A decode worker restarted with another max context at the same address
// is refused by the first transfer's handshake: that request fails with an
// error naming the value, instead of a 200 cut short at the smaller context.
func TestMaxContextDriftIsCaughtByTheFirstTransfer(t *testing.T) {
	pre, dec := startWorker(t, worker.Prefill, tightPool), startWorker(t, worker.Decode, tightPool)
	g := newGateway(t, []*node{pre}, []*node{dec})
	restarted := startWorker(t, worker.Decode, loader.PoolOptions{MaxContext: 1024, KVTokens: 1024})
	// Before the next check the gateway still holds the old info; the
	// restarted worker answers at the old addresses.
	dec.srv.Config.Handler = restarted.srv.Config.Handler
	g.mu.Lock()
	for _, m := range g.members {
		if m.role == worker.Decode {
			m.info.KVAddr = restarted.w.Info().KVAddr
		}
	}
	g.mu.Unlock()
	words := copymodel.AuditWords()
	prompt, _ := canaryPrompt(t, g, words.Canary[:8], 5, 100, 9)
	ch, err := g.Submit(context.Background(), engine.Request{Prompt: prompt, MaxTokens: 8})
	if err == nil {
		var toks []int32
		toks, err = collect(t, ch)
		if err == nil {
			t.Fatalf("request across a max-context drift answered %d tokens without an error", len(toks))
		}
	}
	if !strings.Contains(err.Error(), "max context") {
		t.Fatalf("drift error %q does not name the max context", err)
	}
	pre.drained(t)
	restarted.drained(t)
}

// A prefill worker that accepts the call and never answers (SIGSTOP) costs
// the client PrefillTimeout, not the whole stall, and frees decode's pages.
func TestStalledPrefillHitsTheDeadlineAndFreesDecode(t *testing.T) {
	dec := startWorker(t, worker.Decode, smallPool)
	stalled := startWorker(t, worker.Prefill, smallPool)
	release := make(chan struct{})
	defer close(release)
	stalled.srv.Config.Handler = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		stalled.w.ServeHTTP(rw, r)
	})
	g := newGatewayWith(t, []*node{stalled}, []*node{dec}, func(c *Config) { c.PrefillTimeout = 50 * time.Millisecond })
	_, err := g.Submit(context.Background(), engine.Request{Prompt: make([]int32, 40), MaxTokens: 1})
	if !errors.Is(err, engine.ErrInternal) || !strings.Contains(err.Error(), "no answer within") {
		t.Fatalf("submit to a stalled prefill worker: %v", err)
	}
	dec.drained(t)
}

func TestDisaggregatedUsageReportsPrefillCachedTokens(t *testing.T) {
	pre, dec := startWorker(t, worker.Prefill, smallPool), startWorker(t, worker.Decode, smallPool)
	g := newGateway(t, []*node{pre}, []*node{dec})
	words := copymodel.AuditWords()
	prompt, _ := canaryPrompt(t, g, words.Canary[:8], 5, 100, 3)
	var cached []int
	for range 2 {
		ch, err := g.Submit(context.Background(), engine.Request{Prompt: prompt, MaxTokens: 2, CacheSalt: []byte("s")})
		if err != nil {
			t.Fatal(err)
		}
		for ev := range ch {
			if ev.Err != nil {
				t.Fatal(ev.Err)
			}
			if ev.Finish != nil {
				cached = append(cached, ev.Finish.Usage.CachedTokens)
			}
		}
	}
	if len(cached) != 2 || cached[0] != 0 || cached[1] != 96 {
		t.Fatalf("cached_tokens of two identical 100-token prompts: %v, want [0 96]", cached)
	}
	pre.drained(t)
	dec.drained(t)
}

// The freeze: the same 17-token prompt twice (page size 16) makes
// the second one's handoff entirely prefix-cached on the prefill worker.
// Both are answered, and so is another tenant's request sent meanwhile.
func TestRepeatedPagePrefixPromptDoesNotFreezePrefill(t *testing.T) {
	pre, dec := startWorker(t, worker.Prefill, smallPool), startWorker(t, worker.Decode, smallPool)
	if ps := pre.eng.Pool().PageSize(); ps != 16 {
		t.Skipf("page size %d; the case needs 16", ps)
	}
	g := newGateway(t, []*node{pre}, []*node{dec})
	words := copymodel.AuditWords()
	prompt, want := canaryPrompt(t, g, words.Canary[:8], 2, 17, 4)
	other, otherWant := canaryPrompt(t, g, words.Canary[8:16], 3, 40, 5)
	ask := func(p []int32, tenant string) ([]int32, error) {
		ch, err := g.Submit(context.Background(), engine.Request{Prompt: p, MaxTokens: 8, Tenant: tenant, CacheSalt: []byte(tenant)})
		if err != nil {
			return nil, err
		}
		return collect(t, ch)
	}
	for i := range 2 {
		otherDone := make(chan error, 1)
		go func() {
			got, err := ask(other, "b")
			if err == nil && !slices.Equal(got, otherWant) {
				err = fmt.Errorf("got %v, want %v", got, otherWant)
			}
			otherDone <- err
		}()
		got, err := ask(prompt, "a")
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("17-token prompt, round %d: %v %v, want %v", i, got, err, want)
		}
		if err := <-otherDone; err != nil {
			t.Fatalf("the other tenant's request, round %d: %v", i, err)
		}
	}
	if hits := pre.eng.Stats().PrefixHitTokens; hits < 16 {
		t.Fatalf("prefill prefix hits %d: the second round was not fully cached", hits)
	}
	pre.drained(t)
	dec.drained(t)
}

// A decode worker that shuts down while a request waits in its reservation
// queue has reserved nothing for it: the gateway moves the request to the
// other decode worker, where it waits its turn and is served.
func TestQueuedReservationMovesOnWhenItsDecodeWorkerCloses(t *testing.T) {
	pre := startWorkerWith(t, worker.Prefill, tightPool, patient)
	d1, d2 := startWorkerWith(t, worker.Decode, tightPool, patient), startWorkerWith(t, worker.Decode, tightPool, patient)
	g := patientGateway(t, []*node{pre}, []*node{d1, d2})
	words := copymodel.AuditWords()
	prompt, want := canaryPrompt(t, g, words.Canary[:8], 5, 492, 11)
	var holds []*engine.Reservation
	for _, d := range []*node{d1, d2} {
		h, err := d.eng.Reserve(context.Background(), engine.Request{Prompt: prompt, MaxTokens: 1})
		if err != nil {
			t.Fatal(err)
		}
		holds = append(holds, h)
	}
	type answer struct {
		got []int32
		err error
	}
	done := make(chan answer, 1)
	go func() {
		ch, err := g.Submit(context.Background(), engine.Request{Prompt: prompt, MaxTokens: 8})
		if err != nil {
			done <- answer{err: err}
			return
		}
		got, err := collect(t, ch)
		done <- answer{got, err}
	}()
	var queued, other int
	waitFor(t, func() bool {
		for i, d := range []*node{d1, d2} {
			if d.eng.Stats().ReservationsWaiting == 1 {
				queued, other = i, 1-i
				return true
			}
		}
		return false
	})
	nodes := []*node{d1, d2}
	nodes[queued].eng.Close() // its queue answers shutting down at once
	waitFor(t, func() bool { return nodes[other].eng.Stats().ReservationsWaiting == 1 })
	holds[other].Done(errors.New("test: released"))
	a := <-done
	if a.err != nil || !slices.Equal(a.got, want) {
		t.Fatalf("request after its decode worker closed: %v %v, want %v", a.got, a.err, want)
	}
	pre.drained(t)
	nodes[other].drained(t)
	if err := nodes[queued].eng.Pool().CheckDrained(); err != nil {
		t.Fatalf("closed decode worker: %v", err)
	}
}
