// Package llmd holds the pieces of llm-d's prefill/decode protocol that are
// independent of a worker: the kv_transfer_params object as llm-d's routing
// sidecar and vLLM's NIXL connector spell it (params.go), and the table of
// one-time handles a prefill worker hands out for its leased KV
// (handles.go). The HTTP side lives in internal/worker (llmd*.go).
//
// The protocol, as the sidecar drives it (nixlv2 connector):
//
//  1. The sidecar on the decode pod gets a client request with the header
//     x-prefiller-host-port. It sends the request to that prefill pod with
//     max_tokens 1, stream false and kv_transfer_params
//     {"do_remote_decode":true, "do_remote_prefill":false, remote_*: null}.
//  2. The prefill worker computes the prompt's KV, keeps the pages leased,
//     and answers with kv_transfer_params naming a one-time handle (bound to
//     the decode worker the sidecar stands for, the tenant and the prompt)
//     and where to fetch it, in vLLM's field names.
//  3. The sidecar sends the original request with those params, verbatim,
//     to the decode worker beside it, which reserves pages, asks the prefill
//     worker to stream the KV over bulkhead's transfer (mutual TLS, DESIGN
//     I9), verifies it (I5) and generates.
package llmd
