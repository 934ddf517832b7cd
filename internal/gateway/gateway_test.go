package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/loader"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// node is one worker running in-process behind a real HTTP listener, with
// its KV receiver on real loopback TCP.
type node struct {
	eng  *engine.Engine
	w    *worker.Worker
	srv  *httptest.Server
	hits atomic.Int64 // POSTs received
}

func startWorker(t *testing.T, role worker.Role, pool loader.PoolOptions) *node {
	t.Helper()
	return startWorkerWith(t, role, pool, engine.Config{TokenBudget: 256, MaxRunning: 8})
}

func startWorkerWith(t *testing.T, role worker.Role, pool loader.PoolOptions, ec engine.Config) *node {
	t.Helper()
	return startWorkerOn(t, role, pool, ec, nil)
}

// startWorkerOn is startWorkerWith serving on ln (nil: a fresh port).
func startWorkerOn(t *testing.T, role worker.Role, pool loader.PoolOptions, ec engine.Config, ln net.Listener) *node {
	t.Helper()
	return startNode(t, role, pool, ec, ln, nil)
}

// startNode is startWorkerOn whose model passes, when g is set, wait at g.
func startNode(t *testing.T, role worker.Role, pool loader.PoolOptions, ec engine.Config, ln net.Listener, g *gate) *node {
	t.Helper()
	m, err := loader.Load(loader.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	var eng *engine.Engine
	if g == nil {
		eng, err = m.NewEngine(pool, ec)
	} else {
		eng, err = gatedEngine(m, pool, ec, g)
	}
	if err != nil {
		t.Fatal(err)
	}
	vocab, err := m.VocabGGUF()
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(worker.Config{Role: role, Model: m.Name, ModelDigest: m.Digest, Layers: m.Model.Config.Layers,
		KVDim: m.Model.Config.KVDim(), Vocab: vocab, KVListen: "127.0.0.1:0", Logger: quiet}, eng)
	if err != nil {
		t.Fatal(err)
	}
	n := &node{eng: eng, w: w}
	n.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			n.hits.Add(1)
		}
		w.ServeHTTP(rw, r)
	}))
	if ln != nil {
		n.srv.Listener.Close()
		n.srv.Listener = ln
	}
	n.srv.Start()
	t.Cleanup(func() {
		n.srv.CloseClientConnections()
		n.srv.Close()
		w.Shutdown(context.Background())
		eng.Close()
	})
	if g != nil {
		t.Cleanup(g.release) // runs first: a held pass must end for Close to return
	}
	return n
}

// drained waits until the node's pool is back to all free (DESIGN I7).
func (n *node) drained(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := n.eng.Stats()
		err := n.eng.Pool().CheckDrained()
		if err == nil && st.Running+st.Waiting == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker not drained: %+v: %v", st, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var smallPool = loader.PoolOptions{MaxContext: 1024, KVTokens: 4096}

func newGateway(t *testing.T, pre, dec []*node) *Gateway {
	t.Helper()
	return newGatewayWith(t, pre, dec, func(*Config) {})
}

func newGatewayWith(t *testing.T, pre, dec []*node, set func(*Config)) *Gateway {
	t.Helper()
	var cfg Config
	for _, n := range pre {
		cfg.Prefill = append(cfg.Prefill, n.srv.URL)
	}
	for _, n := range dec {
		cfg.Decode = append(cfg.Decode, n.srv.URL)
	}
	cfg.Logger = quiet
	cfg.CheckInterval = time.Hour // tests call Check themselves
	set(&cfg)
	g, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

func collect(t *testing.T, ch <-chan engine.Event) ([]int32, error) {
	t.Helper()
	var toks []int32
	for ev := range ch {
		if ev.Err != nil {
			return toks, ev.Err
		}
		if ev.Finish == nil {
			toks = append(toks, ev.Token)
		}
	}
	return toks, nil
}

// canaryPrompt is a copy-model prompt of n tokens with the canary words at
// position pos, and the ids the model must emit.
func canaryPrompt(t *testing.T, g *Gateway, canary []string, pos, n int, seed uint64) ([]int32, []int32) {
	t.Helper()
	text, err := copymodel.Prompt(canary, pos, n, seed)
	if err != nil {
		t.Fatal(err)
	}
	prompt := g.Tokenizer().Encode(text, true, false)
	var want []int32
	for _, w := range canary {
		want = append(want, g.Tokenizer().Encode(" "+w, false, false)...)
	}
	if len(prompt) != n || len(want) != len(canary) {
		t.Fatalf("prompt has %d tokens (want %d), canary %d", len(prompt), n, len(want))
	}
	return prompt, want
}

func TestDisaggregatedRequestRetrievesItsCanaryAndMatchesMonolithic(t *testing.T) {
	pre, dec := startWorker(t, worker.Prefill, smallPool), startWorker(t, worker.Decode, smallPool)
	mono := startWorker(t, worker.Decode, smallPool) // used as a plain engine
	g := newGateway(t, []*node{pre}, []*node{dec})
	if !g.Ready() {
		t.Fatal("gateway not ready with a healthy pair")
	}
	words := copymodel.AuditWords()
	for i, c := range []struct{ pos, n int }{{1, 12}, {40, 300}, {500, 1000}, {3, 1015}} {
		canary := words.Canary[8*i : 8*i+8]
		prompt, want := canaryPrompt(t, g, canary, c.pos, c.n, uint64(i))
		req := engine.Request{Prompt: prompt, MaxTokens: 8}
		ch, err := g.Submit(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := collect(t, ch)
		if err != nil {
			t.Fatalf("prompt %d tokens: %v", c.n, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("prompt %d tokens, canary at %d: got %v, want canary %v", c.n, c.pos, got, want)
		}
		mch, err := mono.eng.Submit(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if m, _ := collect(t, mch); !slices.Equal(got, m) {
			t.Errorf("disaggregated %v differs from monolithic %v", got, m)
		}
	}
	pre.drained(t)
	dec.drained(t)
}

func TestOversizedPromptIsRefusedAtTheGatewayAlone(t *testing.T) {
	pre, dec := startWorker(t, worker.Prefill, smallPool), startWorker(t, worker.Decode, smallPool)
	g := newGateway(t, []*node{pre}, []*node{dec})
	for _, n := range []int{1024, 1025, 4096} {
		_, err := g.Submit(context.Background(), engine.Request{Prompt: make([]int32, n), MaxTokens: 1})
		var cl *engine.ContextLengthError
		if !errors.As(err, &cl) || cl.PromptTokens != n || cl.Limit != 1023 {
			t.Fatalf("prompt %d: %v", n, err)
		}
	}
	if pre.hits.Load()+dec.hits.Load() != 0 {
		t.Fatalf("workers heard of refused requests: prefill %d, decode %d", pre.hits.Load(), dec.hits.Load())
	}
}

func TestDriftedWorkerGetsNoTraffic(t *testing.T) {
	pre := startWorker(t, worker.Prefill, smallPool)
	odd := startWorker(t, worker.Decode, loader.PoolOptions{MaxContext: 1024, KVTokens: 4096, PageSize: 32})
	g := newGateway(t, []*node{pre}, []*node{odd})
	if g.Ready() {
		t.Fatal("ready with a decode worker whose page size differs")
	}
	if _, err := g.Submit(context.Background(), engine.Request{Prompt: []int32{1, 2, 3}, MaxTokens: 1}); !errors.Is(err, engine.ErrShuttingDown) {
		t.Fatalf("submit without a healthy pair: %v", err)
	}
	if odd.hits.Load() != 0 {
		t.Fatal("the drifted worker got traffic")
	}
}

func TestKilledDecodeEndsTheStreamWithAnErrorAndPrefillDrains(t *testing.T) {
	pre, dec := startWorker(t, worker.Prefill, smallPool), startWorker(t, worker.Decode, smallPool)
	g := newGateway(t, []*node{pre}, []*node{dec})
	ch, err := g.Submit(context.Background(), engine.Request{Prompt: make([]int32, 50), MaxTokens: 900, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	<-ch // generating
	dec.srv.CloseClientConnections()
	_, err = collect(t, ch)
	if !errors.Is(err, engine.ErrInternal) {
		t.Fatalf("stream after the decode worker vanished: %v", err)
	}
	pre.drained(t)
	dec.drained(t) // the worker itself saw its client go and aborted
	g.Check(context.Background())
	if !g.Ready() {
		t.Fatal("a decode worker that only lost one connection should stay healthy")
	}
}

func TestPrefillClientErrorPassesThroughAndFreesTheReservation(t *testing.T) {
	dec := startWorker(t, worker.Decode, smallPool)
	fakePre := startWorker(t, worker.Prefill, smallPool)
	// Replace the prefill worker's answer with a 400 from its admission.
	fakePre.srv.Config.Handler = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(rw, `{"error":{"message":"prompt too long","kind":"context_length_exceeded","prompt_tokens":99,"limit":50,"max_context":51}}`)
			return
		}
		fakePre.w.ServeHTTP(rw, r)
	})
	g := newGateway(t, []*node{fakePre}, []*node{dec})
	_, err := g.Submit(context.Background(), engine.Request{Prompt: make([]int32, 99), MaxTokens: 1})
	var cl *engine.ContextLengthError
	if !errors.As(err, &cl) || cl.PromptTokens != 99 || cl.Limit != 50 {
		t.Fatalf("prefill's 400 came back as %v", err)
	}
	dec.drained(t)
}

func TestClientCancelDuringGenerationFreesBothWorkers(t *testing.T) {
	pre, dec := startWorker(t, worker.Prefill, smallPool), startWorker(t, worker.Decode, smallPool)
	g := newGateway(t, []*node{pre}, []*node{dec})
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := g.Submit(ctx, engine.Request{Prompt: make([]int32, 300), MaxTokens: 700, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	<-ch
	cancel()
	if _, err := collect(t, ch); !errors.Is(err, engine.ErrAborted) {
		t.Fatalf("after cancel: %v", err)
	}
	pre.drained(t)
	dec.drained(t)
}

func TestClientCancelDuringPrefillAndTransferFreesBothWorkers(t *testing.T) {
	pre, dec := startWorker(t, worker.Prefill, smallPool), startWorker(t, worker.Decode, smallPool)
	g := newGateway(t, []*node{pre}, []*node{dec})
	for _, after := range []time.Duration{0, 5 * time.Millisecond, 20 * time.Millisecond, 60 * time.Millisecond} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(after, cancel)
		ch, err := g.Submit(ctx, engine.Request{Prompt: make([]int32, 1000), MaxTokens: 20, IgnoreEOS: true})
		if err == nil {
			_, err = collect(t, ch)
		}
		if err != nil && !errors.Is(err, engine.ErrAborted) {
			t.Fatalf("cancel after %v: %v", after, err)
		}
		pre.drained(t)
		dec.drained(t)
	}
}

// waitFor polls cond (no timed assertion: it fails only after 10s).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}
