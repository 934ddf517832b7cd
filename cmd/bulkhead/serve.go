package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/api"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/loader"
	"github.com/bulkhead-llm/bulkhead/internal/pagemap"
	"github.com/bulkhead-llm/bulkhead/internal/tenant"
)

// serveOptions are the flags of serve (and the parts of worker and demo that
// build a local engine).
type serveOptions struct {
	model       string
	name        string
	listen      string
	tenantsFile string
	threads     int
	pool        loader.PoolOptions
	kvMemory    byteSize
	tokenBudget int
	maxRunning  int
	drain       time.Duration
	logLevel    string
	tenants     *tenant.Registry // in-process callers (self-check, demo); else tenantsFile
	tls         tlsFlags         // worker: mutual-TLS credentials (certs.go)
	trust       trustOptions     // trust.go
	ui          uiOptions        // the live page map, see ui.go

	metricsListen string    // podmetrics.go
	llmd          llmdFlags // worker: llm-d's protocol (llmd.go)
}

// registerEngine adds the flags of everything that runs a local engine
// (serve, worker, generate): model, threads, context and KV pool.
func (o *serveOptions) registerEngine(fs *flag.FlagSet) {
	fs.StringVar(&o.model, "model", "", "GGUF model file (default: the built-in copy model, no download)")
	fs.StringVar(&o.name, "name", "", "model id served to clients (default: general.name of the model)")
	fs.IntVar(&o.threads, "threads", 0, "compute threads (default: all cores)")
	fs.IntVar(&o.pool.MaxContext, "max-context", 0, "maximum tokens per sequence, prompt and output (default: the model's context length)")
	fs.IntVar(&o.pool.KVTokens, "kv-tokens", 0, "KV pool capacity in tokens (default: a share of free memory)")
	fs.Var(&o.kvMemory, "kv-memory", "KV pool memory budget, e.g. 2GiB or 512MiB (default: 25% of available memory, at most 64 maximum-length sequences)")
	fs.IntVar(&o.pool.PageSize, "page-size", 0, "tokens per KV page (default 16)")
	fs.BoolVar(&o.pool.F32, "kv-f32", false, "store KV as F32 instead of F16")
	fs.BoolVar(&o.pool.Poison, "kv-poison", false, "debug: fill freed KV pages with NaN so a stale read is loud")
	fs.IntVar(&o.tokenBudget, "token-budget", 512, "tokens per forward step (prefill chunks and decodes together)")
	fs.IntVar(&o.maxRunning, "max-running", 64, "sequences decoded together at most")
	o.trust.registerEngine(fs)
}

// register adds the engine flags and those of a long-running server.
func (o *serveOptions) register(fs *flag.FlagSet) {
	registerLenient(fs)
	registerMetricsListen(fs, &o.metricsListen)
	o.registerEngine(fs)
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.DurationVar(&o.drain, "drain-timeout", 30*time.Second, "on SIGTERM, how long in-flight requests may finish before they are aborted")
	o.ui.register(fs)
}

func runServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", "[flags]", stderr)
	var o serveOptions
	o.register(fs)
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "address to serve the HTTP API on")
	fs.StringVar(&o.tenantsFile, "tenants", "", "tenants file (TOML): ids, API key hashes, limits (default: one anonymous tenant, no auth)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (stopped at shutdown), for `go tool pprof`")
	o.trust.registerServer(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return &exitCode{2, fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, o, stderr, func(addr string) {
		fmt.Fprintf(stderr, "bulkhead: serving the OpenAI API on http://%s/v1 (Ctrl-C to stop)\n", addr)
	})
}

// serve loads the model, builds the engine (the capacity check runs here,
// before anything listens), and serves until ctx ends; then it drains.
// ready is called with the bound address once the listener is up.
func serve(ctx context.Context, o serveOptions, stderr io.Writer, ready func(addr string)) error {
	tenants := o.tenants
	if o.tenantsFile != "" {
		var err error
		if tenants, err = tenant.LoadFile(o.tenantsFile); err != nil {
			return &exitCode{2, err}
		}
	}
	if err := o.trust.applySecret(tenants); err != nil {
		return err
	}
	m, eng, logger, err := o.startEngine(stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	defer eng.Close()
	pm := engineMetrics("serve", eng, nil)
	srv := api.NewServer(api.Config{ModelID: m.Name, ParseSpecial: o.trust.parseSpecial, Lenient: lenient}, trackedEngine{eng, pm}, m.Tok, tenants, logger)
	metrics := adminMetrics(srv.MetricsGatherer, pm.Gatherer())
	if err := startPodMetrics(ctx, o.metricsListen, metrics, true, logger); err != nil {
		return err
	}
	uiOpts := o.ui.options(pagemap.Options{Sources: []pagemap.Source{{Role: "serve", Engine: eng}}, Metrics: metrics})
	stop, err := startOperatorViews(&o.trust, &o.ui, metrics, uiOpts, logger, stderr)
	if err != nil {
		return err
	}
	defer stop()
	return listenAndServe(ctx, o.listen, srv, o.drain, logger, ready)
}

// startEngine validates the options, loads the model (progress on stderr)
// and builds its engine; the capacity check (I3) runs here, before anything
// listens. The caller closes both.
func (o *serveOptions) startEngine(stderr io.Writer) (*loader.Model, *engine.Engine, *slog.Logger, error) {
	o.pool.KVMemory = int64(o.kvMemory)
	logger, err := newLogger(o.logLevel, stderr)
	if err != nil {
		return nil, nil, nil, &exitCode{2, err}
	}
	if err := o.pool.Validate(); err != nil {
		return nil, nil, nil, &exitCode{2, err}
	}
	m, err := loader.Load(loader.Options{Path: o.model, Name: o.name, Threads: o.threads, Progress: stderr})
	if err != nil {
		return nil, nil, nil, err
	}
	if err := o.trust.checkContext(o.pool.MaxContext, &m.Model.Config, logger); err != nil {
		m.Close()
		return nil, nil, nil, err
	}
	eng, err := m.NewEngine(o.pool, engine.Config{TokenBudget: o.tokenBudget, MaxRunning: o.maxRunning})
	if err != nil {
		m.Close()
		return nil, nil, nil, err
	}
	fmt.Fprintf(stderr, "KV pool: %d pages of %d tokens (%d tokens), max context %d\n",
		eng.Pool().UsablePages(), eng.Pool().PageSize(), eng.Pool().Tokens(), eng.MaxContext())
	return m, eng, logger, nil
}

// drainer is an http.Handler that can finish its in-flight work.
type drainer interface {
	http.Handler
	Shutdown(context.Context) error
}

// listenAndServe serves h on addr until ctx ends, then lets in-flight
// requests finish for up to drain before aborting them.
func listenAndServe(ctx context.Context, addr string, h drainer, drain time.Duration, logger *slog.Logger, ready func(string)) error {
	return listenAndServeTLS(ctx, addr, nil, h, drain, logger, ready)
}

// listenAndServeTLS is listenAndServe with TLS when tlsCfg is set.
func listenAndServeTLS(ctx context.Context, addr string, tlsCfg *tls.Config, h drainer, drain time.Duration, logger *slog.Logger, ready func(string)) error {
	ln, err := tlsListen(addr, tlsCfg)
	if err != nil {
		return err
	}
	hs := api.NewHTTPServer(addr, h)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	if ready != nil {
		ready(ln.Addr().String())
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down: draining in-flight requests", "timeout", drain)
	dctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	derr := h.Shutdown(dctx)
	sctx, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	if derr != nil {
		logger.Warn("drain incomplete", "err", derr)
	}
	return nil
}

func newLogger(level string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}
