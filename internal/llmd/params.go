package llmd

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
)

// Params is kv_transfer_params. The vLLM names are those the sidecar sends
// and vLLM's NIXL connector returns; the bulkhead_ ones carry bulkhead's
// own transfer. Pointers tell null (which the sidecar sends) from absent.
type Params struct {
	DoRemoteDecode  bool    `json:"do_remote_decode"`
	DoRemotePrefill bool    `json:"do_remote_prefill"`
	RemoteEngineID  *string `json:"remote_engine_id"`
	RemoteBlockIDs  []int32 `json:"remote_block_ids"`
	RemoteRequestID *string `json:"remote_request_id,omitempty"`
	// RemoteHost and RemotePort are where the decode worker fetches the KV:
	// the prefill worker's API, whose pull endpoint streams it over
	// bulkhead's transfer.
	RemoteHost *string `json:"remote_host"`
	RemotePort *int    `json:"remote_port"`
	TPSize     *int    `json:"tp_size,omitempty"`
	// Handle is the one-time name of the leased KV; empty for a one-token
	// prompt, which has none to move.
	Handle string `json:"bulkhead_handle,omitempty"`
	// HandoffTokens is how many prompt positions the KV covers.
	HandoffTokens int `json:"bulkhead_handoff_tokens,omitempty"`
}

// Parse reads kv_transfer_params strictly: an unknown field is an error,
// since an ignored one would be a silent success (DESIGN I10).
func Parse(raw json.RawMessage) (Params, error) {
	var p Params
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("not a kv_transfer_params object: %v", err)
	}
	if dec.More() {
		return p, errors.New("trailing data after the kv_transfer_params object")
	}
	if p.DoRemoteDecode == p.DoRemotePrefill {
		return p, errors.New("exactly one of do_remote_decode and do_remote_prefill must be true")
	}
	return p, nil
}

// Addr is remote_host:remote_port, or an error if either is missing.
func (p Params) Addr() (string, error) {
	if p.RemoteHost == nil || *p.RemoteHost == "" || p.RemotePort == nil || *p.RemotePort <= 0 || *p.RemotePort > 65535 {
		return "", errors.New("do_remote_prefill needs remote_host and remote_port of a bulkhead prefill worker")
	}
	h := *p.RemoteHost
	if bytes.IndexByte([]byte(h), ':') >= 0 {
		h = "[" + h + "]"
	}
	return fmt.Sprintf("%s:%d", h, *p.RemotePort), nil
}

// PromptDigest names a tenant's prompt: the tenant id and the token ids. A
// handle is bound to it, so the KV can only serve the same tenant's same
// prompt (DESIGN I6), whatever the router sends. It leaves out the cache
// salt: each pod derives its own from its own secret, and the tenant id is
// decided on both from the same API key.
func PromptDigest(tenant string, tokens []int32) [32]byte {
	h := sha256.New()
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(tenant)))
	h.Write(n[:])
	h.Write([]byte(tenant))
	b := make([]byte, 4*len(tokens))
	for i, t := range tokens {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(t))
	}
	h.Write(b)
	var d [32]byte
	h.Sum(d[:0])
	return d
}
