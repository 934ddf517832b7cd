package api

import "encoding/json"

// llmdFields are request fields of llm-d's prefill/decode protocol.
//
// kv_transfer_params tells a vLLM-style engine where to push or pull a
// request's KV. bulkhead does not accept it on the tenant API: the field
// would arrive from whoever can reach the port (the llm-d sidecar forwards a
// client's copy untouched on several paths), and bulkhead moves KV only over
// its own transfer, bound to a reservation the router made. Ignoring it
// silently would let an operator believe an llm-d P/D split works when every
// request is in fact run whole on one pod, so it is refused with a 400
// that names the field (docs/DEPLOY.md, "llm-d").
type llmdFields struct {
	KVTransferParams json.RawMessage `json:"kv_transfer_params"`
}

func (f *llmdFields) checkLLMD() *apiError {
	if len(f.KVTransferParams) == 0 || string(f.KVTransferParams) == "null" {
		return nil
	}
	return invalid("kv_transfer_params", "unsupported_value",
		"kv_transfer_params is not accepted: bulkhead transfers KV only between its own authenticated workers (see docs/DEPLOY.md, llm-d)")
}
