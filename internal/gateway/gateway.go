// Package gateway fronts a disaggregated deployment: it speaks the same
// OpenAI API as `bulkhead serve` (through internal/api, for which it is the
// Engine), admits every request before any worker hears of it (DESIGN I4),
// pairs a decode worker with a prefill worker per request, and keeps
// traffic away from workers whose configuration drifted.
//
// Drift: at start and then every CheckInterval the gateway reads each
// worker's /v1/worker/info and compares it with the reference, taken from
// the flags or else from the first worker that answered: model digest, page
// size, KV dtype, layers, KV width and max context must be equal, the pool
// must hold at least the max context (I3), and the role must be the one the
// worker was listed under. A worker that differs, or does not answer, gets
// no traffic until it matches again; each change is logged naming the
// worker and the value. Ready is false while no healthy prefill+decode pair
// exists.
package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/tokenizer"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

// Config lists the workers and what they must agree on.
type Config struct {
	Prefill, Decode []string // worker base URLs, e.g. http://127.0.0.1:9001
	// MaxContext, when positive, is the context the gateway advertises and
	// requires of workers; 0 takes the reference worker's.
	MaxContext int
	// ModelDigest, when set, is the model every worker must run; "" takes
	// the reference worker's.
	ModelDigest   string
	CheckInterval time.Duration // default 5s
	// ReserveTimeout bounds the wait for a decode worker's reservation
	// (it queues when its pool is full); default 45s.
	ReserveTimeout time.Duration
	// PrefillTimeout bounds a prefill call, queueing, compute and
	// transfer included; default 120s.
	PrefillTimeout time.Duration
	// StreamIdle bounds the gap between two lines of a decode stream;
	// default 60s.
	StreamIdle time.Duration
	Logger     *slog.Logger
	Client     *http.Client // default: keep-alive client with a 5s dial timeout
}

// member is one worker as the gateway sees it.
type member struct {
	url     string
	role    worker.Role
	healthy bool
	problem string // why it is unhealthy, for logs
	info    worker.Info
	// inflight counts this gateway's requests on the worker now; with the
	// last reported free pages it ranks workers (see ranked).
	inflight *atomic.Int64
}

// Gateway routes requests to workers. It implements api.Engine.
type Gateway struct {
	cfg    Config
	client *http.Client
	log    *slog.Logger
	tok    *tokenizer.Tokenizer
	model  string

	mu      sync.Mutex
	want    worker.Info // the reference configuration
	members []*member
	rr      [2]uint64 // round-robin counters: prefill, decode

	refusals refusalLog // for the page map (observe.go)

	nextID  atomic.Uint64
	started chan struct{} // closed by tryStart
	stop    context.CancelFunc
	done    chan struct{}
}

// New checks every worker once and, if one answers, fixes the reference
// configuration and fetches the tokenizer from a healthy worker. Workers
// that are not up yet are no error: the gateway starts not ready and
// probes them with backoff (100ms doubling to CheckInterval) until it can
// start, then checks every CheckInterval (see Started).
func New(ctx context.Context, cfg Config) (*Gateway, error) {
	if len(cfg.Prefill) == 0 || len(cfg.Decode) == 0 {
		return nil, fmt.Errorf("gateway: need at least one prefill and one decode worker (got %d and %d)", len(cfg.Prefill), len(cfg.Decode))
	}
	if cfg.CheckInterval <= 0 {
		cfg.CheckInterval = 5 * time.Second
	}
	if cfg.ReserveTimeout <= 0 {
		cfg.ReserveTimeout = 45 * time.Second
	}
	if cfg.PrefillTimeout <= 0 {
		cfg.PrefillTimeout = 120 * time.Second
	}
	if cfg.StreamIdle <= 0 {
		cfg.StreamIdle = 60 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 64,
		}}
	}
	g := &Gateway{cfg: cfg, client: cfg.Client, log: cfg.Logger, done: make(chan struct{})}
	g.nextID.Store(uint64(time.Now().UnixNano()) << 16) // distinct across gateway restarts
	for _, u := range cfg.Prefill {
		g.members = append(g.members, &member{url: strings.TrimRight(u, "/"), role: worker.Prefill, inflight: new(atomic.Int64)})
	}
	for _, u := range cfg.Decode {
		g.members = append(g.members, &member{url: strings.TrimRight(u, "/"), role: worker.Decode, inflight: new(atomic.Int64)})
	}
	g.started = make(chan struct{})
	if !g.tryStart(ctx) {
		g.log.Warn("gateway: no worker ready yet; probing with backoff", "prefill", cfg.Prefill, "decode", cfg.Decode)
	}
	cctx, cancel := context.WithCancel(context.Background())
	g.stop = cancel
	go g.checkLoop(cctx)
	return g, nil
}

// tryStart reads every worker once; when one answers it fixes the
// reference configuration (from the flags or that worker), applies the
// infos, fetches the tokenizer and closes started. It reports whether the
// gateway has started.
func (g *Gateway) tryStart(ctx context.Context) bool {
	infos := g.fetchAll(ctx)
	want := worker.Info{}
	for i, m := range g.members {
		if infos[i].err == nil {
			want = infos[i].info
			if g.cfg.ModelDigest != "" {
				want.ModelDigest = g.cfg.ModelDigest
			}
			if g.cfg.MaxContext > 0 {
				want.MaxContext = g.cfg.MaxContext
			}
			g.log.Info("gateway reference configuration", "from", m.url, "model", want.Model,
				"digest", want.ModelDigest, "max_context", want.MaxContext, "page_size", want.PageSize, "kv_dtype", want.KVDType)
			break
		}
	}
	if want.ModelDigest == "" {
		return false
	}
	g.mu.Lock()
	g.want = want
	g.mu.Unlock()
	g.apply(infos)
	if err := g.fetchTokenizer(ctx); err != nil {
		g.log.Warn("gateway: tokenizer not fetched yet", "err", err)
		return false
	}
	close(g.started)
	return true
}

// Started is closed once the gateway has its reference configuration and
// tokenizer; until then it is not ready and refuses requests with 503.
func (g *Gateway) Started() <-chan struct{} { return g.started }

func (g *Gateway) isStarted() bool {
	select {
	case <-g.started:
		return true
	default:
		return false
	}
}

// Close stops the periodic check.
func (g *Gateway) Close() {
	g.stop()
	<-g.done
}

// Tokenizer is the model's tokenizer, fetched from a worker; nil until
// Started is closed.
func (g *Gateway) Tokenizer() *tokenizer.Tokenizer {
	if !g.isStarted() {
		return nil
	}
	return g.tok
}

// Model is the served model id ("" until Started is closed).
func (g *Gateway) Model() string {
	if !g.isStarted() {
		return ""
	}
	return g.model
}

type fetched struct {
	info worker.Info
	err  error
}

func (g *Gateway) fetchAll(ctx context.Context) []fetched {
	out := make([]fetched, len(g.members))
	var wg sync.WaitGroup
	for i, m := range g.members {
		wg.Go(func() {
			out[i].info, out[i].err = g.fetchInfo(ctx, m.url)
		})
	}
	wg.Wait()
	return out
}

func (g *Gateway) fetchInfo(ctx context.Context, url string) (worker.Info, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var in worker.Info
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/worker/info", nil)
	if err != nil {
		return in, err
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return in, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return in, fmt.Errorf("GET /v1/worker/info: %s", resp.Status)
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&in)
	in.Identity = provenIdentity(resp)
	return in, err
}

// apply records fresh infos, marking members healthy or not and logging
// every change of state with its reason.
func (g *Gateway) apply(infos []fetched) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, m := range g.members {
		problem := ""
		if infos[i].err != nil {
			problem = "unreachable: " + infos[i].err.Error()
		} else {
			m.info = infos[i].info
			problem = drift(g.want, m.role, m.info)
		}
		healthy := problem == ""
		if healthy != m.healthy || problem != m.problem {
			if healthy {
				g.log.Info("worker healthy", "worker", m.url, "role", m.role)
			} else {
				g.log.Warn("worker gets no traffic", "worker", m.url, "role", m.role, "reason", problem)
			}
		}
		m.healthy, m.problem = healthy, problem
	}
}

// drift names the first value in which a worker differs from the reference.
func drift(want worker.Info, role worker.Role, got worker.Info) string {
	differ := func(field string, g, w any) string {
		return fmt.Sprintf("%s is %v, want %v", field, g, w)
	}
	switch {
	case got.Role != role:
		return differ("role", got.Role, role)
	case got.ModelDigest != want.ModelDigest:
		return differ("model_digest", got.ModelDigest, want.ModelDigest)
	case got.PageSize != want.PageSize:
		return differ("page_size", got.PageSize, want.PageSize)
	case got.KVDType != want.KVDType:
		return differ("kv_dtype", got.KVDType, want.KVDType)
	case got.Layers != want.Layers:
		return differ("layers", got.Layers, want.Layers)
	case got.KVDim != want.KVDim:
		return differ("kv_dim", got.KVDim, want.KVDim)
	case got.MaxContext != want.MaxContext:
		return differ("max_context", got.MaxContext, want.MaxContext)
	case got.PoolTokens < want.MaxContext:
		return fmt.Sprintf("pool_tokens %d is below max_context %d", got.PoolTokens, want.MaxContext)
	case role == worker.Decode && got.KVAddr == "":
		return "decode worker reports no kv_addr"
	}
	return ""
}

func (g *Gateway) checkLoop(ctx context.Context) {
	defer close(g.done)
	for backoff := 100 * time.Millisecond; !g.isStarted(); backoff = min(2*backoff, g.cfg.CheckInterval) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		g.tryStart(ctx)
	}
	t := time.NewTicker(g.cfg.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			g.apply(g.fetchAll(ctx))
		}
	}
}

// Check re-reads every worker now (tests and operators need not wait for
// the next tick).
func (g *Gateway) Check(ctx context.Context) {
	if g.isStarted() {
		g.apply(g.fetchAll(ctx))
	}
}

// pick returns the best-ranked healthy member of role, or nil.
func (g *Gateway) pick(role worker.Role) *member {
	if r := g.ranked(role); len(r) > 0 {
		return r[0]
	}
	return nil
}

// ranked returns copies of the healthy members of role, least loaded
// first: fewest requests of ours in flight, then most free pages last
// reported, ties broken round robin so equal workers share the load.
func (g *Gateway) ranked(role worker.Role) []*member {
	g.mu.Lock()
	defer g.mu.Unlock()
	idx := 0
	if role == worker.Decode {
		idx = 1
	}
	var healthy []*member
	for _, m := range g.members {
		if m.role == role && m.healthy {
			c := *m
			healthy = append(healthy, &c)
		}
	}
	if len(healthy) == 0 {
		return nil
	}
	g.rr[idx]++
	off := int(g.rr[idx] % uint64(len(healthy)))
	healthy = append(healthy[off:], healthy[:off]...)
	sort.SliceStable(healthy, func(a, b int) bool {
		la, lb := healthy[a].inflight.Load(), healthy[b].inflight.Load()
		if la != lb {
			return la < lb
		}
		return healthy[a].info.PagesFree > healthy[b].info.PagesFree
	})
	return healthy
}

func (g *Gateway) fetchTokenizer(ctx context.Context) error {
	var lastErr error
	for _, role := range []worker.Role{worker.Decode, worker.Prefill} {
		m := g.pick(role)
		if m == nil {
			continue
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.url+"/v1/worker/vocab", nil)
		resp, err := g.client.Do(req)
		if err != nil {
			lastErr = err
			continue
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
		resp.Body.Close()
		if err != nil {
			lastErr = err
			continue
		}
		f, err := gguf.Parse(b)
		if err != nil {
			lastErr = err
			continue
		}
		if g.tok, err = tokenizer.FromGGUF(f); err != nil {
			lastErr = err
			continue
		}
		g.model = m.info.Model
		return nil
	}
	return fmt.Errorf("gateway: could not fetch the tokenizer from a healthy worker: %v", lastErr)
}
