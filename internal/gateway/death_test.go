package gateway

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
	"github.com/bulkhead-llm/bulkhead/internal/loader"
	"github.com/bulkhead-llm/bulkhead/internal/model"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

// gate holds a worker's forward passes: the first `left` run, then each
// one reports on held and waits for a step, or for release. It holds a
// request in a known phase while its worker is killed.
type gate struct {
	mu   sync.Mutex
	left int
	held chan struct{}
	next chan struct{}
	open chan struct{}
	once sync.Once
}

func newGate(left int) *gate {
	return &gate{left: left, held: make(chan struct{}, 64), next: make(chan struct{}), open: make(chan struct{})}
}

func (g *gate) wait() {
	g.mu.Lock()
	if g.left > 0 {
		g.left--
		g.mu.Unlock()
		return
	}
	g.mu.Unlock()
	g.held <- struct{}{}
	select {
	case <-g.next:
	case <-g.open:
	}
}

// step lets the held pass run; the next one holds again.
func (g *gate) step() { g.next <- struct{}{} }

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

// gatedModel is the worker's model behind a gate; it keeps reporting
// layers, so a prefill handoff streams while its last chunk is held.
type gatedModel struct {
	m *model.Model
	g *gate
}

func (gm gatedModel) Forward(kv model.KVStore, seqs []model.Seq) ([][]float32, error) {
	gm.g.wait()
	return gm.m.Forward(kv, seqs)
}

func (gm gatedModel) ForwardLayers(kv model.KVStore, seqs []model.Seq, after func(int)) ([][]float32, error) {
	gm.g.wait()
	return gm.m.ForwardLayers(kv, seqs, after)
}

// gatedEngine is loader.Model.NewEngine with the model behind g.
func gatedEngine(m *loader.Model, o loader.PoolOptions, ec engine.Config, g *gate) (*engine.Engine, error) {
	pc, err := m.PoolConfig(o)
	if err != nil {
		return nil, err
	}
	pool, err := kvcache.New(pc)
	if err != nil {
		return nil, err
	}
	ec.MaxContext, ec.VocabSize, ec.EOG = m.MaxContextFor(o), m.Model.Config.Vocab, m.EOG()
	return engine.New(ec, gatedModel{m: m.Model, g: g}, pool)
}

// kill is the worker's process dying: its connections drop, its engine
// and KV receiver stop. Its held pass is let go so the engine can close.
func (n *node) kill(g *gate) {
	// The listener first: a dead process takes no new connection, so a
	// gateway retrying after the cut cannot reach the dying worker.
	n.srv.Listener.Close()
	n.srv.CloseClientConnections()
	done := make(chan struct{})
	go func() { n.eng.Close(); close(done) }()
	if g != nil {
		g.release()
	}
	<-done
	n.srv.CloseClientConnections()
	n.w.Shutdown(context.Background())
}

// outcome is what a client saw: Submit's error, or its stream's last.
func outcome(ch <-chan engine.Event, err error) error {
	if err != nil {
		return err
	}
	var last engine.Event
	for ev := range ch {
		last = ev
	}
	return last.Err
}

// submitAsync starts a request; its outcome arrives on the channel.
func submitAsync(g *Gateway, prompt int, maxTokens int) <-chan error {
	out := make(chan error, 1)
	go func() {
		ch, err := g.Submit(context.Background(), engine.Request{Prompt: make([]int32, prompt), MaxTokens: maxTokens, IgnoreEOS: true})
		out <- outcome(ch, err)
	}()
	return out
}

func mustFail(t *testing.T, phase string, out <-chan error) {
	t.Helper()
	select {
	case err := <-out:
		if err == nil {
			t.Errorf("%s: the request succeeded though its worker died", phase)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no answer within 30s of the worker's death", phase)
	}
}

// killedDrained checks the dead worker's pool too: its engine's Close
// freed everything (DESIGN I7).
func killedDrained(t *testing.T, phase string, n *node) {
	t.Helper()
	if err := n.eng.Pool().CheckDrained(); err != nil {
		t.Errorf("%s: the killed worker's pool: %v", phase, err)
	}
}

// Worker death in every phase: the request (and the one queued behind it)
// ends with an error, never hangs or succeeds, the surviving worker's pool
// drains, and so does the dead one's. Run under -race by test.sh.
func TestWorkerDeathInEveryPhase(t *testing.T) {
	prefillCfg := engine.Config{TokenBudget: 64, MaxRunning: 1, CloseGrace: 100 * time.Millisecond}
	decodeCfg := engine.Config{TokenBudget: 256, MaxRunning: 8, CloseGrace: 100 * time.Millisecond}

	t.Run("queued and prefilling, prefill dies", func(t *testing.T) {
		pg := newGate(0) // the first chunk's pass holds
		pre := startNode(t, worker.Prefill, smallPool, prefillCfg, nil, pg)
		dec := startWorkerWith(t, worker.Decode, smallPool, decodeCfg)
		g := newGateway(t, []*node{pre}, []*node{dec})
		prefilling := submitAsync(g, 900, 4) // 15 chunks of 64
		<-pg.held
		queued := submitAsync(g, 30, 4) // MaxRunning 1: it waits in prefill's queue
		waitFor(t, func() bool { return pre.hits.Load() == 2 })
		// The shell takes the second request in between passes: let one
		// pass run at a time until it is queued (Stats is fresh at a hold).
		for st := pre.eng.Stats(); st.Waiting != 1; st = pre.eng.Stats() {
			if st.Running != 1 {
				t.Fatalf("prefill worker not prefilling the first request: %+v", st)
			}
			pg.step()
			<-pg.held
		}
		pre.kill(pg)
		mustFail(t, "prefilling", prefilling)
		mustFail(t, "queued", queued)
		dec.drained(t)
		killedDrained(t, "prefill", pre)
	})

	// Three 64-token chunks run; the fourth, the prompt's last, holds. Its
	// handoff was delivered before the pass (pinned), so the KV transfer
	// is open, waiting for layers, when a worker dies.
	for _, dies := range []worker.Role{worker.Prefill, worker.Decode} {
		t.Run("transferring, "+string(dies)+" dies", func(t *testing.T) {
			pg := newGate(3)
			pre := startNode(t, worker.Prefill, smallPool, prefillCfg, nil, pg)
			dec := startWorkerWith(t, worker.Decode, smallPool, decodeCfg)
			g := newGateway(t, []*node{pre}, []*node{dec})
			out := submitAsync(g, 200, 4)
			<-pg.held
			if st := dec.eng.Stats(); st.PagesFree == st.PagesTotal || st.Running != 0 {
				t.Fatalf("decode is not holding a reservation for the transfer: %+v", st)
			}
			if dies == worker.Prefill {
				pre.kill(pg)
				mustFail(t, "transferring", out)
				dec.drained(t)
				killedDrained(t, "prefill", pre)
				return
			}
			dec.kill(nil)
			pg.release()
			mustFail(t, "transferring", out)
			pre.drained(t)
			killedDrained(t, "decode", dec)
		})
	}

	t.Run("decoding, decode dies", func(t *testing.T) {
		dg := newGate(3) // the last prompt token and two more tokens, then hold
		pre := startWorkerWith(t, worker.Prefill, smallPool, prefillCfg)
		dec := startNode(t, worker.Decode, smallPool, decodeCfg, nil, dg)
		g := newGateway(t, []*node{pre}, []*node{dec})
		ch, err := g.Submit(context.Background(), engine.Request{Prompt: make([]int32, 100), MaxTokens: 50, IgnoreEOS: true})
		if err != nil {
			t.Fatal(err)
		}
		<-dg.held
		if ev := <-ch; ev.Err != nil || ev.Finish != nil {
			t.Fatalf("first event while decoding: %+v", ev)
		}
		dec.kill(dg)
		if err := outcome(ch, nil); err == nil {
			t.Error("decoding: the stream finished though its decode worker died")
		} else if !errors.Is(err, engine.ErrInternal) && !errors.Is(err, engine.ErrShuttingDown) {
			t.Errorf("decoding: stream ended with %v", err)
		}
		pre.drained(t)
		killedDrained(t, "decode", dec)
	})
}
