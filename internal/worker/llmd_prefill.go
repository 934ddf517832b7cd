package worker

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/bulkhead-llm/bulkhead/internal/api"
	"github.com/bulkhead-llm/bulkhead/internal/certs"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/llmd"
	"github.com/bulkhead-llm/bulkhead/internal/transfer"
)

// llmdPrefill is the prefill leg: compute the prompt's KV, keep it leased
// under a one-time handle, and answer in vLLM's kv_transfer_params terms.
// The response has no generated token: bulkhead's decode side runs the last
// prompt token itself (internal/engine, handoff.go), so it reports
// completion_tokens 0 rather than a token it did not sample.
func (w *Worker) llmdPrefill(ctx context.Context, req engine.Request, kt *api.KVTransfer) (<-chan engine.Event, error) {
	router, err := w.router(ctx)
	if err != nil {
		return nil, &api.KVTransferError{Message: err.Error()}
	}
	host, port, err := w.llmdAdvertise()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrInternal, err)
	}
	reqID := req.ID
	reply := llmd.Params{DoRemotePrefill: true, RemoteEngineID: &w.engineID, RemoteBlockIDs: []int32{},
		RemoteRequestID: &reqID, RemoteHost: &host, RemotePort: &port, TPSize: new(int)}
	*reply.TPSize = 1
	usage := engine.Usage{PromptTokens: len(req.Prompt)}
	if len(req.Prompt) > 1 {
		h, err := w.eng.Prefill(ctx, req)
		if err != nil {
			return nil, err
		}
		b := llmd.Binding{Tenant: req.Tenant, Prompt: llmd.PromptDigest(req.Tenant, req.Prompt[:h.Tokens]), Tokens: h.Tokens}
		if w.cfg.Creds != nil {
			// The sidecar router/<name> fetches for decode/<name> (certs.RoleRouter).
			b.Decode = certs.Identity{Role: certs.RoleDecode, Name: router.Name}.URI()
		}
		handle, err := w.llmd.handles.Issue(b, h)
		if err != nil {
			h.Release(err)
			return nil, fmt.Errorf("%w: %v", engine.ErrShuttingDown, err)
		}
		reply.Handle, reply.HandoffTokens, reply.RemoteBlockIDs = handle, h.Tokens, h.Pages
		usage.CachedTokens = h.CachedTokens
	}
	kt.Reply, err = json.Marshal(reply)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrInternal, err)
	}
	ch := make(chan engine.Event, 1)
	ch <- engine.Event{Finish: &engine.Finish{Reason: engine.FinishLength, Usage: usage}}
	close(ch)
	return ch, nil
}

// llmdAdvertise is where decode workers reach this worker's pull endpoint.
func (w *Worker) llmdAdvertise() (string, int, error) {
	a := w.llmd.cfg.Advertise
	if a == "" {
		return "", 0, errors.New("llm-d: the prefill worker's advertised address is not set")
	}
	host, ps, err := net.SplitHostPort(a)
	if err != nil {
		return "", 0, fmt.Errorf("llm-d: advertised address %q: %v", a, err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil {
		return "", 0, fmt.Errorf("llm-d: advertised address %q: %v", a, err)
	}
	return host, port, nil
}

// SetAdvertise sets the address decode workers fetch from, once the
// listener is bound (an address given in the configuration wins).
func (w *Worker) SetAdvertise(addr string) {
	if w.llmd != nil && w.llmd.cfg.Advertise == "" {
		w.llmd.cfg.Advertise = addr
	}
}

// PullRequest is a decode worker's POST /v1/llmd/pull: stream the KV of
// Handle into the reservation TransferID/Nonce at DecodeKV.
type PullRequest struct {
	Handle     string `json:"handle"`
	Tenant     string `json:"tenant"`
	Prompt     string `json:"prompt_digest"` // hex llmd.PromptDigest of the decode worker's own prompt
	Tokens     int    `json:"tokens"`
	TransferID uint64 `json:"transfer_id"`
	Nonce      uint64 `json:"nonce"`
	DecodeKV   string `json:"decode_kv"`
}

// pull serves a handle's KV to the decode worker it is bound to. The handle
// is consumed by the first attempt, whatever its outcome: one that reached
// the wrong peer is spent.
func (w *Worker) pull(rw http.ResponseWriter, r *http.Request) {
	var decodeID certs.Identity
	if w.cfg.Creds != nil {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			writeJSON(rw, http.StatusUnauthorized, errBody("a decode worker's client certificate from the cluster CA is required"))
			return
		}
		id, err := certs.PeerIdentity(r.TLS)
		if err != nil || id.Role != certs.RoleDecode {
			writeJSON(rw, http.StatusForbidden, errBody(fmt.Sprintf("peer %v is not a decode worker (%v)", id, err)))
			return
		}
		decodeID = id
	}
	var pr PullRequest
	if !readJSON(rw, r, &pr) {
		return
	}
	lease, err := w.llmd.handles.Take(pr.Handle)
	if err != nil {
		w.handoffRefused.Add(1)
		writeError(rw, fmt.Errorf("%w: %v", engine.ErrInvalidRequest, err))
		return
	}
	h := lease.Value
	if err := checkBinding(lease.Binding, decodeID, pr); err != nil {
		w.handoffRefused.Add(1)
		h.Release(err)
		writeError(rw, fmt.Errorf("%w: %v", engine.ErrInvalidRequest, err))
		return
	}
	var accept func(certs.Identity) error
	key := pr.DecodeKV
	if w.cfg.Creds != nil {
		accept, key = certs.Exactly(decodeID), decodeID.URI()+"@"+pr.DecodeKV
	}
	ctx := r.Context()
	s, err := w.sender(ctx, key, pr.DecodeKV, accept)
	if err == nil {
		err = s.Send(ctx, transfer.Request{ID: pr.TransferID, Nonce: pr.Nonce, Tokens: h.Tokens}, w.storeSource(h.Pages), h.Ready)
		if err != nil && !errors.Is(err, transfer.ErrChecksum) && !errors.Is(err, transfer.ErrTokenCount) {
			w.dropSender(key, s)
		}
	}
	h.Release(err)
	if err != nil {
		w.log.Warn("llm-d KV transfer failed", "decode", pr.DecodeKV, "err", err)
		writeError(rw, fmt.Errorf("%w: KV transfer to %s: %v", engine.ErrInternal, pr.DecodeKV, err))
		return
	}
	writeJSON(rw, http.StatusOK, PrefillResponse{HandoffTokens: h.Tokens, CachedTokens: h.CachedTokens})
}

// checkBinding refuses a pull by another decode worker, for another
// tenant, or for another prompt than the handle was issued for.
func checkBinding(b llmd.Binding, decodeID certs.Identity, pr PullRequest) error {
	if b.Decode != "" && decodeID.URI() != b.Decode {
		return fmt.Errorf("llm-d: handle is bound to %s, not %s", b.Decode, decodeID)
	}
	if pr.Tenant != b.Tenant {
		return errors.New("llm-d: handle was issued for another tenant")
	}
	if pr.Tokens != b.Tokens || pr.Prompt != hex.EncodeToString(b.Prompt[:]) {
		return fmt.Errorf("llm-d: handle covers a different prompt (%d tokens) than the decode request's (%d)", b.Tokens, pr.Tokens)
	}
	return nil
}
