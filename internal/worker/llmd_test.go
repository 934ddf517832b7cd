package worker

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/api"
	"github.com/bulkhead-llm/bulkhead/internal/certs"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/loader"
	"github.com/bulkhead-llm/bulkhead/internal/tenant"
)

// llmdCluster is a prefill pod, a decode pod with bulkhead's sidecar in
// front of it, and `serve` over the same model for reference, on loopback.
type llmdCluster struct {
	ca            *testCA
	pre, dec      *Worker
	preAddr       string // host:port, as the EPP names it in x-prefiller-host-port
	decURL        string
	decodeCalls   atomic.Int64
	sidecar       string
	tenant        *http.Client // a tenant's client: trusts the cluster CA (the sidecar's TLS listener)
	serve         string
	router        *http.Client // the sidecar's own client, for hand-made legs
	preEng, refEn *engine.Engine
}

var llmdKeys = map[string]string{"acme": "acme-key", "globex": "globex-key"}

func llmdTenants(t *testing.T) *tenant.Registry {
	r, err := tenant.Parse([]byte(fmt.Sprintf(`
[[tenant]]
id = "acme"
api_key_sha256 = [%q]

[[tenant]]
id = "globex"
api_key_sha256 = [%q]
`, tenant.HashKey(llmdKeys["acme"]), tenant.HashKey(llmdKeys["globex"]))))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// chatTokenizer gives the built-in copy model a chat template, the same on
// every server of a test.
type chatTokenizer struct{ api.Tokenizer }

func (chatTokenizer) ChatTemplate() string {
	return "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}[assistant] {% endif %}"
}

func testTokenizer(m *loader.Model) api.Tokenizer { return chatTokenizer{api.WrapTokenizer(m.Tok)} }

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func llmdEngine0(t *testing.T) (*loader.Model, *engine.Engine) {
	t.Helper()
	m, err := loader.Load(loader.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := m.NewEngine(loader.PoolOptions{MaxContext: 512, KVTokens: 2048}, engine.Config{TokenBudget: 64, MaxRunning: 4})
	if err != nil {
		t.Fatal(err)
	}
	return m, eng
}

// startLLMDWorker serves a worker with the OpenAI routes over TLS.
func startLLMDWorker(t *testing.T, role Role, creds *certs.Credentials, lc LLMDConfig, count *atomic.Int64) (*Worker, *httptest.Server, *engine.Engine) {
	t.Helper()
	m, eng := llmdEngine0(t)
	w, err := New(Config{Role: role, Model: m.Name, ModelDigest: m.Digest, Layers: m.Model.Config.Layers,
		KVDim: m.Model.Config.KVDim(), KVListen: "127.0.0.1:0", Creds: creds, LLMD: &lc, Logger: quiet()}, eng)
	if err != nil {
		t.Fatal(err)
	}
	// Each pod its own process, so its own tenant-salt secret (as bulkhead
	// without --tenant-secret): the protocol must not depend on salts agreeing.
	reg := llmdTenants(t)
	secret := make([]byte, 32)
	rand.Read(secret)
	reg.UseSecret(secret)
	srv := api.NewServer(api.Config{ModelID: m.Name, KVTransfer: w.KVTransferGate()}, w.LLMDEngine(), testTokenizer(m), reg, quiet())
	w.ServeOpenAI(srv)
	h := http.Handler(w)
	if count != nil {
		h = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { count.Add(1); w.ServeHTTP(rw, r) })
	}
	hs := httptest.NewUnstartedServer(h)
	w.SetAdvertise(hs.Listener.Addr().String())
	if creds != nil {
		hs.TLS = ServerTLS(creds)
		hs.StartTLS()
	} else {
		hs.Start()
	}
	t.Cleanup(func() { hs.Close(); w.Shutdown(t.Context()); eng.Close() })
	return w, hs, eng
}

func newLLMDCluster(t *testing.T, lc LLMDConfig) *llmdCluster {
	t.Helper()
	c := &llmdCluster{ca: newTestCA(t)}
	var pre, dec *httptest.Server
	c.pre, pre, c.preEng = startLLMDWorker(t, Prefill, c.ca.creds(certs.RolePrefill, "prefill-0"), lc, nil)
	c.dec, dec, _ = startLLMDWorker(t, Decode, c.ca.creds(certs.RoleDecode, "decode-0"), lc, &c.decodeCalls)
	c.preAddr, c.decURL = pre.Listener.Addr().String(), dec.URL
	routerCreds := c.ca.creds(certs.RoleRouter, "decode-0")
	c.sidecar, c.tenant = startSidecar(t, dec.URL, routerCreds)
	c.router = clientWith(routerCreds)

	m, eng := llmdEngine0(t)
	c.refEn = eng
	ref := httptest.NewServer(api.NewServer(api.Config{ModelID: m.Name}, eng, testTokenizer(m), llmdTenants(t), quiet()))
	t.Cleanup(func() { ref.Close(); eng.Close() })
	c.serve = ref.URL
	return c
}

type reply struct {
	status int
	body   []byte
}

func post(t *testing.T, client *http.Client, url, key string, hdr map[string]string, body string) reply {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, b}
}

// outcome is what must match serve's answer: the text, every token's
// logprob (as sent), the finish reason and the token counts.
type outcome struct {
	Text     string
	Logprobs string
	Finish   string
	Prompt   int
	Output   int
}

func parseOutcome(t *testing.T, r reply, stream bool) outcome {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	type choice struct {
		Text     string                   `json:"text"`
		Message  struct{ Content string } `json:"message"`
		Delta    struct{ Content string } `json:"delta"`
		Logprobs json.RawMessage          `json:"logprobs"`
		Finish   *string                  `json:"finish_reason"`
	}
	type body struct {
		Choices []choice `json:"choices"`
		Usage   *struct {
			Prompt     int `json:"prompt_tokens"`
			Completion int `json:"completion_tokens"`
		} `json:"usage"`
	}
	var o outcome
	add := func(b body) {
		for _, c := range b.Choices {
			o.Text += c.Text + c.Message.Content + c.Delta.Content
			if len(c.Logprobs) > 0 && string(c.Logprobs) != "null" {
				o.Logprobs += string(c.Logprobs)
			}
			if c.Finish != nil {
				o.Finish = *c.Finish
			}
		}
		if b.Usage != nil {
			o.Prompt, o.Output = b.Usage.Prompt, b.Usage.Completion
		}
	}
	if !stream {
		var b body
		if err := json.Unmarshal(r.body, &b); err != nil {
			t.Fatalf("%v: %s", err, r.body)
		}
		add(b)
		return o
	}
	for _, line := range strings.Split(string(r.body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var b body
		if err := json.Unmarshal([]byte(data), &b); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		add(b)
	}
	return o
}

// drained waits until both workers' pools are all free and no handle is
// outstanding (DESIGN I7).
func (c *llmdCluster) drained(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pi, di := c.pre.Info(), c.dec.Info()
		if pi.PagesFree == pi.PagesTotal && di.PagesFree == di.PagesTotal && c.pre.OutstandingHandles() == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pools did not drain: prefill %d/%d free, decode %d/%d free, %d handles outstanding",
				pi.PagesFree, pi.PagesTotal, di.PagesFree, di.PagesTotal, c.pre.OutstandingHandles())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var canaryPrompts = []string{
	"The quick brown fox jumps over the lazy dog. The quick brown",
	"canary-7f3a: tenant secrets must never cross; canary-7f3a: tenant",
	"1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35",
}

func canaryBodies(prompt string) map[string]string {
	p, _ := json.Marshal(prompt)
	return map[string]string{
		"/v1/completions":      `{"prompt":` + string(p) + `,"max_tokens":12,"temperature":0,"logprobs":2`,
		"/v1/chat/completions": `{"messages":[{"role":"user","content":` + string(p) + `}],"max_tokens":12,"temperature":0,"logprobs":true,"top_logprobs":2`,
	}
}

// Canary prompts of two tenants through prefill pod, sidecar and
// decode pod answer exactly what serve answers, streaming or not, and every
// page and handle is released afterwards.
func TestLLMDThroughSidecarEqualsServe(t *testing.T) {
	c := newLLMDCluster(t, LLMDConfig{})
	plain := c.tenant
	hdr := map[string]string{"x-prefiller-host-port": c.preAddr}
	var n atomic.Int64
	t.Run("tenants", func(t *testing.T) { // both tenants at once, so their legs interleave
		for tenantID, key := range llmdKeys {
			t.Run(tenantID, func(t *testing.T) {
				t.Parallel()
				for _, prompt := range canaryPrompts {
					for path, body := range canaryBodies(prompt) {
						for _, stream := range []bool{false, true} {
							b := body + `,"stream":false}`
							if stream {
								b = body + `,"stream":true,"stream_options":{"include_usage":true}}`
							}
							wantR := post(t, plain, c.serve+path, key, nil, b)
							gotR := post(t, plain, c.sidecar+path, key, hdr, b)
							want, got := parseOutcome(t, wantR, stream), parseOutcome(t, gotR, stream)
							if got != want || want.Output == 0 || want.Logprobs == "" {
								t.Errorf("%s stream=%v %q:\n got %+v\nwant %+v", path, stream, prompt[:20], got, want)
							}
							if w, g := comparable(wantR.body), comparable(gotR.body); w != g {
								t.Errorf("%s stream=%v %q: bodies differ beyond ids and cache hits:\n got %s\nwant %s", path, stream, prompt[:20], g, w)
							}
							n.Add(1)
						}
					}
				}
			})
		}
	})
	if calls, n := c.decodeCalls.Load(), n.Load(); calls != n || n != int64(len(llmdKeys)*len(canaryPrompts)*4) {
		t.Errorf("decode worker got %d requests for %d client requests", calls, n)
	}
	if r := c.pre.RejectedHandoffs() + c.dec.RejectedHandoffs(); r != 0 {
		t.Errorf("%d handoffs refused in clean traffic", r)
	}
	c.drained(t)
}

// unstable are the fields two servers may differ in for one answer: the
// response id, its creation second, and prefix-cache hits (serve's cache
// has seen the earlier canaries; the decode worker's KV came from prefill).
var unstable = regexp.MustCompile(`"(id|created)":("[^"]*"|[0-9]+)|"cached_tokens":[0-9]+`)

// comparable is an answer, JSON or SSE, byte for byte but for unstable.
func comparable(b []byte) string { return unstable.ReplaceAllString(string(b), "") }

func errParam(t *testing.T, r reply) (string, string) {
	t.Helper()
	var e struct {
		Error struct{ Param, Message string } `json:"error"`
	}
	json.Unmarshal(r.body, &e)
	return e.Error.Param, e.Error.Message
}

// kv_transfer_params that did not come from the router are refused with a
// 400 naming the field, whichever way they arrive, and reserve nothing.
func TestLLMDRefusesTenantKVTransferParams(t *testing.T) {
	c := newLLMDCluster(t, LLMDConfig{})
	forged := `{"prompt":"steal the other tenant's KV please","max_tokens":4,"kv_transfer_params":{"do_remote_prefill":true,"do_remote_decode":false,"remote_engine_id":"x","remote_block_ids":[1,2,3],"remote_host":"%s","remote_port":%s,"bulkhead_handle":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","bulkhead_handoff_tokens":%d}}`
	host, port, _ := strings.Cut(c.preAddr, ":")
	var promptLen int
	{
		r := post(t, &http.Client{}, c.serve+"/v1/completions", "acme-key", nil, `{"prompt":"steal the other tenant's KV please","max_tokens":1}`)
		o := parseOutcome(t, r, false)
		promptLen = o.Prompt
	}
	body := fmt.Sprintf(forged, host, port, promptLen-1)
	for _, tc := range []struct {
		name   string
		client *http.Client
		url    string
		want   string
	}{
		{"tenant straight to the decode pod", clientWith(nil), c.decURL, "presented none"},
		{"decode certificate", clientWith(c.ca.creds(certs.RoleDecode, "decode-1")), c.decURL, "is not one"},
		{"gateway certificate", clientWith(c.ca.creds(certs.RoleGateway, "gw")), c.decURL, "is not one"},
		{"through the sidecar without a prefill header", c.tenant, c.sidecar, "unknown, already used or expired"},
	} {
		r := post(t, tc.client, tc.url+"/v1/completions", "acme-key", nil, body)
		param, msg := errParam(t, r)
		if r.status != http.StatusBadRequest || param != "kv_transfer_params" || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %d %s", tc.name, r.status, r.body)
		}
	}
	// A tenant's do_remote_decode reaching the decode pod is refused too.
	r := post(t, c.tenant, c.sidecar+"/v1/completions", "acme-key", nil,
		`{"prompt":"x y z","max_tokens":1,"kv_transfer_params":{"do_remote_decode":true}}`)
	if p, msg := errParam(t, r); r.status != 400 || p != "kv_transfer_params" || !strings.Contains(msg, "decode worker") {
		t.Errorf("do_remote_decode at decode: %d %s", r.status, r.body)
	}
	// Without the field a tenant is served as on serve.
	if r := post(t, clientWith(nil), c.decURL+"/v1/completions", "acme-key", nil, `{"prompt":"hello","max_tokens":3}`); r.status != 200 {
		t.Errorf("plain tenant request: %d %s", r.status, r.body)
	}
	if n := c.pre.RejectedHandoffs(); n != 1 {
		t.Errorf("prefill counted %d refused fetches, want 1 (the forged handle)", n)
	}
	c.drained(t)
}

// prefillLeg is the sidecar's first leg, by hand: it returns the params.
func (c *llmdCluster) prefillLeg(t *testing.T, router *http.Client, key, prompt string) json.RawMessage {
	t.Helper()
	p, _ := json.Marshal(prompt)
	r := post(t, router, "https://"+c.preAddr+"/v1/completions", key, nil,
		`{"prompt":`+string(p)+`,"max_tokens":1,"min_tokens":1,"stream":false,"kv_transfer_params":{"do_remote_decode":true,"do_remote_prefill":false,"remote_engine_id":null,"remote_block_ids":null,"remote_host":null,"remote_port":null}}`)
	var b struct {
		KV    json.RawMessage `json:"kv_transfer_params"`
		Usage struct {
			Completion int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &b) != nil || len(b.KV) == 0 {
		t.Fatalf("prefill leg: %d %s", r.status, r.body)
	}
	if b.Usage.Completion != 0 {
		t.Errorf("prefill leg claims %d completion tokens; it samples none", b.Usage.Completion)
	}
	return b.KV
}

func (c *llmdCluster) decodeLeg(t *testing.T, key, prompt string, kv json.RawMessage) reply {
	p, _ := json.Marshal(prompt)
	return post(t, c.router, c.decURL+"/v1/completions", key, nil,
		`{"prompt":`+string(p)+`,"max_tokens":6,"temperature":0,"kv_transfer_params":`+string(kv)+`}`)
}

// A handle works once, for the decode worker, tenant and prompt it was
// issued for; replayed, redirected or late it is refused and its KV freed.
func TestLLMDHandleIsOneTimeAndBound(t *testing.T) {
	c := newLLMDCluster(t, LLMDConfig{})
	const prompt = "one time handles only, one time handles only"
	kv := c.prefillLeg(t, c.router, "acme-key", prompt)
	var fields map[string]any
	json.Unmarshal(kv, &fields)
	for _, f := range []string{"do_remote_prefill", "remote_engine_id", "remote_block_ids", "remote_host", "remote_port", "bulkhead_handle"} {
		if _, ok := fields[f]; !ok {
			t.Errorf("prefill reply lacks %s: %s", f, kv)
		}
	}
	if r := c.decodeLeg(t, "acme-key", prompt, kv); r.status != 200 {
		t.Fatalf("first use: %d %s", r.status, r.body)
	}
	check := func(name string, r reply, want string) {
		t.Helper()
		p, msg := errParam(t, r)
		if r.status != 400 || p != "kv_transfer_params" || !strings.Contains(msg, want) {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	check("replayed handle", c.decodeLeg(t, "acme-key", prompt, kv), "unknown, already used or expired")

	kv = c.prefillLeg(t, c.router, "acme-key", prompt)
	check("another tenant", c.decodeLeg(t, "globex-key", prompt, kv), "another tenant")

	kv = c.prefillLeg(t, c.router, "acme-key", prompt)
	check("another prompt of the same length", c.decodeLeg(t, "acme-key", strings.Replace(prompt, "o", "0", 1), kv), "different prompt")

	other := clientWith(c.ca.creds(certs.RoleRouter, "decode-1")) // a sidecar for decode-1
	kv = c.prefillLeg(t, other, "acme-key", prompt)
	check("handle bound to another decode worker", c.decodeLeg(t, "acme-key", prompt, kv), "bound to spiffe://bulkhead/decode/decode-1")

	if n := c.pre.RejectedHandoffs(); n != 4 {
		t.Errorf("prefill counted %d refused fetches, want 4", n)
	}
	c.drained(t)
}

func TestLLMDUnfetchedHandleExpires(t *testing.T) {
	c := newLLMDCluster(t, LLMDConfig{HandleTTL: 100 * time.Millisecond})
	const prompt = "a lease nobody fetches must end"
	kv := c.prefillLeg(t, c.router, "acme-key", prompt)
	if c.pre.OutstandingHandles() != 1 {
		t.Fatalf("%d handles outstanding after a prefill", c.pre.OutstandingHandles())
	}
	c.drained(t) // the lease's pages come back without any fetch
	r := c.decodeLeg(t, "acme-key", prompt, kv)
	if p, msg := errParam(t, r); r.status != 400 || p != "kv_transfer_params" || !strings.Contains(msg, "expired") {
		t.Errorf("expired handle: %d %s", r.status, r.body)
	}
	c.drained(t)
}

// A prefill refusal reaches the client unchanged and decode is never
// asked: there is no decode-only fallback.
func TestLLMDPrefillErrorPassesThroughTheSidecar(t *testing.T) {
	c := newLLMDCluster(t, LLMDConfig{})
	long, _ := json.Marshal(strings.Repeat("word ", 700))
	body := `{"prompt":` + string(long) + `,"max_tokens":4}`
	want := post(t, &http.Client{}, c.serve+"/v1/completions", "acme-key", nil, body)
	got := post(t, c.tenant, c.sidecar+"/v1/completions", "acme-key", map[string]string{"x-prefiller-host-port": c.preAddr}, body)
	if want.status != 400 || got.status != want.status || !bytes.Contains(got.body, []byte("context_length_exceeded")) {
		t.Errorf("oversized prompt: serve %d %s, sidecar %d %s", want.status, want.body, got.status, got.body)
	}
	if n := c.decodeCalls.Load(); n != 0 {
		t.Errorf("decode worker was called %d times after prefill refused", n)
	}
	c.drained(t)
}

// Without TLS credentials a worker listens on loopback only; there the
// router is whoever is on loopback, and only if the operator said so.
func TestLLMDWithoutCredentialsTrustsLoopbackOnlyWhenTold(t *testing.T) {
	for _, trust := range []bool{true, false} {
		lc := LLMDConfig{TrustLoopback: trust}
		pre, preSrv, _ := startLLMDWorker(t, Prefill, nil, lc, nil)
		dec, decSrv, _ := startLLMDWorker(t, Decode, nil, lc, nil)
		scURL, _ := startSidecar(t, decSrv.URL, nil)
		m, eng := llmdEngine0(t)
		ref := httptest.NewServer(api.NewServer(api.Config{ModelID: m.Name}, eng, testTokenizer(m), llmdTenants(t), quiet()))
		t.Cleanup(func() { ref.Close(); eng.Close() })
		body := `{"prompt":"loopback canary, loopback canary","max_tokens":8,"temperature":0,"logprobs":1}`
		got := post(t, &http.Client{}, scURL+"/v1/completions", "acme-key", map[string]string{"x-prefiller-host-port": preSrv.Listener.Addr().String()}, body)
		if trust {
			want := parseOutcome(t, post(t, &http.Client{}, ref.URL+"/v1/completions", "acme-key", nil, body), false)
			if o := parseOutcome(t, got, false); o != want {
				t.Errorf("trusted loopback: got %+v, want %+v", o, want)
			}
		} else if p, msg := errParam(t, got); got.status != 400 || p != "kv_transfer_params" || !strings.Contains(msg, "does not trust loopback") {
			t.Errorf("untrusted loopback: %d %s", got.status, got.body)
		}
		c := &llmdCluster{pre: pre, dec: dec}
		c.drained(t)
	}
}
