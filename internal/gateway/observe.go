package gateway

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

// What the operator's page map reads from a gateway: each worker's health
// and drift state as the last check saw it, and the requests the gateway
// refused or lost, with the reason.

// MemberStatus is one worker as the last check saw it.
type MemberStatus struct {
	URL  string      `json:"url"`
	Role worker.Role `json:"role"`
	// State is "healthy", "unreachable" or "drift".
	State string `json:"state"`
	// Problem says why the worker gets no traffic, e.g. "max_context is
	// 256, want 512" for drift; "" when healthy.
	Problem string      `json:"problem,omitempty"`
	Info    worker.Info `json:"info"`
}

const unreachablePrefix = "unreachable: "

// Members reports every worker in the order the flags listed them.
func (g *Gateway) Members() []MemberStatus {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]MemberStatus, len(g.members))
	for i, m := range g.members {
		out[i] = MemberStatus{URL: m.url, Role: m.role, State: "healthy", Info: m.info}
		switch {
		case m.healthy:
		case strings.HasPrefix(m.problem, unreachablePrefix):
			out[i].State, out[i].Problem = "unreachable", strings.TrimPrefix(m.problem, unreachablePrefix)
		case m.problem == "": // never checked yet
			out[i].State, out[i].Problem = "unreachable", "not checked yet"
		default:
			out[i].State, out[i].Problem = "drift", m.problem
		}
	}
	return out
}

// Submit is submit with every refusal noted for the page map.
func (g *Gateway) Submit(ctx context.Context, req engine.Request) (<-chan engine.Event, error) {
	ch, err := g.submit(ctx, req)
	if err != nil && ctx.Err() == nil {
		if reason := g.refusalReason(err); reason != "" {
			g.refusals.note(engine.AbortInfo{Tenant: req.Tenant, Reason: reason, Detail: g.refusalDetail(reason, err), At: time.Now()})
		}
	}
	return ch, err
}

// Refusals are the most recent refusals, oldest first.
func (g *Gateway) Refusals() []engine.AbortInfo { return g.refusals.list() }

// handoffError marks a failed prefill-and-transfer: the KV never reached
// the decode worker (a NACK, a cut connection, a prefill failure).
type handoffError struct{ error }

func (e handoffError) Unwrap() error { return e.error }

// refusalReason classifies a refusal the way an operator asks about it;
// "" for the client's own doing (it left).
func (g *Gateway) refusalReason(err error) string {
	var ol *engine.OverloadedError
	var cl *engine.ContextLengthError
	var he handoffError
	var de *worker.DriftError
	switch {
	case errors.Is(err, engine.ErrAborted):
		return ""
	case errors.As(err, &de):
		return "drift"
	case errors.As(err, &ol):
		return "overload"
	case errors.As(err, &cl):
		return "context length"
	case errors.Is(err, engine.ErrInvalidRequest):
		return "invalid request"
	case errors.As(err, &he):
		return "rejected handoff"
	case errors.Is(err, engine.ErrShuttingDown) && g.isStarted():
		return g.noPairReason()
	}
	return "internal"
}

// noPairReason says why a request found no worker: "drift" when no healthy
// prefill+decode pair exists and a worker drifted, "no healthy worker" when
// none drifted, and "worker shutting down" when a pair exists (the worker
// chosen was draining).
func (g *Gateway) noPairReason() string {
	healthy := map[worker.Role]bool{}
	drifted := false
	for _, m := range g.Members() {
		healthy[m.Role] = healthy[m.Role] || m.State == "healthy"
		drifted = drifted || m.State == "drift"
	}
	switch {
	case healthy[worker.Prefill] && healthy[worker.Decode]:
		return "worker shutting down"
	case drifted:
		return "drift"
	}
	return "no healthy worker"
}

// refusalDetail adds, to a refusal for want of workers, why each
// unhealthy one gets no traffic.
func (g *Gateway) refusalDetail(reason string, err error) string {
	d := err.Error()
	if reason != "drift" && reason != "no healthy worker" {
		return d
	}
	// Drifted workers first: they are the operator's to fix.
	for _, state := range []string{"drift", "unreachable"} {
		for _, m := range g.Members() {
			if m.State == state {
				d += "; " + string(m.Role) + " " + m.URL + " " + m.State + ": " + m.Problem
			}
		}
	}
	return d
}

// maxRefusals bounds the refusal log.
const maxRefusals = 32

type refusalLog struct {
	mu     sync.Mutex
	recent []engine.AbortInfo
}

func (l *refusalLog) note(a engine.AbortInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.recent) == maxRefusals {
		l.recent = append(l.recent[:0], l.recent[1:]...)
	}
	l.recent = append(l.recent, a)
}

func (l *refusalLog) list() []engine.AbortInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.recent)
}
