package pagemap

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
)

//go:embed page.html
var page []byte

// Source is one engine the page map draws.
type Source struct {
	Role   string // serve, prefill or decode
	Engine *engine.Engine
}

// Options configure a Handler.
type Options struct {
	Sources []Source
	// Metrics, when set, is the server's /metrics handler; its samples are
	// shown as the page's counters.
	Metrics http.Handler
	// Workers are base URLs of workers' page maps (gateway view); each
	// snapshot fetches URL + "/ui/state".
	Workers []string
	Client  *http.Client // for Workers; default a client with a 2 s timeout
	// Gateway, when set, is the gateway this view runs in: its workers'
	// health and drift state and its refusals are shown.
	Gateway GatewaySource
	// Interval between events on /ui/events; default 150 ms, so a browser
	// sees more than 5 updates a second even when a step delays a snapshot.
	Interval time.Duration
}

// Handler serves /ui, /ui/state and /ui/events.
type Handler struct {
	o   Options
	mux *http.ServeMux

	mu   sync.Mutex // guards the snapshot cache and bufs
	last []byte
	at   time.Time
	bufs [][]kvcache.PageInfo
}

var _ http.Handler = (*Handler)(nil)

// New returns a page map over o.
func New(o Options) *Handler {
	if o.Interval <= 0 {
		o.Interval = 150 * time.Millisecond
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 2 * time.Second}
	}
	h := &Handler{o: o, mux: http.NewServeMux(), bufs: make([][]kvcache.PageInfo, len(o.Sources))}
	h.mux.HandleFunc("GET /ui", h.servePage)
	h.mux.HandleFunc("GET /ui/state", h.serveState)
	h.mux.HandleFunc("GET /ui/events", h.serveEvents)
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func (h *Handler) servePage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
	w.Write(page)
}

func (h *Handler) serveState(w http.ResponseWriter, r *http.Request) {
	b, err := h.snapshot(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// serveEvents streams a snapshot every Interval until the client leaves.
func (h *Handler) serveEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	tick := time.NewTicker(h.o.Interval)
	defer tick.Stop()
	for {
		if b, err := h.snapshot(r.Context()); err == nil {
			fmt.Fprintf(w, "data: %s\n\n", b)
		} else {
			fmt.Fprintf(w, "event: failure\ndata: %q\n\n", err.Error())
		}
		fl.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

// snapshot returns the current state as JSON. Viewers share one snapshot
// per half interval, so more browsers do not mean more work for the engine.
func (h *Handler) snapshot(ctx context.Context) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last != nil && time.Since(h.at) < h.o.Interval/2 {
		return h.last, nil
	}
	st := State{Time: time.Now().UTC(), View: "engine", Counters: map[string]float64{}}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for i, src := range h.o.Sources {
		ps, buf, err := poolState(ctx, src, h.bufs[i])
		h.bufs[i] = buf
		if err != nil {
			return nil, fmt.Errorf("pagemap: %s engine: %w", src.Role, err)
		}
		st.Pools = append(st.Pools, ps)
	}
	if len(h.o.Workers) > 0 {
		st.View = "gateway"
		st.Workers = h.fetchWorkers(ctx)
	}
	if h.o.Gateway != nil {
		st.View = "gateway"
		st.Gateway = snapshotGateway(h.o.Gateway)
	}
	if h.o.Metrics != nil {
		scrape(h.o.Metrics, st.Counters)
	}
	b, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	h.last, h.at = b, time.Now()
	return b, nil
}

// fetchWorkers asks every worker for its state, concurrently.
func (h *Handler) fetchWorkers(ctx context.Context) []WorkerState {
	out := make([]WorkerState, len(h.o.Workers))
	var wg sync.WaitGroup
	for i, u := range h.o.Workers {
		out[i].URL = u
		wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u+"/ui/state", nil)
			if err != nil {
				out[i].Error = err.Error()
				return
			}
			resp, err := h.o.Client.Do(req)
			if err != nil {
				out[i].Error = err.Error()
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				out[i].Error = resp.Status
				return
			}
			var st State
			if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
				out[i].Error = err.Error()
				return
			}
			out[i].Healthy, out[i].State = true, &st
		})
	}
	wg.Wait()
	return out
}
