package llmdproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// prefillRequest is what the prefill leg asks for, in vLLM's names as
// llm-d's sidecar sends them: compute the KV and keep it for a remote
// decoder.
var prefillRequest = json.RawMessage(`{"do_remote_decode":true,"do_remote_prefill":false,"remote_engine_id":null,"remote_block_ids":null,"remote_host":null,"remote_port":null}`)

var one = json.RawMessage("1")

// object parses a JSON object keeping every value's bytes as sent.
func object(b []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, errors.New("request body is not a JSON object")
	}
	return m, nil
}

// prefillBody is the client's body for the prefill leg: one token, no
// stream, kv_transfer_params replaced (a client's copy never travels on).
func prefillBody(path string, body []byte) ([]byte, error) {
	m, err := object(body)
	if err != nil {
		return nil, err
	}
	m["kv_transfer_params"] = prefillRequest
	m["max_tokens"] = one
	if path == "/v1/chat/completions" {
		m["max_completion_tokens"] = one
	}
	if _, ok := m["min_tokens"]; ok {
		m["min_tokens"] = one // else it would exceed max_tokens
	}
	m["stream"] = json.RawMessage("false")
	delete(m, "stream_options")
	return jsonMarshal(m)
}

// decodeBody is the original body with the prefill answer's
// kv_transfer_params, verbatim. An answer without them is an error: sent
// on with null, decode would recompute the prompt alone, a silent
// decode-only fallback.
func decodeBody(body, answer []byte) ([]byte, error) {
	m, err := object(body)
	if err != nil {
		return nil, err
	}
	var reply struct {
		KV json.RawMessage `json:"kv_transfer_params"`
	}
	if err := json.Unmarshal(answer, &reply); err != nil {
		return nil, errors.New("answer is not JSON")
	}
	kv := bytes.TrimSpace(reply.KV)
	if len(kv) == 0 || kv[0] != '{' {
		return nil, fmt.Errorf("answer has no kv_transfer_params object (got %q)", kv)
	}
	m["kv_transfer_params"] = kv
	return jsonMarshal(m)
}

// jsonMarshal marshals without HTML escaping, so prompts pass unchanged.
func jsonMarshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
