package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
	"github.com/bulkhead-llm/bulkhead/internal/model"
)

var _ model.KVStore = (*kvcache.Pool)(nil)

// Forwarder runs one batched forward step. *model.Model implements it; tests
// substitute fakes.
type Forwarder interface {
	Forward(kv model.KVStore, seqs []model.Seq) ([][]float32, error)
}

// Config sets the engine's limits.
type Config struct {
	MaxContext  int // tokens per sequence, prompt and output together
	TokenBudget int // tokens per forward step; 0 means 512
	MaxRunning  int // sequences in the running set; 0 means 64
	// EOG lists the model's end-of-generation tokens; they stop a request
	// unless it sets IgnoreEOS.
	EOG []int32
	// VocabSize bounds prompt token ids.
	VocabSize int
	// ReserveWait bounds how long Reserve waits for pages; 0 means 30s.
	ReserveWait time.Duration
	// ReserveQueue bounds how many Reserve calls may wait; 0 means 256.
	ReserveQueue int
	// CloseGrace is how long Close waits for transfers in flight to end
	// before it frees their pages anyway; 0 means 2s.
	CloseGrace time.Duration
}

func (c *Config) defaults() {
	if c.TokenBudget == 0 {
		c.TokenBudget = 512
	}
	if c.MaxRunning == 0 {
		c.MaxRunning = 64
	}
	if c.ReserveWait <= 0 {
		c.ReserveWait = 30 * time.Second
	}
	if c.ReserveQueue <= 0 {
		c.ReserveQueue = 256
	}
	if c.CloseGrace <= 0 {
		c.CloseGrace = 2 * time.Second
	}
}

// Engine is the Machine behind a concurrency-safe API. Callers' goroutines
// admit requests and post typed messages to a mailbox; one goroutine, the
// shell (loop.go), steps them into the machine, runs the model on the
// batches it plans, and delivers its events. It is safe for concurrent use.
type Engine struct {
	cfg  Config
	fwd  Forwarder
	pool *kvcache.Pool
	adm  admission
	m    *Machine // the shell's only

	mu      sync.Mutex
	mailbox []mail // stepped by the shell, in order
	closed  bool   // no new requests
	exited  bool   // the shell is gone: nothing posted will be stepped
	stats   Stats
	wake    chan struct{}
	done    chan struct{}

	nextID  atomic.Uint64
	streams map[uint64]*stream // the shell's only: each live request's I/O
	res     StepResultMsg      // reused every step
	layers  []chan int         // reused: layer channels of a batch's pinned handoffs
}

// mail is one mailbox entry: a message for the machine, and for a
// request's first message the stream its outputs go to, or a status query.
type mail struct {
	msg    Msg
	id     uint64
	st     *stream
	status chan Status
}

// stream is a request's I/O as the shell sees it: where its events and its
// reservation's answer go, and the hook that stops watching its context.
type stream struct {
	events chan Event
	reply  chan reserveReply // Reserve only
	ready  chan int          // a pinned handoff's layer channel
	stop   func() bool
}

type reserveReply struct {
	pages []int32
	err   error
}

// New builds an engine over fwd and pool and starts its shell. It fails,
// naming both numbers, when the pool cannot hold one request of the maximum
// context (DESIGN I3); there is no way to skip that check.
func New(cfg Config, fwd Forwarder, pool *kvcache.Pool) (*Engine, error) {
	_, layered := fwd.(layerForwarder)
	m, err := NewMachine(cfg, pool, layered)
	if err != nil {
		return nil, err
	}
	e := &Engine{
		cfg: m.cfg, fwd: fwd, pool: pool, adm: m.admission(), m: m,
		wake: make(chan struct{}, 1), done: make(chan struct{}), streams: map[uint64]*stream{},
	}
	e.refreshStats()
	go e.loop()
	return e, nil
}

// MaxContext is the configured maximum context in tokens.
func (e *Engine) MaxContext() int { return e.cfg.MaxContext }

// Pool exposes the KV pool (for accounting checks and metrics).
func (e *Engine) Pool() *kvcache.Pool { return e.pool }

// Ready reports whether the engine accepts requests.
func (e *Engine) Ready() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.closed
}

// Stats returns a snapshot taken after the last step.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stats
}

// Submit admits req and queues it. Admission happens here, before any page
// is allocated (DESIGN I4): an oversized prompt returns *ContextLengthError
// and a malformed request an error wrapping ErrInvalidRequest, synchronously.
// On success the returned channel delivers the request's tokens and ends
// with one event carrying Finish or Err, then closes. Cancelling ctx aborts
// the request and frees its pages at the next step boundary.
func (e *Engine) Submit(ctx context.Context, req Request) (<-chan Event, error) {
	msg, err := e.adm.admit(e.nextID.Add(1), req, false)
	if err != nil {
		return nil, err
	}
	st := &stream{events: make(chan Event, req.MaxTokens+1)}
	if err := e.open(ctx, msg.ID, msg, st); err != nil {
		return nil, err
	}
	return st.events, nil
}

// open posts a request's first message with its stream and ties its
// cancellation to ctx. st.stop is set before the shell can see the stream.
func (e *Engine) open(ctx context.Context, id uint64, msg Msg, st *stream) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrShuttingDown
	}
	if ctx.Err() != nil {
		// Already cancelled: the CancelMsg goes in right behind the
		// request, so the machine takes both before it runs a step. Left
		// to AfterFunc's goroutine, a short prefill could finish first and
		// answer success for a request its caller had given up on.
		st.stop = func() bool { return false }
		e.mailbox = append(e.mailbox, mail{msg: msg, id: id, st: st}, mail{msg: &CancelMsg{ID: id}})
		e.poke()
		return nil
	}
	// Registered under the lock: the cancel callback posts under the lock
	// too, so its CancelMsg reaches the machine after the request does.
	st.stop = context.AfterFunc(ctx, func() { _ = e.post(&CancelMsg{ID: id}) })
	e.mailbox = append(e.mailbox, mail{msg: msg, id: id, st: st})
	e.poke()
	return nil
}

// post queues msg for the machine, also while Close waits for transfers;
// it fails only once the shell has exited.
func (e *Engine) post(msg Msg) error {
	return e.postMail(mail{msg: msg})
}

func (e *Engine) postMail(m mail) error {
	e.mu.Lock()
	if e.exited {
		e.mu.Unlock()
		return ErrShuttingDown
	}
	e.mailbox = append(e.mailbox, m)
	e.mu.Unlock()
	e.poke()
	return nil
}

func (e *Engine) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Close stops the engine. Requests still live end with ErrShuttingDown and
// their pages are freed; transfers in flight get Config.CloseGrace to end
// (their Done and Release are still accepted), then their pages are freed
// too. Close returns when the shell has exited.
func (e *Engine) Close() {
	e.mu.Lock()
	if !e.closed {
		e.closed = true
		e.mailbox = append(e.mailbox, mail{msg: &CloseMsg{}})
	}
	e.mu.Unlock()
	e.poke()
	<-e.done
}
