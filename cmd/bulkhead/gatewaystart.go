package main

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bulkhead-llm/bulkhead/internal/api"
	"github.com/bulkhead-llm/bulkhead/internal/gateway"
	"github.com/bulkhead-llm/bulkhead/internal/tenant"
)

// lateServer serves a gateway that may start before its workers: until the
// gateway has its tokenizer, /health answers ok and everything else 503
// (so /ready is false and a process manager waits); then the API takes
// over.
type lateServer struct {
	srv atomic.Pointer[api.Server]
}

func newLateServer(ctx context.Context, g *gateway.Gateway, eng api.Engine, cfg api.Config, tenants *tenant.Registry, logger *slog.Logger) *lateServer {
	ls := &lateServer{}
	start := func() { ls.srv.Store(api.NewServer(cfg, eng, g.Tokenizer(), tenants, logger)) }
	select {
	case <-g.Started(): // the usual case: workers were up first
		start()
		return ls
	default:
	}
	go func() {
		select {
		case <-g.Started():
			start()
			logger.Info("gateway started: workers answered")
		case <-ctx.Done():
		}
	}()
	return ls
}

func (ls *lateServer) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if s := ls.srv.Load(); s != nil {
		s.ServeHTTP(rw, r)
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/health" {
		rw.Write([]byte(`{"status":"ok"}` + "\n"))
		return
	}
	rw.Header().Set("Retry-After", "1")
	rw.WriteHeader(http.StatusServiceUnavailable)
	rw.Write([]byte(`{"error":{"message":"no worker has answered yet","type":"server_error","param":null,"code":"not_ready"}}` + "\n"))
}

// MetricsHandler serves the API server's metrics once it exists, and 503 before.
func (ls *lateServer) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if s := ls.srv.Load(); s != nil {
			s.MetricsHandler().ServeHTTP(rw, r)
			return
		}
		http.Error(rw, "gateway not started: no worker has answered yet", http.StatusServiceUnavailable)
	})
}

// MetricsGatherer is the API server's registry once it exists, and nil
// before (the admin page then carries the pod metrics alone).
func (ls *lateServer) MetricsGatherer() prometheus.Gatherer {
	if s := ls.srv.Load(); s != nil {
		return s.MetricsGatherer()
	}
	return nil
}

func (ls *lateServer) Shutdown(ctx context.Context) error {
	if s := ls.srv.Load(); s != nil {
		return s.Shutdown(ctx)
	}
	return nil
}
