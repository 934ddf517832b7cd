package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/loader"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

// staleInfo makes n's /v1/worker/info report maxContext while stale is
// set: the worker looks as it did at the gateway's last check although it
// now runs with another max context (restarted between two checks).
func staleInfo(n *node, maxContext int, stale *atomic.Bool) {
	inner := n.srv.Config.Handler
	n.srv.Config.Handler = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/v1/worker/info") || !stale.Load() {
			inner.ServeHTTP(rw, r)
			return
		}
		rec := httptest.NewRecorder()
		inner.ServeHTTP(rec, r)
		var in map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &in); err != nil {
			http.Error(rw, err.Error(), http.StatusInternalServerError)
			return
		}
		in["max_context"] = maxContext
		rw.Header().Set("Content-Type", "application/json")
		json.NewEncoder(rw).Encode(in)
	})
}

// TestDriftOnTheFirstRequestMovesToAnotherPair: a decode worker whose
// max context changed after the gateway's check is caught by the KV
// handshake on its first request; the gateway takes it out at once and the
// request succeeds on the other decode worker.
func TestDriftOnTheFirstRequestMovesToAnotherPair(t *testing.T) {
	pre := startWorker(t, worker.Prefill, smallPool)
	// The drifted worker has the larger pool, so the gateway tries it first.
	drifted := startWorker(t, worker.Decode, loader.PoolOptions{MaxContext: 512, KVTokens: 8192})
	sound := startWorker(t, worker.Decode, smallPool)
	var stale atomic.Bool
	stale.Store(true)
	staleInfo(drifted, smallPool.MaxContext, &stale)
	g := newGateway(t, []*node{pre}, []*node{drifted, sound})
	if !g.Ready() {
		t.Fatal("not ready with three workers that all look sound")
	}
	stale.Store(false) // from now on it tells the truth
	prompt, want := canaryPrompt(t, g, copymodel.AuditWords().Canary[:4], 40, 200, 1)
	ch, err := g.Submit(context.Background(), engine.Request{Prompt: prompt, MaxTokens: len(want)})
	if err != nil {
		t.Fatalf("a request with a sound pair left: %v", err)
	}
	got, err := collect(t, ch)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("answer %v (%v), want %v", got, err, want)
	}
	if drifted.hits.Load() == 0 {
		t.Fatal("the drifted worker was never tried: the test did not exercise the handshake")
	}
	if sound.hits.Load() == 0 {
		t.Fatal("the sound decode worker got no request")
	}
	for _, n := range []*node{pre, drifted, sound} {
		n.drained(t)
	}
	// It stays out: the next request goes straight to the sound worker.
	before := drifted.hits.Load()
	ch, err = g.Submit(context.Background(), engine.Request{Prompt: prompt, MaxTokens: len(want)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := collect(t, ch); err != nil {
		t.Fatal(err)
	}
	if drifted.hits.Load() != before {
		t.Error("the drifted worker got traffic after the handshake had caught it")
	}
}

// TestDriftWithNoOtherPairIsRetryableNotInternal: with the drifted worker
// the only decode worker, the client gets an OverloadedError (503 with
// Retry-After), not an internal error, and every pool drains.
func TestDriftWithNoOtherPairIsRetryableNotInternal(t *testing.T) {
	pre := startWorker(t, worker.Prefill, smallPool)
	drifted := startWorker(t, worker.Decode, loader.PoolOptions{MaxContext: 512, KVTokens: 4096})
	var stale atomic.Bool
	stale.Store(true)
	staleInfo(drifted, smallPool.MaxContext, &stale)
	g := newGateway(t, []*node{pre}, []*node{drifted})
	stale.Store(false)
	_, err := g.Submit(context.Background(), engine.Request{Prompt: make([]int32, 100), MaxTokens: 4})
	var ol *engine.OverloadedError
	if !errors.As(err, &ol) || errors.Is(err, engine.ErrInternal) {
		t.Fatalf("drift with no other pair: %v (%T), want an OverloadedError", err, err)
	}
	if !strings.Contains(ol.Reason, "max_context") && !strings.Contains(ol.Reason, "max context") {
		t.Errorf("the refusal does not name what drifted: %q", ol.Reason)
	}
	if g.Ready() {
		t.Error("still ready after the only decode worker drifted")
	}
	pre.drained(t)
	drifted.drained(t)
}

// TestPromptLogprobsAreRefusedAtTheGateway: echo with logprobs needs the
// prompt's logits, which no worker of a split keeps; the gateway refuses it
// before any worker hears of it.
func TestPromptLogprobsAreRefusedAtTheGateway(t *testing.T) {
	pre, dec := startWorker(t, worker.Prefill, smallPool), startWorker(t, worker.Decode, smallPool)
	g := newGateway(t, []*node{pre}, []*node{dec})
	_, err := g.Submit(context.Background(), engine.Request{Prompt: make([]int32, 20), MaxTokens: 2, PromptLogprobs: true})
	if !errors.Is(err, engine.ErrInvalidRequest) || !strings.Contains(err.Error(), "echo with logprobs") {
		t.Fatalf("prompt logprobs through the gateway: %v", err)
	}
	if pre.hits.Load()+dec.hits.Load() != 0 {
		t.Error("a worker heard of a request the gateway refuses")
	}
}
