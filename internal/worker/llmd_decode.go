package worker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/bulkhead-llm/bulkhead/internal/api"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/llmd"
)

// llmdDecode is the decode leg: admit and reserve (DESIGN I4), ask the
// prefill worker the params name to stream the handle's KV into the
// reservation over bulkhead's transfer, and generate once it verified (I5).
// Any failure ends the reservation and is returned before a byte of the
// response, so the sidecar passes a plain error through.
func (w *Worker) llmdDecode(ctx context.Context, req engine.Request, p llmd.Params) (<-chan engine.Event, error) {
	if _, err := w.router(ctx); err != nil {
		return nil, &api.KVTransferError{Message: err.Error()}
	}
	if p.Handle == "" {
		if len(req.Prompt) == 1 && p.HandoffTokens == 0 { // prefill had no KV to keep
			return w.eng.Submit(ctx, req)
		}
		return nil, &api.KVTransferError{Message: "do_remote_prefill without a bulkhead_handle: the prefill worker was not a bulkhead worker, or the params were not its reply"}
	}
	addr, err := p.Addr()
	if err != nil {
		return nil, &api.KVTransferError{Message: err.Error()}
	}
	if p.HandoffTokens != len(req.Prompt)-1 {
		return nil, &api.KVTransferError{Message: fmt.Sprintf("the handle covers %d prompt tokens, this request's prompt needs %d", p.HandoffTokens, len(req.Prompt)-1)}
	}
	res, err := w.eng.Reserve(ctx, req)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (<-chan engine.Event, error) {
		res.Done(err)
		go func() {
			for range res.Events { // the engine ends the stream with err
			}
		}()
		return nil, err
	}
	var ids [16]byte
	if _, err := rand.Read(ids[:]); err != nil {
		return fail(fmt.Errorf("%w: %v", engine.ErrInternal, err))
	}
	tid, nonce := binary.LittleEndian.Uint64(ids[:8]), binary.LittleEndian.Uint64(ids[8:])
	n := len(req.Prompt) - 1
	pend, err := w.recv.Expect(tid, nonce, n, w.storeSink(res.Pages))
	if err != nil {
		return fail(fmt.Errorf("%w: KV reservation: %v", engine.ErrInternal, err))
	}
	verdict := make(chan error, 1)
	go func() { verdict <- pend.Await(ctx) }()
	digest := llmd.PromptDigest(req.Tenant, req.Prompt[:n])
	pullErr := w.pullKV(ctx, addr, PullRequest{Handle: p.Handle, Tenant: req.Tenant, Prompt: hex.EncodeToString(digest[:]),
		Tokens: n, TransferID: tid, Nonce: nonce, DecodeKV: w.kvAdvertise()})
	if pullErr != nil {
		pend.Cancel() // nothing once the transfer verified
	}
	// Decode's verdict is authoritative (internal/transfer): KV that
	// verified stands even if prefill's answer was lost after the ACK.
	if err := <-verdict; err != nil {
		if pullErr != nil {
			return fail(pullErr)
		}
		return fail(&api.KVTransferError{Status: http.StatusBadGateway, Message: fmt.Sprintf("the KV from %s failed verification: %v", addr, err)})
	}
	if pullErr != nil {
		w.log.Warn("llm-d KV verified, but the prefill worker's answer failed", "prefill", addr, "err", pullErr)
	}
	res.Done(nil)
	return res.Events, nil
}

func (w *Worker) kvAdvertise() string {
	if a := w.llmd.cfg.AdvertiseKV; a != "" {
		return a
	}
	return w.recv.Addr()
}

// pullKV asks the prefill worker at addr to send a handle's KV; it returns
// once prefill's transfer ended. A refusal keeps prefill's message (a
// forged, replayed or expired handle is a 400 the client sees).
func (w *Worker) pullKV(ctx context.Context, addr string, pr PullRequest) error {
	ctx, cancel := context.WithTimeout(ctx, w.llmd.cfg.PullTimeout)
	defer cancel()
	body, _ := json.Marshal(pr)
	scheme := "http"
	if w.cfg.Creds != nil {
		scheme = "https"
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, scheme+"://"+addr+pullPath, bytes.NewReader(body))
	if err != nil {
		return &api.KVTransferError{Message: fmt.Sprintf("remote_host/remote_port %s: %v", addr, err)}
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := w.llmd.client.Do(hr)
	if err != nil {
		return &api.KVTransferError{Status: http.StatusBadGateway, Message: fmt.Sprintf("fetching the KV from the prefill worker at %s: %v", addr, err)}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	var eb struct {
		Error *ErrorBody `json:"error"`
	}
	msg := string(b)
	if json.Unmarshal(b, &eb) == nil && eb.Error != nil {
		msg = eb.Error.Message
	}
	status := http.StatusBadGateway
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		status = http.StatusBadRequest
	}
	return &api.KVTransferError{Status: status, Message: fmt.Sprintf("the prefill worker at %s refused the fetch: %s", addr, msg)}
}
