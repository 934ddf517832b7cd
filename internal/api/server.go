package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/chat"
	"github.com/bulkhead-llm/bulkhead/internal/tenant"
	"github.com/bulkhead-llm/bulkhead/internal/tokenizer"
)

// Config holds the server's settings; zero values take the defaults.
type Config struct {
	// ModelID is the name clients pass as "model" and /v1/models lists.
	ModelID string
	// OwnedBy is /v1/models' owned_by (default "bulkhead").
	OwnedBy string
	// MaxBodyBytes bounds request bodies; larger ones get 413 (default 8 MiB).
	MaxBodyBytes int64
	// DefaultMaxTokens applies when a request sets no max_tokens; 0 means
	// OpenAI's defaults: 16 on /v1/completions, the rest of the context on
	// /v1/chat/completions.
	DefaultMaxTokens int
	// Lenient downgrades unknown request fields from a 400 to a logged
	// warning and the X-Bulkhead-Ignored-Fields response header. Known
	// fields with unsupported values are refused either way.
	Lenient bool
	// WriteTimeout bounds each write to a client, so one that stops
	// reading cannot hold a request forever (default 30s).
	WriteTimeout time.Duration
	// AbortGrace is how long Shutdown waits, after its deadline, for
	// aborted requests to send their error events (default 5s).
	AbortGrace time.Duration
	// ParseSpecial lets every tenant's text carry control tokens, as
	// llama-server does (default: user text is text; special.go).
	ParseSpecial bool
	// BodyBudget bounds the request-body bytes being read and decoded at
	// once across all requests (default 16 MiB; bounds.go).
	BodyBudget int64
	// KVTransfer admits llm-d's kv_transfer_params; nil refuses them
	// (kvtransfer.go).
	KVTransfer KVTransferGate
}

// Validate checks the configuration, naming the field at fault.
func (c *Config) Validate() error {
	switch {
	case c.ModelID == "":
		return errors.New("api: Config.ModelID must not be empty")
	case c.MaxBodyBytes < 0:
		return fmt.Errorf("api: Config.MaxBodyBytes %d must be >= 0", c.MaxBodyBytes)
	case c.DefaultMaxTokens < 0:
		return fmt.Errorf("api: Config.DefaultMaxTokens %d must be >= 0", c.DefaultMaxTokens)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.OwnedBy == "" {
		c.OwnedBy = "bulkhead"
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 8 << 20
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 30 * time.Second
	}
	if c.BodyBudget == 0 {
		c.BodyBudget = 16 << 20
	}
	if c.AbortGrace == 0 {
		c.AbortGrace = 5 * time.Second
	}
	return c
}

// Server is the OpenAI-compatible HTTP API over one engine, shared by the
// tenants of a registry. It is an http.Handler.
type Server struct {
	cfg      Config
	eng      Engine
	tok      Tokenizer
	tenants  *tenant.Registry
	log      *slog.Logger
	metrics  *metrics
	mux      *http.ServeMux
	chatTmpl *chat.Template
	chatErr  error      // why chat is unavailable, when chatTmpl is nil
	gvocab   vocabulary // the vocabulary trie for structured output
	grammars grammarCache

	// base is cancelled when Shutdown gives up waiting; every generation
	// context derives from it.
	base       context.Context
	cancelBase context.CancelFunc

	mu        sync.Mutex
	draining  bool
	inflight  int
	idle      chan struct{}
	closeIdle sync.Once

	bodies    *bodyGate // bounds.go
	pieceOnce sync.Once
	pieceMax  int
}

var _ http.Handler = (*Server)(nil)

// NewServer builds the API server. cfg must be valid (see Config.Validate).
// Without a tenants registry (nil) one anonymous tenant serves every key,
// and a warning is logged.
func NewServer(cfg Config, eng Engine, tok Tokenizer, tenants *tenant.Registry, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.Default()
	}
	if tenants == nil {
		tenants = tenant.Anonymous()
	}
	if t, ok := tok.(*tokenizer.Tokenizer); ok {
		tok = WrapTokenizer(t)
	}
	if tenants.IsAnonymous() {
		logger.Warn("no tenants file: every request is served as one anonymous tenant without authentication or limits")
	}
	s := &Server{cfg: cfg.withDefaults(), eng: eng, tok: tok, tenants: tenants, log: logger, idle: make(chan struct{})}
	s.base, s.cancelBase = context.WithCancel(context.Background())
	s.bodies = &bodyGate{budget: s.cfg.BodyBudget}
	s.chatTmpl, s.chatErr = chat.Compile(tok.ChatTemplate())
	if s.chatErr != nil {
		logger.Warn("chat completions unavailable", "err", s.chatErr)
	}
	s.metrics = newMetrics(eng)
	s.routes()
	return s
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /health", s.handleHealth)
	m.HandleFunc("GET /ready", s.handleReady)
	m.HandleFunc("GET /v1/models", s.authed(s.handleModels))
	m.HandleFunc("GET /v1/models/{id...}", s.authed(s.handleModel))
	m.HandleFunc("POST /v1/completions", s.authed(s.handleCompletions))
	m.HandleFunc("POST /v1/chat/completions", s.authed(s.handleChat))
	m.HandleFunc("POST /apply-template", s.authed(s.handleApplyTemplate))
	m.HandleFunc("POST /v1/chat/render", s.authed(s.handleApplyTemplate))
	m.HandleFunc("POST /tokenize", s.authed(s.handleTokenize))
	m.HandleFunc("POST /detokenize", s.authed(s.handleDetokenize))
	for _, path := range []string{"/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize", "/apply-template", "/v1/chat/render", "/v1/models", "/health", "/ready"} {
		m.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Type: typeInvalidRequest, Code: "method_not_allowed",
				Message: fmt.Sprintf("method %s is not allowed on %s", r.Method, r.URL.Path)})
		})
	}
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: typeInvalidRequest, Code: "not_found",
			Message: fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path)})
	})
	s.mux = m
}

// ServeHTTP gives every request an id (the X-Request-Id header and the
// request_id of every log line) and logs its outcome.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	info := &requestInfo{id: newRequestID(), start: time.Now()}
	base := s.log.With("request_id", info.id)
	info.log = base // handlers add the tenant once it is known
	w.Header().Set("X-Request-Id", info.id)
	rw := &statusWriter{ResponseWriter: w}
	s.mux.ServeHTTP(rw, r.WithContext(withInfo(r.Context(), info)))
	info.doneWithBody()
	base.Info("request", "method", r.Method, "path", r.URL.Path, "status", rw.status(),
		"tenant", info.tenantID(), "duration_ms", time.Since(info.start).Milliseconds(),
		"prompt_tokens", info.promptTokens, "completion_tokens", info.completionTokens)
}

// enter registers a generation; it fails once Shutdown has begun.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return false
	}
	s.inflight++
	return true
}

func (s *Server) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight--
	if s.draining && s.inflight == 0 {
		s.closeIdle.Do(func() { close(s.idle) })
	}
}

// Shutdown stops admitting generations (new ones get 503), waits for those
// in flight until ctx ends, then aborts the rest, whose streams end with an
// error event. Call it before http.Server.Shutdown, which then finds the
// connections idle.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.draining = true
	if s.inflight == 0 {
		s.closeIdle.Do(func() { close(s.idle) })
	}
	s.mu.Unlock()
	select {
	case <-s.idle:
		s.cancelBase()
		return nil
	case <-ctx.Done():
	}
	s.log.Warn("shutdown deadline reached; aborting requests still in flight")
	s.cancelBase()
	select {
	case <-s.idle:
	case <-time.After(s.cfg.AbortGrace):
	}
	return fmt.Errorf("api: shutdown: %w", ctx.Err())
}

// NewHTTPServer returns an http.Server for the handler with timeouts
// against slow clients: headers within 10s, the body within 60s, idle
// keep-alive connections closed after 2 minutes. There is no overall write
// timeout, since streams last as long as generation; the handler sets a
// deadline on each write instead.
func NewHTTPServer(addr string, handler http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}
