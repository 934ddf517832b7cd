// Package worker serves one half of a disaggregated deployment: a prefill
// worker computes prompts' KV and streams it to a decode worker, which
// generates. Both speak a small JSON-over-HTTP protocol with the gateway
// (internal/gateway), defined in this file, and move KV pages over the
// transfer engine (internal/transfer).
//
// A request's path, for a prompt of n tokens (n ≥ 2):
//
//  1. The gateway admits it (DESIGN I4) and POSTs /v1/worker/decode to a
//     decode worker, which admits it again, reserves pages for the KV of
//     positions [0, n-1), registers them with its transfer receiver under a
//     transfer id and nonce, and answers with a first NDJSON line
//     {"reserved":{"handoff_tokens":n-1}}.
//  2. The gateway POSTs /v1/worker/prefill to a prefill worker with the same
//     id, nonce and the decode worker's KV address. Prefill admits again,
//     computes, streams the pages and waits for decode's verdict, holding
//     its pages under a lease until then (I5, I7); it answers 200 only when
//     decode acknowledged.
//  3. Decode, once the transfer verified (every page, every checksum, the
//     exact token count, digest and layout), runs the last prompt token
//     itself and streams tokens as further NDJSON lines, ending with a
//     finish or an error line.
//
// A one-token prompt has no KV to move: decode answers handoff_tokens 0 and
// runs it alone. Any failure ends in a terminal state on both workers with
// their pages freed; a client 4xx from either worker keeps its status.
package worker

import (
	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/grammar"
)

// Role is what a worker does.
type Role string

// The two roles.
const (
	Prefill Role = "prefill"
	Decode  Role = "decode"
)

// Info is GET /v1/worker/info: everything the gateway compares across
// workers before sending traffic (a worker that differs gets none).
type Info struct {
	Role        Role   `json:"role"`
	Model       string `json:"model"`
	ModelDigest string `json:"model_digest"`
	MaxContext  int    `json:"max_context"`
	PoolTokens  int    `json:"pool_tokens"`
	PageSize    int    `json:"page_size"`
	KVDType     string `json:"kv_dtype"`
	Layers      int    `json:"layers"`
	KVDim       int    `json:"kv_dim"`
	Version     string `json:"version"`
	KVAddr      string `json:"kv_addr,omitempty"` // decode: the transfer receiver
	// Identity is the worker's certificate identity; the gateway replaces
	// it with the one the TLS connection proved.
	Identity   string `json:"identity,omitempty"`
	PagesFree  int    `json:"pages_free"` // for drain checks
	PagesTotal int    `json:"pages_total"`
	Running    int    `json:"running"`
	Waiting    int    `json:"waiting"`
}

// DecodeRequest is the body of POST /v1/worker/decode.
type DecodeRequest struct {
	TransferID uint64         `json:"transfer_id"`
	Nonce      uint64         `json:"nonce"`
	Request    engine.Request `json:"request"`
	// Constraint is the structured-output constraint's source, compiled
	// by the decode worker, which samples (structured.go).
	Constraint *grammar.Spec `json:"constraint,omitempty"`
}

// PrefillRequest is the body of POST /v1/worker/prefill.
type PrefillRequest struct {
	TransferID uint64 `json:"transfer_id"`
	Nonce      uint64 `json:"nonce"`
	DecodeKV   string `json:"decode_kv"` // the decode worker's transfer address
	// DecodeIdentity is the certificate identity the decode worker proved
	// to the gateway; with TLS, KV goes only to a peer proving it.
	DecodeIdentity string         `json:"decode_identity,omitempty"`
	Request        engine.Request `json:"request"`
}

// PrefillResponse is prefill's answer once decode acknowledged the KV.
type PrefillResponse struct {
	HandoffTokens int `json:"handoff_tokens"`
	// CachedTokens of them came from prefill's prefix cache.
	CachedTokens int `json:"cached_tokens"`
}

// Line is one NDJSON line of the decode stream: exactly one field is set.
type Line struct {
	Reserved *Reserved   `json:"reserved,omitempty"`
	Token    *TokenLine  `json:"token,omitempty"`
	Finish   *FinishLine `json:"finish,omitempty"`
	Error    *ErrorBody  `json:"error,omitempty"`
}

// Reserved is the first line of a decode stream.
type Reserved struct {
	HandoffTokens int `json:"handoff_tokens"`
}

// TokenLine is one generated token.
type TokenLine struct {
	ID          int32                 `json:"id"`
	Logprob     float32               `json:"logprob"`
	TopLogprobs []engine.TokenLogprob `json:"top_logprobs,omitempty"`
}

// FinishLine ends a successful stream.
type FinishLine struct {
	Reason engine.FinishReason `json:"reason"`
	Usage  engine.Usage        `json:"usage"`
}

// ErrorBody is an error, as a JSON body (with an HTTP status) or a line.
type ErrorBody struct {
	Message string `json:"message"`
	// Kind is what the receiver maps back to a typed error:
	// context_length_exceeded, invalid_request, shutting_down, aborted,
	// overloaded, drift, internal.
	Kind         string `json:"kind"`
	PromptTokens int    `json:"prompt_tokens,omitempty"`
	Limit        int    `json:"limit,omitempty"`
	MaxContext   int    `json:"max_context,omitempty"`
	LimitName    string `json:"limit_name,omitempty"`
	// RetryAfterMs is an overloaded worker's suggested wait.
	RetryAfterMs int64 `json:"retry_after_ms,omitempty"`
}
