package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/incident"
	"github.com/bulkhead-llm/bulkhead/internal/transfer"
)

// decode reserves pages for a request's prompt KV, waits for the transfer,
// and streams the generation as NDJSON lines.
func (w *Worker) decode(rw http.ResponseWriter, r *http.Request) {
	var dr DecodeRequest
	if !readJSON(rw, r, &dr) {
		return
	}
	if err := w.constrain(&dr); err != nil {
		writeError(rw, err)
		return
	}
	ctx := r.Context()
	req := dr.Request
	var (
		events  <-chan engine.Event
		handoff int
	)
	if len(req.Prompt) == 1 { // nothing to transfer: run it here
		ch, err := w.eng.Submit(ctx, req)
		if err != nil {
			writeError(rw, err)
			return
		}
		events = ch
	} else {
		res, err := w.eng.Reserve(ctx, req)
		if err != nil {
			writeError(rw, err)
			return
		}
		events, handoff = res.Events, len(req.Prompt)-1
		if len(req.Prompt)+1 > w.eng.MaxContext() && incident.Active().PassOversized() {
			// The vulnerable engine's handoff check asked only whether the
			// transfer "finished"; a rejected request's placeholder had.
			res.Done(nil)
		} else {
			p, err := w.recv.Expect(dr.TransferID, dr.Nonce, handoff, w.storeSink(res.Pages))
			if err != nil {
				res.Done(err)
				writeError(rw, fmt.Errorf("%w: KV reservation: %v", engine.ErrInternal, err))
				return
			}
			go func() { res.Done(p.Await(ctx)) }()
		}
	}
	rw.Header().Set("Content-Type", "application/x-ndjson")
	rw.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(rw)
	fl, _ := rw.(http.Flusher)
	send := func(l Line) {
		enc.Encode(l)
		if fl != nil {
			fl.Flush()
		}
	}
	send(Line{Reserved: &Reserved{HandoffTokens: handoff}})
	for ev := range events {
		switch {
		case ev.Err != nil:
			_, body := EncodeError(ev.Err)
			send(Line{Error: body})
		case ev.Finish != nil:
			send(Line{Finish: &FinishLine{Reason: ev.Finish.Reason, Usage: ev.Finish.Usage}})
		default:
			send(Line{Token: &TokenLine{ID: ev.Token, Logprob: ev.Logprob, TopLogprobs: ev.TopLogprobs}})
		}
	}
}

// prefill computes a prompt's KV, streams it to the decode worker named in
// the request (each layer of the last prompt chunk as soon as it is
// computed, so the transfer overlaps compute), and answers once decode
// acknowledged it. Its pages stay leased until the transfer returned, on
// every path.
func (w *Worker) prefill(rw http.ResponseWriter, r *http.Request) {
	var pr PrefillRequest
	if !readJSON(rw, r, &pr) {
		return
	}
	ctx := r.Context()
	if len(pr.Request.Prompt)+1 > w.eng.MaxContext() && incident.Active().PassOversized() {
		// The incident: the oversized request was "rejected" and drained
		// with a placeholder; prefill reported it done.
		writeJSON(rw, http.StatusOK, PrefillResponse{})
		return
	}
	accept, key, err := w.decodeIdentity(pr)
	if err != nil {
		writeError(rw, err)
		return
	}
	h, err := w.eng.Prefill(ctx, pr.Request)
	if err != nil {
		writeError(rw, err)
		return
	}
	s, err := w.sender(ctx, key, pr.DecodeKV, accept)
	if err == nil {
		// h.Ready streams each layer as the last prompt chunk computes it.
		err = s.Send(ctx, transfer.Request{ID: pr.TransferID, Nonce: pr.Nonce, Tokens: h.Tokens}, w.storeSource(h.Pages), h.Ready)
		if err != nil && !errors.Is(err, transfer.ErrChecksum) && !errors.Is(err, transfer.ErrTokenCount) {
			w.dropSender(key, s)
		}
	}
	h.Release(err)
	var mm *transfer.MismatchError
	switch {
	case errors.As(err, &mm):
		w.log.Warn("KV handshake refused: the decode worker's configuration differs", "transfer_id", pr.TransferID, "decode", pr.DecodeKV, "err", err)
		writeError(rw, &DriftError{Reason: fmt.Sprintf("KV handshake with decode worker %s refused: %s is %s here, %s there", pr.DecodeKV, mm.Field, mm.Local, mm.Remote)})
		return
	case err != nil:
		w.log.Warn("KV transfer failed", "transfer_id", pr.TransferID, "decode", pr.DecodeKV, "err", err)
		writeError(rw, fmt.Errorf("%w: KV transfer to %s: %v", engine.ErrInternal, pr.DecodeKV, err))
		return
	}
	writeJSON(rw, http.StatusOK, PrefillResponse{HandoffTokens: h.Tokens, CachedTokens: h.CachedTokens})
}
