package pagemap

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/gateway"
	"github.com/bulkhead-llm/bulkhead/internal/loader"
	"github.com/bulkhead-llm/bulkhead/internal/transfer"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

// transferGate sits in the prefill worker's KV transport (a
// transfer.FaultTransport over real TCP). While holding, the DONE frame of
// the next transfer waits until release: every page has been sent, the
// decode side has not acknowledged, so the prefill pages stay leased for as
// long as the test needs, with no timing involved. While corrupting, every
// PAGE frame has one bit flipped (checksums resealed), so the decode
// worker rejects the handoff.
type transferGate struct {
	hold, corrupt atomic.Bool
	mu            sync.Mutex
	held          chan struct{} // closed when a DONE frame is held
	release       chan struct{} // closed to let it through
}

func newGate() *transferGate {
	return &transferGate{held: make(chan struct{}), release: make(chan struct{})}
}

func (g *transferGate) fault(f transfer.FrameInfo) transfer.Fault {
	switch {
	case f.Type == "PAGE" && g.corrupt.Load():
		return transfer.Fault{Action: transfer.FaultCorruptResealed}
	case f.Type == "DONE" && g.hold.Load():
		g.mu.Lock()
		held, release := g.held, g.release
		g.mu.Unlock()
		select {
		case <-held:
		default:
			close(held)
		}
		<-release
	}
	return transfer.Fault{}
}

// open lets a held transfer through and stops holding.
func (g *transferGate) open() {
	g.hold.Store(false)
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.release:
	default:
		close(g.release)
	}
}

// testWorker is one in-process worker: its engine, its HTTP API (what the
// gateway calls) and its page map.
type testWorker struct {
	eng *engine.Engine
	api *httptest.Server
	ui  *httptest.Server
}

// startWorker runs a worker of role on the copy model with KV over TCP
// (through transport when given).
func startWorker(t *testing.T, role worker.Role, po loader.PoolOptions, ec engine.Config, transport transfer.Transport) *testWorker {
	t.Helper()
	m, err := loader.Load(loader.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	eng, err := m.NewEngine(po, ec)
	if err != nil {
		t.Fatal(err)
	}
	vocab, err := m.VocabGGUF()
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(worker.Config{Role: role, Model: m.Name, ModelDigest: m.Digest, Layers: m.Model.Config.Layers,
		KVDim: m.Model.Config.KVDim(), Vocab: vocab, KVListen: "127.0.0.1:0", Transport: transport, Logger: quiet()}, eng)
	if err != nil {
		eng.Close()
		t.Fatal(err)
	}
	tw := &testWorker{eng: eng, api: httptest.NewServer(w),
		ui: httptest.NewServer(New(Options{Sources: []Source{{Role: string(role), Engine: eng}}}))}
	t.Cleanup(func() { tw.api.Close(); tw.ui.Close(); w.Shutdown(context.Background()); eng.Close() })
	return tw
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startGateway runs a real gateway over the workers and waits until it has
// checked them all once.
func startGateway(t *testing.T, pre, dec []*testWorker) *gateway.Gateway {
	t.Helper()
	urls := func(ws []*testWorker) (u []string) {
		for _, w := range ws {
			u = append(u, w.api.URL)
		}
		return u
	}
	g, err := gateway.New(context.Background(), gateway.Config{Prefill: urls(pre), Decode: urls(dec),
		CheckInterval: time.Hour, Logger: quiet()}) // checked by hand (Check), never by the clock
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	select {
	case <-g.Started():
	case <-time.After(time.Minute): // a hung start, not a speed check
		t.Fatal("gateway never started")
	}
	return g
}

// prompt is n distinct tokens for tenant.
func prompt(tenant string, seed, n int) engine.Request {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(100 + seed*7 + i)
	}
	return engine.Request{ID: tenant, Tenant: tenant, CacheSalt: []byte(tenant), Prompt: p, MaxTokens: 4, IgnoreEOS: true}
}

// complete submits req through g and waits for its end.
func complete(g *gateway.Gateway, req engine.Request) error {
	ch, err := g.Submit(context.Background(), req)
	if err != nil {
		return err
	}
	return drain(ch).Err
}
