// Package api is bulkhead's OpenAI-compatible HTTP server: /v1/models,
// /v1/completions and /v1/chat/completions (JSON or server-sent events),
// /tokenize and /detokenize, /health, /ready and /metrics, for many tenants
// on one engine.
//
// A generation request goes: authenticate the bearer key to a tenant →
// decode and validate the body (400/413) → tenant limits (429 with
// Retry-After) → tokenize → prompt + 1 ≤ max context (400
// context_length_exceeded, before any KV page exists: DESIGN I4) →
// engine.Submit → stream. The request's context is the engine request's
// context: a client that disconnects aborts the request and frees its pages.
// A stream that fails after its first byte ends with an error event
// (data: {"error":{...}}), never with [DONE].
//
// Tenants never see each other: responses, error messages and info-level
// logs carry only the requester's own data (prompts and outputs are never
// logged), and metric labels carry tenant ids only.
package api
