package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/admin"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/gateway"
	"github.com/bulkhead-llm/bulkhead/internal/podmetrics"
)

// The cluster-router metrics endpoint (internal/podmetrics). The admin
// listener serves it merged with the API's series (adminmetrics.go);
// --metrics-listen serves the same page on a listener of its own, kept so
// deployments that point the EPP's metrics port at it keep working.

func registerMetricsListen(fs *flag.FlagSet, dst *string) {
	fs.StringVar(dst, "metrics-listen", "", "address of a second listener serving the admin listener's /metrics (with the vLLM-compatible series a cluster router's endpoint picker reads) (default: off)")
}

// startPodMetrics serves h at /metrics on addr until ctx ends. An empty addr
// serves nothing. tenantLabels says h carries the API's per-tenant series
// (serve, gateway), which a non-loopback address exposes like the admin
// listener's.
func startPodMetrics(ctx context.Context, addr string, h http.Handler, tenantLabels bool, logger *slog.Logger) error {
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return &exitCode{2, err}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics listener", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if tenantLabels && !admin.Loopback(addr) {
		logger.Warn("--metrics-listen is not loopback-only: its /metrics names tenants and their usage; let only the endpoint picker reach it", "addr", ln.Addr().String())
	}
	logger.Info("pod metrics", "addr", ln.Addr().String())
	return nil
}

// trackedEngine feeds every request an engine runs into the pod metrics.
// Embedding keeps every other method (Stats, Pool, Ready...) unchanged.
type trackedEngine struct {
	*engine.Engine
	m *podmetrics.Metrics
}

func (t trackedEngine) Submit(ctx context.Context, req engine.Request) (<-chan engine.Event, error) {
	ch, err := t.Engine.Submit(ctx, req)
	if err != nil {
		return nil, err
	}
	return t.m.Track(ctx, len(req.Prompt), ch), nil
}

// Reserve is the decode worker's path: the prompt's KV arrives by
// transfer, so only the last prompt token is computed here.
func (t trackedEngine) Reserve(ctx context.Context, req engine.Request) (*engine.Reservation, error) {
	res, err := t.Engine.Reserve(ctx, req)
	if err != nil {
		return nil, err
	}
	res.Events = t.m.Track(ctx, 1, res.Events)
	return res, nil
}

// Prefill is the prefill worker's path: prompt tokens, no generation.
func (t trackedEngine) Prefill(ctx context.Context, req engine.Request) (*engine.Handoff, error) {
	h, err := t.Engine.Prefill(ctx, req)
	if err == nil {
		t.m.CountPrompt(len(req.Prompt))
	}
	return h, err
}

// trackedGateway does the same for the gateway's end-to-end view.
type trackedGateway struct {
	*gateway.Gateway
	m *podmetrics.Metrics
}

func (t trackedGateway) Submit(ctx context.Context, req engine.Request) (<-chan engine.Event, error) {
	ch, err := t.Gateway.Submit(ctx, req)
	if err != nil {
		return nil, err
	}
	return t.m.Track(ctx, len(req.Prompt), ch), nil
}

func engineMetrics(role string, eng *engine.Engine, iso podmetrics.IsolationSource) *podmetrics.Metrics {
	return podmetrics.New(eng, iso, podmetrics.Config{Role: role, BlockSize: eng.Pool().PageSize()})
}
