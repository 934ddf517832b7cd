package worker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/certs"
)

// standInSidecar behaves as llm-d's routing sidecar (cmd/pd-sidecar,
// nixlv2 connector) does on a decode pod, written from the protocol as
// /work/shared/k8s/README.md §(b) describes it, not from its code:
//
//   - A POST to a generation route with x-prefiller-host-port goes first
//     to that prefill pod: same path and headers (Authorization included,
//     x-request-id with a fresh value appended), the body with
//     kv_transfer_params replaced by {do_remote_decode: true, ...null},
//     max_tokens, max_completion_tokens and min_tokens 1, stream false and
//     no stream_options.
//   - A non-2xx prefill answer goes to the client as it is (status,
//     headers, body): there is no decode-only fallback. An unreachable
//     prefill pod is a 502 with no body.
//   - Otherwise the original body, with kv_transfer_params set to the
//     prefill reply's object verbatim (null if it had none), goes to the
//     local decode server, and its answer streams to the client with
//     usage.prompt_tokens_details.cached_tokens set to prefill's count.
//   - Without the header the request is proxied to decode untouched,
//     client kv_transfer_params included (the real sidecar does the same).
//
// Its client certificate (router role) is what makes the workers accept
// kv_transfer_params.
type standInSidecar struct {
	decode string // base URL of the local decode worker
	client *http.Client
}

func newStandInSidecar(decodeURL string, creds *certs.Credentials) *standInSidecar {
	tr := &http.Transport{}
	if creds != nil {
		tr.TLSClientConfig = creds.ClientConfig(func(certs.Identity) error { return nil })
	}
	return &standInSidecar{decode: decodeURL, client: &http.Client{Transport: tr, Timeout: 2 * time.Minute}}
}

func (s *standInSidecar) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/health" {
		rw.WriteHeader(http.StatusOK) // answered by the sidecar itself
		return
	}
	prefiller := r.Header.Get("x-prefiller-host-port")
	r.Header.Del("x-prefiller-host-port")
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	if prefiller == "" || r.Method != http.MethodPost {
		s.forward(rw, r, s.decode, raw, nil)
		return
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		rw.WriteHeader(http.StatusBadRequest)
		rw.Write([]byte(`{"object":"error","message":"bad request body","type":"BadRequestError","code":400}`))
		return
	}
	pre := make(map[string]any, len(body))
	for k, v := range body {
		pre[k] = v
	}
	pre["kv_transfer_params"] = map[string]any{"do_remote_decode": true, "do_remote_prefill": false,
		"remote_engine_id": nil, "remote_block_ids": nil, "remote_host": nil, "remote_port": nil}
	pre["max_tokens"], pre["max_completion_tokens"], pre["min_tokens"] = 1, 1, 1
	pre["stream"] = false
	delete(pre, "stream_options")
	pb, _ := json.Marshal(pre)
	preq, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, s.scheme()+"://"+prefiller+r.URL.Path, bytes.NewReader(pb))
	preq.Header = r.Header.Clone()
	preq.Header.Add("x-request-id", "stand-in-"+time.Now().Format("150405.000000"))
	preq.Header.Set("Content-Type", "application/json")
	presp, err := s.client.Do(preq)
	if err != nil {
		rw.WriteHeader(http.StatusBadGateway)
		return
	}
	defer presp.Body.Close()
	prb, _ := io.ReadAll(presp.Body)
	if presp.StatusCode < 200 || presp.StatusCode > 299 {
		for k, v := range presp.Header {
			rw.Header()[k] = v
		}
		rw.WriteHeader(presp.StatusCode)
		rw.Write(prb)
		return
	}
	var reply struct {
		KV    json.RawMessage `json:"kv_transfer_params"`
		Usage struct {
			Details struct {
				Cached int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	json.Unmarshal(prb, &reply)
	if len(reply.KV) == 0 {
		reply.KV = json.RawMessage("null")
	}
	body["kv_transfer_params"] = reply.KV
	db, _ := json.Marshal(body)
	cached := reply.Usage.Details.Cached
	s.forward(rw, r, s.decode, db, &cached)
}

func (s *standInSidecar) scheme() string {
	if s.client.Transport.(*http.Transport).TLSClientConfig != nil {
		return "https"
	}
	return "http"
}

// forward sends body to the decode server and copies its answer, line by
// line so a stream flows, rewriting cached_tokens when cached is set.
func (s *standInSidecar) forward(rw http.ResponseWriter, r *http.Request, base string, body []byte, cached *int) {
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, base+r.URL.RequestURI(), bytes.NewReader(body))
	req.Header = r.Header.Clone()
	resp, err := s.client.Do(req)
	if err != nil {
		rw.WriteHeader(http.StatusServiceUnavailable)
		rw.Write([]byte(`{"object":"error","message":"The decode node is not ready","type":"ServiceUnavailable","code":503}`))
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		if k != "Content-Length" {
			rw.Header()[k] = v
		}
	}
	rw.WriteHeader(resp.StatusCode)
	fl, _ := rw.(http.Flusher)
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if cached != nil {
				line = rewriteCached(line, *cached)
			}
			rw.Write(line)
			if fl != nil {
				fl.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}

// rewriteCached sets usage.prompt_tokens_details.cached_tokens in a JSON
// body or an SSE data line that has a usage object.
func rewriteCached(line []byte, cached int) []byte {
	trimmed := bytes.TrimRight(line, "\r\n")
	prefix, payload := "", trimmed
	if p, ok := bytes.CutPrefix(trimmed, []byte("data: ")); ok {
		prefix, payload = "data: ", p
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(payload, &obj) != nil || len(obj["usage"]) == 0 || string(obj["usage"]) == "null" {
		return line
	}
	var usage map[string]any
	if json.Unmarshal(obj["usage"], &usage) != nil {
		return line
	}
	details, _ := usage["prompt_tokens_details"].(map[string]any)
	if details == nil {
		details = map[string]any{}
	}
	details["cached_tokens"] = cached
	usage["prompt_tokens_details"] = details
	obj["usage"], _ = json.Marshal(usage)
	out, _ := json.Marshal(obj)
	return append([]byte(prefix+string(out)), line[len(trimmed):]...)
}
