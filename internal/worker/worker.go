package worker

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/bulkhead-llm/bulkhead/internal/certs"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
	"github.com/bulkhead-llm/bulkhead/internal/transfer"
)

// Version is reported by /v1/worker/info.
const Version = "bulkhead-worker/1"

// maxBody bounds request bodies (a 1M-token prompt is about 8 MB of JSON).
const maxBody = 32 << 20

// Engine is what a worker needs from its engine.
type Engine interface {
	Submit(ctx context.Context, req engine.Request) (<-chan engine.Event, error)
	Reserve(ctx context.Context, req engine.Request) (*engine.Reservation, error)
	Prefill(ctx context.Context, req engine.Request) (*engine.Handoff, error)
	MaxContext() int
	Stats() engine.Stats
	Ready() bool
	Pool() *kvcache.Pool
}

var _ Engine = (*engine.Engine)(nil)

// Config describes one worker.
type Config struct {
	Role        Role
	Model       string // served model id
	ModelDigest string // hex SHA-256 of the GGUF
	Layers      int
	KVDim       int
	// Vocab is a vocabulary-only GGUF the gateway builds its tokenizer from.
	Vocab []byte
	// KVListen is where a decode worker's transfer receiver listens.
	KVListen string
	// Transport carries KV bytes; nil means TCP.
	Transport transfer.Transport
	Logger    *slog.Logger
	// Creds, when set, make the HTTP API answer only the gateway and the
	// KV transfer mutual TLS (auth.go).
	Creds *certs.Credentials
	// LLMD, when set, also serves llm-d's prefill/decode protocol on the
	// OpenAI routes (llmd.go).
	LLMD *LLMDConfig
}

// Worker is the HTTP service of one prefill or decode worker.
type Worker struct {
	cfg    Config
	eng    Engine
	layout transfer.Layout
	log    *slog.Logger
	mux    *http.ServeMux
	recv   *transfer.Receiver // decode only

	mu      sync.Mutex
	senders map[string]*transfer.Sender // prefill: one per decode worker

	structured     structured    // decode: constraints (structured.go)
	llmd           *llmdState    // llmd.go; nil unless Config.LLMD
	engineID       string        // remote_engine_id in llm-d replies
	handoffRefused atomic.Uint64 // llm-d pulls refused (handle, peer or binding)
}

// New builds a worker over eng; a decode worker starts its transfer
// receiver on cfg.KVListen.
func New(cfg Config, eng Engine) (*Worker, error) {
	if cfg.Role != Prefill && cfg.Role != Decode {
		return nil, fmt.Errorf("worker: role %q: want prefill or decode", cfg.Role)
	}
	digest, err := hex.DecodeString(cfg.ModelDigest)
	if err != nil || len(digest) != 32 {
		return nil, fmt.Errorf("worker: model digest %q is not a hex SHA-256", cfg.ModelDigest)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	pool := eng.Pool()
	w := &Worker{cfg: cfg, eng: eng, log: cfg.Logger, senders: map[string]*transfer.Sender{},
		layout: transfer.Layout{PageSize: pool.PageSize(), DType: pool.DType(), Layers: cfg.Layers, KVDim: cfg.KVDim,
			MaxContext: eng.MaxContext()}}
	copy(w.layout.ModelDigest[:], digest)
	if err := w.layout.Validate(); err != nil {
		return nil, err
	}
	if cfg.Role == Decode {
		w.recv, err = transfer.Listen(cfg.KVListen, transfer.ReceiverConfig{
			Layout: w.layout, Transport: w.kvTransport(nil),
			OnError: func(err error) { w.log.Warn("KV transfer connection failed", "err", err) },
		})
		if err != nil {
			return nil, fmt.Errorf("worker: KV receiver: %w", err)
		}
	}
	w.engineID = "bulkhead-" + string(cfg.Role) + "-" + cfg.ModelDigest[:16]
	if cfg.Creds != nil {
		w.engineID = cfg.Creds.Identity.URI()
	}
	if cfg.LLMD != nil {
		w.initLLMD()
	}
	w.mux = http.NewServeMux()
	w.mux.HandleFunc("GET /v1/worker/info", w.info)
	w.mux.HandleFunc("GET /v1/worker/vocab", w.vocab)
	w.mux.HandleFunc("GET /health", func(rw http.ResponseWriter, _ *http.Request) { rw.Write([]byte("ok\n")) })
	w.mux.HandleFunc("GET /ready", w.ready)
	if cfg.Role == Decode {
		w.mux.HandleFunc("POST /v1/worker/decode", w.decode)
	} else {
		w.mux.HandleFunc("POST /v1/worker/prefill", w.prefill)
	}
	return w, nil
}

func (w *Worker) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if w.llmd != nil && w.llmd.openai != nil && isOpenAIPath(r.URL.Path) {
		w.serveLLMD(rw, r) // tenants by API key; the router by certificate
		return
	}
	if w.llmd != nil && w.cfg.Role == Prefill && r.URL.Path == pullPath && r.Method == http.MethodPost {
		w.pull(rw, r) // decode workers by certificate
		return
	}
	if w.cfg.Creds != nil {
		requireGateway(w.mux).ServeHTTP(rw, r)
		return
	}
	w.mux.ServeHTTP(rw, r)
}

// Shutdown closes the transfer side: a decode worker's pending reservations
// are aborted (their requests end with an error), a prefill worker's idle
// connections close. The engine is closed by its owner.
func (w *Worker) Shutdown(ctx context.Context) error {
	if d, ok := w.openAI().(drainer); ok {
		d.Shutdown(ctx) // in-flight generations finish or are aborted
	}
	if w.llmd != nil && w.llmd.handles != nil {
		w.llmd.handles.Close() // unfetched leases end now
	}
	if w.recv != nil {
		w.recv.Close()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for addr, s := range w.senders {
		s.Close()
		delete(w.senders, addr)
	}
	return nil
}

func (w *Worker) openAI() http.Handler {
	if w.llmd == nil {
		return nil
	}
	return w.llmd.openai
}

// Info reports the worker's configuration and load.
func (w *Worker) Info() Info {
	st := w.eng.Stats()
	pool := w.eng.Pool()
	in := Info{Role: w.cfg.Role, Model: w.cfg.Model, ModelDigest: w.cfg.ModelDigest,
		MaxContext: w.eng.MaxContext(), PoolTokens: pool.Tokens(), PageSize: pool.PageSize(),
		KVDType: pool.DType().String(), Layers: w.cfg.Layers, KVDim: w.cfg.KVDim, Version: Version,
		PagesFree: st.PagesFree + st.PagesCached, PagesTotal: st.PagesTotal, Running: st.Running, Waiting: st.Waiting}
	if w.recv != nil {
		in.KVAddr = w.recv.Addr()
	}
	if w.cfg.Creds != nil {
		in.Identity = w.cfg.Creds.Identity.URI()
	}
	return in
}

func (w *Worker) info(rw http.ResponseWriter, _ *http.Request) {
	writeJSON(rw, http.StatusOK, w.Info())
}

func (w *Worker) vocab(rw http.ResponseWriter, _ *http.Request) {
	rw.Header().Set("Content-Type", "application/octet-stream")
	rw.Write(w.cfg.Vocab)
}

func (w *Worker) ready(rw http.ResponseWriter, _ *http.Request) {
	if !w.eng.Ready() {
		writeJSON(rw, http.StatusServiceUnavailable, map[string]bool{"ready": false})
		return
	}
	writeJSON(rw, http.StatusOK, map[string]bool{"ready": true})
}

func writeJSON(rw http.ResponseWriter, status int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	json.NewEncoder(rw).Encode(v)
}

func writeError(rw http.ResponseWriter, err error) {
	status, body := EncodeError(err)
	if body.RetryAfterMs > 0 {
		rw.Header().Set("Retry-After", strconv.FormatInt(max(1, (body.RetryAfterMs+999)/1000), 10))
	}
	writeJSON(rw, status, struct {
		Error *ErrorBody `json:"error"`
	}{body})
}

// readJSON decodes a bounded body into v; a malformed one is a 400.
func readJSON(rw http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(rw, r.Body, maxBody))
	if err := dec.Decode(v); err != nil {
		writeError(rw, fmt.Errorf("%w: request body: %v", engine.ErrInvalidRequest, err))
		return false
	}
	return true
}

// storeSink and storeSource adapt the pool to the transfer engine.
func (w *Worker) storeSink(pages []int32) transfer.StoreSink {
	return transfer.StoreSink{Store: w.eng.Pool(), DType: w.layout.DType, KVDim: w.layout.KVDim, Pages: pages}
}

func (w *Worker) storeSource(pages []int32) transfer.StoreSource {
	return transfer.StoreSource{Store: w.eng.Pool(), DType: w.layout.DType, KVDim: w.layout.KVDim, Pages: pages}
}

// sender returns the (cached) transfer sender for a decode worker; key
// names the address and, with TLS, the identity accept demands.
func (w *Worker) sender(ctx context.Context, key, addr string, accept func(certs.Identity) error) (*transfer.Sender, error) {
	w.mu.Lock()
	s := w.senders[key]
	w.mu.Unlock()
	if s != nil {
		return s, nil
	}
	s, err := transfer.Dial(ctx, transfer.SenderConfig{Layout: w.layout, Transport: w.kvTransport(accept), Addr: addr})
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if old := w.senders[key]; old != nil {
		s.Close()
		return old, nil
	}
	w.senders[key] = s
	return s, nil
}

// dropSender forgets a sender whose peer failed, so the next request dials
// afresh (and handshakes again: a restarted decode worker may differ).
func (w *Worker) dropSender(addr string, s *transfer.Sender) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.senders[addr] == s {
		delete(w.senders, addr)
		s.Close()
	}
}
