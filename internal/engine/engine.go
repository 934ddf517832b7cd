package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
	"github.com/bulkhead-llm/bulkhead/internal/model"
	"github.com/bulkhead-llm/bulkhead/internal/sample"
	"github.com/bulkhead-llm/bulkhead/internal/sched"
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

// Engine owns the scheduler, the KV pool and the model. One goroutine, the
// step loop, calls the scheduler and the model; Submit and cancellation
// reach it through an inbox. It is safe for concurrent use.
type Engine struct {
	cfg    Config
	fwd    Forwarder
	pool   *kvcache.Pool
	sched  *sched.Scheduler
	limits sched.Limits

	mu      sync.Mutex
	inbox   []func() // run by the loop, in order
	cancels []uint64
	closed  bool // no new requests
	exited  bool // the loop is gone: nothing posted will run
	stats   Stats
	wake    chan struct{}
	done    chan struct{}

	nextID      atomic.Uint64
	jobs        map[uint64]*job // owned by the loop
	preemptions uint64          // owned by the loop
	resq        fairQueue       // reservations waiting for pages, owned by the loop
	stopping    bool            // the loop is shutting down (loop only)
	aborts      abortLog        // owned by the loop; see status.go
}

// job is one request as the loop sees it.
type job struct {
	id      uint64
	req     Request
	adm     *sched.Admitted
	events  chan Event
	sampler *sample.Sampler
	stop    func() bool // deregisters the context callback
	stopSet []int32
	n       int // tokens emitted
	// transferring: decode side, KV still arriving; only the transfer's
	// Reservation.Done may end the job.
	transferring bool
	// ready: prefill side, pages pinned for a transfer that streams each
	// layer as the last chunk's forward pass completes it.
	ready chan int
}

// New builds an engine over fwd and pool and starts its step loop. It fails,
// naming both numbers, when the pool cannot hold one request of the maximum
// context (DESIGN I3); there is no way to skip that check.
func New(cfg Config, fwd Forwarder, pool *kvcache.Pool) (*Engine, error) {
	cfg.defaults()
	if cfg.VocabSize < 1 {
		return nil, fmt.Errorf("engine: VocabSize %d must be positive", cfg.VocabSize)
	}
	s, err := sched.New(sched.Config{TokenBudget: cfg.TokenBudget, MaxRunning: cfg.MaxRunning, MaxContext: cfg.MaxContext}, pool)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e := &Engine{
		cfg: cfg, fwd: fwd, pool: pool, sched: s, limits: s.Limits(),
		wake: make(chan struct{}, 1), done: make(chan struct{}), jobs: map[uint64]*job{},
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
	j, err := e.newJob(req, false)
	if err != nil {
		return nil, err
	}
	if err := e.enqueue(ctx, j); err != nil {
		return nil, err
	}
	return j.events, nil
}

// newJob validates and admits req. Admission (DESIGN I4) happens here,
// before the request reaches the loop, so nothing is allocated for a
// request that cannot be served.
func (e *Engine) newJob(req Request, prefillOnly bool) (*job, error) {
	if err := e.validate(req); err != nil {
		return nil, err
	}
	stopSet := slices.Clone(req.StopTokens)
	if !req.IgnoreEOS {
		stopSet = append(stopSet, e.cfg.EOG...)
	}
	smp, err := sample.New(samplerParams(req, stopSet))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	id := e.nextID.Add(1)
	adm, err := sched.Admit(sched.Request{
		ID: id, Tenant: req.Tenant, Salt: string(req.CacheSalt), PrefillOnly: prefillOnly,
		Prompt: slices.Clone(req.Prompt), MaxTokens: req.MaxTokens, Stop: stopSet,
	}, e.limits)
	if err != nil {
		var cl *ContextLengthError
		if errors.As(err, &cl) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	return &job{id: id, req: req, adm: adm, events: make(chan Event, req.MaxTokens+1), sampler: smp, stopSet: stopSet}, nil
}

// enqueue hands j to the loop and ties its cancellation to ctx.
func (e *Engine) enqueue(ctx context.Context, j *job) error {
	return e.enqueueFn(ctx, j, func() { e.start(j) })
}

// enqueueFn ties j's cancellation to ctx and posts fn, which takes j in,
// to the loop. j.stop is set here, before the loop can see j, so the loop
// never finds it unset.
func (e *Engine) enqueueFn(ctx context.Context, j *job, fn func()) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrShuttingDown
	}
	// Registered under the lock: a cancel callback needs the lock too, so
	// its id reaches the loop after the job does.
	j.stop = context.AfterFunc(ctx, func() { e.cancel(j.id) })
	e.inbox = append(e.inbox, fn)
	e.poke()
	return nil
}

// postAlways runs fn on the loop, also while Close drains transfers; it
// fails only once the loop has exited.
func (e *Engine) postAlways(fn func()) error {
	e.mu.Lock()
	if e.exited {
		e.mu.Unlock()
		return ErrShuttingDown
	}
	e.inbox = append(e.inbox, fn)
	e.mu.Unlock()
	e.poke()
	return nil
}

// start hands a submitted job to the scheduler (loop only).
func (e *Engine) start(j *job) {
	e.jobs[j.id] = j
	if err := e.sched.Submit(j.adm); err != nil {
		e.end(j.id, Event{Err: fmt.Errorf("%w: %v", ErrInvalidRequest, err)})
	}
}

func (e *Engine) validate(req Request) error {
	switch {
	case len(req.Prompt) == 0:
		return fmt.Errorf("%w: the prompt is empty", ErrInvalidRequest)
	case req.MaxTokens < 1:
		return fmt.Errorf("%w: max tokens %d must be at least 1", ErrInvalidRequest, req.MaxTokens)
	case req.TopLogprobs < 0 || req.TopLogprobs > 20:
		return fmt.Errorf("%w: top logprobs %d must be in [0, 20]", ErrInvalidRequest, req.TopLogprobs)
	}
	for i, t := range req.Prompt {
		if t < 0 || int(t) >= e.cfg.VocabSize {
			return fmt.Errorf("%w: prompt token %d at position %d is outside the vocabulary [0, %d)", ErrInvalidRequest, t, i, e.cfg.VocabSize)
		}
	}
	// Over-long generation is clipped by the context, not rejected: the
	// request finishes with reason "length" when the context is full.
	return nil
}

func (e *Engine) cancel(id uint64) {
	e.mu.Lock()
	e.cancels = append(e.cancels, id)
	e.mu.Unlock()
	e.poke()
}

func (e *Engine) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Close stops the loop. Requests still live end with ErrShuttingDown and
// their pages are freed; transfers in flight get Config.CloseGrace to end
// (their Done and Release are still accepted), then their pages are freed
// too. Close returns when the loop has exited.
func (e *Engine) Close() {
	e.mu.Lock()
	already := e.closed
	e.closed = true
	e.mu.Unlock()
	if !already {
		e.poke()
	}
	<-e.done
}

// samplerParams maps a request's sampling settings onto the sampler's.
func samplerParams(req Request, stopSet []int32) sample.Params {
	sp := req.Sampling
	p := sample.Params{
		Temperature: float64(sp.Temperature), TopK: sp.TopK,
		TopP: float64(sp.TopP), MinP: float64(sp.MinP), Seed: sp.Seed,
		LogitBias: sp.LogitBias, PresencePenalty: sp.PresencePenalty, FrequencyPenalty: sp.FrequencyPenalty,
		RepetitionPenalty: sp.RepetitionPenalty, MinTokens: sp.MinTokens,
		Constraint: sp.Constraint,
	}
	if sp.MinTokens > 0 {
		p.Suppress = stopSet
	}
	if sp.RepetitionPenalty != 0 && sp.RepetitionPenalty != 1 {
		p.Prompt = req.Prompt
	}
	return p
}
