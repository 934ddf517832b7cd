package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/api"
	"github.com/bulkhead-llm/bulkhead/internal/certs"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
	"github.com/bulkhead-llm/bulkhead/internal/llmd"
)

// A worker with Config.LLMD also serves the OpenAI routes, for llm-d's
// routing sidecar (internal/llmd has the protocol). Tenants authenticate
// there by API key as on `serve`; kv_transfer_params are accepted only from
// an llm-d router: with credentials, a peer presenting the cluster CA's
// spiffe://bulkhead/router/<name> certificate, which stands for the decode
// worker decode/<name> beside it; without, a loopback peer when the
// operator opted in (TrustLoopback, for a sidecar in the same pod or a dev
// box). Everything else with the field gets a 400 naming it.

// LLMDConfig turns llm-d's protocol on.
type LLMDConfig struct {
	// Advertise is this prefill worker's API address as decode workers
	// reach it (remote_host/remote_port); default: the listener's.
	Advertise string
	// AdvertiseKV is this decode worker's transfer address as prefill
	// workers reach it; default: the receiver's.
	AdvertiseKV string
	// TrustLoopback makes a loopback peer count as the router when the
	// worker has no credentials.
	TrustLoopback bool
	// HandleTTL is how long prefill keeps a handle's KV leased for the
	// decode worker to fetch (default 30s, vLLM's kv_lease_duration).
	HandleTTL time.Duration
	// PullTimeout bounds a decode worker's whole fetch (default 60s).
	PullTimeout time.Duration
}

// pullPath is the prefill worker's endpoint a decode worker fetches a
// handle's KV from.
const pullPath = "/v1/llmd/pull"

type llmdState struct {
	cfg     LLMDConfig
	openai  http.Handler // the api.Server over llmdEngine
	handles *llmd.Table[*engine.Handoff]
	client  *http.Client // decode: to prefill workers' pull endpoints
}

func (w *Worker) initLLMD() {
	c := *w.cfg.LLMD
	if c.HandleTTL <= 0 {
		c.HandleTTL = 30 * time.Second
	}
	if c.PullTimeout <= 0 {
		c.PullTimeout = 60 * time.Second
	}
	w.llmd = &llmdState{cfg: c}
	if w.cfg.Role == Prefill {
		w.llmd.handles = &llmd.Table[*engine.Handoff]{TTL: c.HandleTTL, Expire: func(h *engine.Handoff, err error) {
			w.log.Warn("llm-d KV lease ended unfetched", "err", err)
			h.Release(err)
		}}
		return
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if w.cfg.Creds != nil {
		tr.TLSClientConfig = w.cfg.Creds.ClientConfig(certs.Role(certs.RolePrefill))
	}
	w.llmd.client = &http.Client{Transport: tr}
}

// ServeOpenAI mounts the OpenAI routes (an api.Server built over
// LLMDEngine with KVTransferGate) for llm-d. Shutdown drains it first when
// it has a Shutdown method, as api.Server does.
func (w *Worker) ServeOpenAI(h http.Handler) {
	w.llmd.openai = h
}

type drainer interface {
	Shutdown(context.Context) error
}

// LLMDEngine is the engine the OpenAI routes run on: the worker's own,
// with kv_transfer_params carried out by this worker's role.
func (w *Worker) LLMDEngine() api.Engine { return llmdEngine{w} }

// KVTransferGate admits kv_transfer_params from the router only.
func (w *Worker) KVTransferGate() api.KVTransferGate { return llmdGate{w} }

// OutstandingHandles is how many prefill leases wait to be fetched.
func (w *Worker) OutstandingHandles() int {
	if w.llmd == nil || w.llmd.handles == nil {
		return 0
	}
	return w.llmd.handles.Len()
}

func isOpenAIPath(p string) bool {
	switch p {
	case "/v1/completions", "/v1/chat/completions", "/v1/models":
		return true
	}
	return strings.HasPrefix(p, "/v1/models/")
}

// peer is who is on the other end of an OpenAI request.
type peer struct {
	id       certs.Identity
	verified bool // id was proven by a cluster CA certificate
	loopback bool
}

type peerKey struct{}

func (w *Worker) serveLLMD(rw http.ResponseWriter, r *http.Request) {
	var p peer
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		if id, err := certs.PeerIdentity(r.TLS); err == nil {
			p.id, p.verified = id, true
		}
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		ip := net.ParseIP(host)
		p.loopback = ip != nil && ip.IsLoopback()
	}
	w.llmd.openai.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), peerKey{}, p)))
}

func peerOf(ctx context.Context) peer {
	p, _ := ctx.Value(peerKey{}).(peer)
	return p
}

// router returns the router identity of the request's peer, or why it is
// not one.
func (w *Worker) router(ctx context.Context) (certs.Identity, error) {
	p := peerOf(ctx)
	if w.cfg.Creds != nil {
		if !p.verified {
			return certs.Identity{}, errors.New("they are accepted only from an llm-d router presenting a spiffe://bulkhead/router/<name> certificate from the cluster CA, and this client presented none")
		}
		if p.id.Role != certs.RoleRouter {
			return certs.Identity{}, fmt.Errorf("they are accepted only from an llm-d router; %s is not one", p.id)
		}
		return p.id, nil
	}
	if w.llmd.cfg.TrustLoopback && p.loopback {
		return certs.Identity{}, nil
	}
	return certs.Identity{}, errors.New("they are accepted only from an authenticated llm-d router (this worker has no TLS credentials and does not trust loopback peers)")
}

type llmdGate struct{ w *Worker }

func (g llmdGate) Admit(r *http.Request, raw json.RawMessage, stream bool) error {
	if _, err := g.w.router(r.Context()); err != nil {
		return err
	}
	p, err := llmd.Parse(raw)
	if err != nil {
		return err
	}
	switch {
	case p.DoRemoteDecode && g.w.cfg.Role != Prefill:
		return errors.New("do_remote_decode asks for a prefill, and this is a decode worker")
	case p.DoRemotePrefill && g.w.cfg.Role != Decode:
		return errors.New("do_remote_prefill asks for a decode, and this is a prefill worker")
	case p.DoRemoteDecode && stream:
		return errors.New("the prefill leg (do_remote_decode) must not stream")
	}
	return nil
}

// llmdEngine runs plain requests on the worker's engine and llm-d legs by
// role.
type llmdEngine struct{ w *Worker }

func (e llmdEngine) Submit(ctx context.Context, req engine.Request) (<-chan engine.Event, error) {
	kt := api.KVTransferFrom(ctx)
	if kt == nil {
		return e.w.eng.Submit(ctx, req)
	}
	p, err := llmd.Parse(kt.Params) // the gate admitted them
	if err != nil {
		return nil, &api.KVTransferError{Message: err.Error()}
	}
	if e.w.cfg.Role == Prefill {
		return e.w.llmdPrefill(ctx, req, kt)
	}
	return e.w.llmdDecode(ctx, req, p)
}

func (e llmdEngine) MaxContext() int     { return e.w.eng.MaxContext() }
func (e llmdEngine) Stats() engine.Stats { return e.w.eng.Stats() }
func (e llmdEngine) Ready() bool         { return e.w.eng.Ready() }
func (e llmdEngine) Pool() *kvcache.Pool { return e.w.eng.Pool() }
