// Package llmdproxy is bulkhead's routing sidecar for llm-d's
// prefill/decode split: it runs on a decode pod in front of the decode
// worker and does what llm-d's pd-sidecar (nixlv2 connector) does, as
// its protocol is documented (docs/DEPLOY.md, "Kubernetes with llm-d"),
// with one difference that matters: both legs present the pod's router
// certificate (spiffe://bulkhead/router/<decode-pod>) over mutual TLS 1.3
// and check the peer's role, so bulkhead workers accept the
// kv_transfer_params it sends. llm-d's own sidecar cannot present a
// client certificate.
//
// A request with x-prefiller-host-port goes first to that prefill pod with
// max_tokens 1, stream false and kv_transfer_params {do_remote_decode:
// true}; the original request then goes to the local decode worker with
// the kv_transfer_params prefill returned, and the decode answer streams
// back unchanged. A prefill error reaches the client as it is: there is no
// decode-only fallback. Without the header a request goes to the decode
// worker untouched. GET /health is answered here.
package llmdproxy
