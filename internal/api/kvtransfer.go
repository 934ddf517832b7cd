package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
)

// llmdFields are request fields of llm-d's prefill/decode protocol.
//
// kv_transfer_params tells a vLLM-style engine where to push or pull a
// request's KV. It would arrive from whoever can reach the port (the llm-d
// sidecar forwards a client's copy untouched on several paths), so the
// server accepts it only through Config.KVTransfer, which a bulkhead worker
// sets to demand an authenticated llm-d router (internal/worker, llmd*.go).
// Without a gate it is refused with a 400 that names the field: ignoring it
// silently would let an operator believe a P/D split works when every
// request is in fact run whole on one pod (docs/DEPLOY.md, "llm-d").
type llmdFields struct {
	KVTransferParams json.RawMessage `json:"kv_transfer_params"`
}

// kvParams is the field's value, or nil when absent or null (the sidecar
// sends null when a prefill reply had none).
func (f *llmdFields) kvParams() json.RawMessage {
	if len(f.KVTransferParams) == 0 || string(f.KVTransferParams) == "null" {
		return nil
	}
	return f.KVTransferParams
}

// KVTransferGate decides whether a request may carry kv_transfer_params.
type KVTransferGate interface {
	// Admit returns nil when r comes from a peer allowed to send params
	// and params are well formed for this server; stream is whether the
	// client asked for server-sent events. Its error's message goes to the
	// client in a 400 naming the field.
	Admit(r *http.Request, params json.RawMessage, stream bool) error
}

// KVTransfer is an admitted request's kv_transfer_params on their way to
// the engine (through the Submit context) and the engine's answer back.
type KVTransfer struct {
	Params json.RawMessage
	// Reply, set by the engine before its stream ends, is returned as the
	// response body's kv_transfer_params (non-streaming responses only).
	Reply json.RawMessage
}

type kvTransferKey struct{}

// KVTransferFrom returns the kv_transfer_params of the request whose Submit
// context ctx is, or nil.
func KVTransferFrom(ctx context.Context) *KVTransfer {
	kt, _ := ctx.Value(kvTransferKey{}).(*KVTransfer)
	return kt
}

// KVTransferError is an engine's refusal of a request's kv_transfer_params
// (a forged, used or expired handle; KV that could not be fetched). Status
// 0 means 400.
type KVTransferError struct {
	Status  int
	Message string
}

func (e *KVTransferError) Error() string { return e.Message }

// gateKVTransfer checks a request's kv_transfer_params before anything else
// is done for it; on success info carries them to the engine.
func (s *Server) gateKVTransfer(r *http.Request, info *requestInfo, p genParams) *apiError {
	if p.kvParams == nil {
		return nil
	}
	if s.cfg.KVTransfer == nil {
		return invalid("kv_transfer_params", "unsupported_value",
			"kv_transfer_params is not accepted: bulkhead transfers KV only between its own authenticated workers (see docs/DEPLOY.md, llm-d)")
	}
	if err := s.cfg.KVTransfer.Admit(r, p.kvParams, p.stream); err != nil {
		return invalid("kv_transfer_params", "invalid_kv_transfer_params", "kv_transfer_params refused: %v", err)
	}
	info.kvt = &KVTransfer{Params: p.kvParams}
	return nil
}

func kvTransferError(err error) (*apiError, bool) {
	var ke *KVTransferError
	if !errors.As(err, &ke) {
		return nil, false
	}
	e := invalid("kv_transfer_params", "invalid_kv_transfer_params", "%s", ke.Message)
	if ke.Status != 0 {
		e.Status = ke.Status
		if ke.Status >= 500 {
			e.Type, e.reason = typeServer, "kv_transfer_failed"
		}
	}
	return e, true
}

// withKVReply adds the engine's kv_transfer_params to a response body, as
// vLLM returns them beside choices and usage.
func withKVReply(body any, kt *KVTransfer) any {
	if kt == nil || len(kt.Reply) == 0 {
		return body
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // as writeJSON
	if enc.Encode(body) != nil {
		return body
	}
	b := bytes.TrimRight(buf.Bytes(), "\n")
	if len(b) < 2 || b[len(b)-1] != '}' {
		return body
	}
	out := append(b[:len(b)-1:len(b)-1], `,"kv_transfer_params":`...)
	out = append(out, kt.Reply...)
	return json.RawMessage(append(out, '}'))
}
