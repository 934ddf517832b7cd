package llmdproxy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/certs"
)

// pki issues identities of one test cluster CA.
type pki struct {
	t  *testing.T
	ca *certs.CA
}

func newPKI(t *testing.T) *pki {
	ca, err := certs.NewCA(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &pki{t, ca}
}

func (p *pki) creds(role, name string) *certs.Credentials {
	is, err := p.ca.Issue(certs.Identity{Role: role, Name: name}, []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		p.t.Fatal(err)
	}
	c, err := certs.FromIssued(is)
	if err != nil {
		p.t.Fatal(err)
	}
	return c
}

// seen is one request a stub pod received.
type seen struct {
	path   string
	header http.Header
	body   map[string]json.RawMessage
	raw    string
	peer   certs.Identity
}

// stub is a prefill or decode pod over mutual TLS that records what it got.
type stub struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []seen
	done chan struct{} // closed when a handler saw its request cancelled
	once sync.Once
}

func newStub(t *testing.T, creds *certs.Credentials, h func(rw http.ResponseWriter, r *http.Request, s seen)) *stub {
	st := &stub{done: make(chan struct{})}
	st.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		s := seen{path: r.URL.RequestURI(), header: r.Header.Clone(), raw: string(raw)}
		json.Unmarshal(raw, &s.body)
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			s.peer, _ = certs.IdentityOf(r.TLS.PeerCertificates[0])
		}
		st.mu.Lock()
		st.got = append(st.got, s)
		st.mu.Unlock()
		go func() {
			<-r.Context().Done()
			st.once.Do(func() { close(st.done) })
		}()
		h(rw, r, s)
	}))
	st.srv.TLS = creds.ServerConfig(certs.RoleRouter)
	st.srv.StartTLS()
	t.Cleanup(st.srv.Close)
	return st
}

func (s *stub) addr() string { return strings.TrimPrefix(s.srv.URL, "https://") }

func (s *stub) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.got...)
}

const prefillKV = `{"do_remote_prefill":true,"remote_engine_id":"e1","remote_block_ids":[3,4],"remote_host":"10.0.0.7","remote_port":8000,"bulkhead_handle":"h-1"}`

func okPrefill(rw http.ResponseWriter, r *http.Request, s seen) {
	rw.Header().Set("Content-Type", "application/json")
	io.WriteString(rw, `{"id":"p","choices":[{"text":""}],"usage":{"prompt_tokens":5,"completion_tokens":0},"kv_transfer_params":`+prefillKV+`}`)
}

func echoDecode(rw http.ResponseWriter, r *http.Request, s seen) {
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("X-Decode", "yes")
	io.WriteString(rw, `{"decoded":true}`)
}

func sidecar(t *testing.T, cfg Config, decode *stub) *httptest.Server {
	if decode != nil {
		cfg.Decode = decode.addr()
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(p)
	t.Cleanup(s.Close)
	return s
}

func send(t *testing.T, url string, hdr map[string]string, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// The prefill leg asks for one token without streaming and with the
// do_remote_decode params; the decode leg is the original body with the
// params prefill returned; both legs carry the router certificate and the
// client's headers but not x-prefiller-host-port.
func TestSidecarLegs(t *testing.T) {
	k := newPKI(t)
	router := k.creds(certs.RoleRouter, "decode-0")
	pre := newStub(t, k.creds(certs.RolePrefill, "prefill-0"), okPrefill)
	dec := newStub(t, k.creds(certs.RoleDecode, "decode-0"), echoDecode)
	sc := sidecar(t, Config{Creds: router}, dec)
	for _, c := range []struct{ path, body string }{
		{"/v1/completions", `{"prompt":"a <b> & c","max_tokens":7,"min_tokens":2,"stream":true,"stream_options":{"include_usage":true},"temperature":0.25,"kv_transfer_params":{"forged":1}}`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":9,"stream":false}`},
	} {
		resp, body := send(t, sc.URL+c.path, map[string]string{PrefillerHeader: pre.addr(), "Authorization": "Bearer k1", "X-Request-Id": "client-1"}, c.body)
		if resp.StatusCode != 200 || body != `{"decoded":true}` || resp.Header.Get("X-Decode") != "yes" {
			t.Fatalf("%s: %d %q %v", c.path, resp.StatusCode, body, resp.Header)
		}
		p, d := pre.requests(), dec.requests()
		pl, dl := p[len(p)-1], d[len(d)-1]
		var orig map[string]json.RawMessage
		json.Unmarshal([]byte(c.body), &orig)
		want := map[string]string{"max_tokens": "1", "stream": "false", "kv_transfer_params": string(prefillRequest)}
		if c.path == "/v1/chat/completions" {
			want["max_completion_tokens"] = "1"
		} else {
			want["min_tokens"] = "1"
			if _, ok := pl.body["max_completion_tokens"]; ok {
				t.Errorf("completions prefill leg got max_completion_tokens")
			}
		}
		for f, v := range want {
			if string(pl.body[f]) != v {
				t.Errorf("%s prefill leg %s = %s, want %s", c.path, f, pl.body[f], v)
			}
		}
		if _, ok := pl.body["stream_options"]; ok {
			t.Errorf("%s prefill leg kept stream_options", c.path)
		}
		for f, v := range orig {
			if _, changed := want[f]; !changed && f != "stream_options" && string(pl.body[f]) != string(v) {
				t.Errorf("%s prefill leg %s = %s, want the client's %s", c.path, f, pl.body[f], v)
			}
			if f != "kv_transfer_params" && string(dl.body[f]) != string(v) {
				t.Errorf("%s decode leg %s = %s, want the client's %s", c.path, f, dl.body[f], v)
			}
		}
		orig["kv_transfer_params"] = nil
		if len(dl.body) != len(orig) {
			t.Errorf("%s decode leg has fields %v, want the client's and kv_transfer_params", c.path, dl.body)
		}
		if string(dl.body["kv_transfer_params"]) != prefillKV {
			t.Errorf("%s decode leg kv_transfer_params = %s, want prefill's %s", c.path, dl.body["kv_transfer_params"], prefillKV)
		}
		if !strings.Contains(dl.raw, `"a <b> & c"`) && c.path == "/v1/completions" {
			t.Errorf("prompt not passed as written: %s", dl.raw)
		}
		for _, l := range []seen{pl, dl} {
			if l.path != c.path || l.peer != router.Identity || l.header.Get("Authorization") != "Bearer k1" || l.header.Get(PrefillerHeader) != "" {
				t.Errorf("%s leg to %s: peer %v, headers %v", c.path, l.path, l.peer, l.header)
			}
		}
		if ids := pl.header.Values("X-Request-Id"); len(ids) != 2 || ids[0] != "client-1" {
			t.Errorf("prefill leg x-request-id %v, want the client's and a fresh one", ids)
		}
	}
}

// Each leg accepts only the peer of its role: a prefill leg to a decode
// certificate and a decode leg to another decode pod's certificate fail
// before any request is sent.
func TestSidecarChecksPeerRoles(t *testing.T) {
	k := newPKI(t)
	router := k.creds(certs.RoleRouter, "decode-0")
	notPrefill := newStub(t, k.creds(certs.RoleDecode, "decode-0"), okPrefill)
	otherDecode := newStub(t, k.creds(certs.RoleDecode, "decode-1"), echoDecode)
	pre := newStub(t, k.creds(certs.RolePrefill, "prefill-0"), okPrefill)
	dec := newStub(t, k.creds(certs.RoleDecode, "decode-0"), echoDecode)

	sc := sidecar(t, Config{Creds: router}, dec)
	if resp, body := send(t, sc.URL+"/v1/completions", map[string]string{PrefillerHeader: notPrefill.addr()}, `{"prompt":"x"}`); resp.StatusCode != 502 || !strings.Contains(body, "is not a prefill") {
		t.Errorf("prefill leg to a decode certificate: %d %s", resp.StatusCode, body)
	}
	sc2 := sidecar(t, Config{Creds: router}, otherDecode)
	if resp, body := send(t, sc2.URL+"/v1/completions", map[string]string{PrefillerHeader: pre.addr()}, `{"prompt":"x"}`); resp.StatusCode != 503 || !strings.Contains(body, "decode/decode-0") {
		t.Errorf("decode leg to decode-1: %d %s", resp.StatusCode, body)
	}
	if n := len(notPrefill.requests()) + len(otherDecode.requests()) + len(dec.requests()); n != 0 {
		t.Errorf("%d requests reached a pod of the wrong identity", n)
	}
	if _, err := New(Config{Decode: dec.addr(), Creds: k.creds(certs.RoleDecode, "decode-0")}); err == nil || !strings.Contains(err.Error(), "not a router certificate") {
		t.Errorf("New with a decode certificate: %v", err)
	}
}

// A prefill refusal is the client's answer (status, headers, body) and
// decode is never asked; so is a prefill answer without params, and an
// unreachable prefill pod.
func TestSidecarPrefillErrorsPassThrough(t *testing.T) {
	k := newPKI(t)
	router := k.creds(certs.RoleRouter, "decode-0")
	refuse := newStub(t, k.creds(certs.RolePrefill, "p0"), func(rw http.ResponseWriter, r *http.Request, s seen) {
		rw.Header().Set("Content-Type", "application/json")
		rw.Header().Set("X-Prefill", "refused")
		rw.WriteHeader(400)
		io.WriteString(rw, `{"error":{"message":"too long","param":"prompt","code":"context_length_exceeded"}}`)
	})
	noParams := newStub(t, k.creds(certs.RolePrefill, "p1"), func(rw http.ResponseWriter, r *http.Request, s seen) {
		io.WriteString(rw, `{"choices":[],"kv_transfer_params":null}`)
	})
	dec := newStub(t, k.creds(certs.RoleDecode, "decode-0"), echoDecode)
	sc := sidecar(t, Config{Creds: router}, dec)
	resp, body := send(t, sc.URL+"/v1/completions", map[string]string{PrefillerHeader: refuse.addr()}, `{"prompt":"x"}`)
	if resp.StatusCode != 400 || resp.Header.Get("X-Prefill") != "refused" || body != `{"error":{"message":"too long","param":"prompt","code":"context_length_exceeded"}}` {
		t.Errorf("prefill refusal: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if resp, body := send(t, sc.URL+"/v1/completions", map[string]string{PrefillerHeader: noParams.addr()}, `{"prompt":"x"}`); resp.StatusCode != 502 || !strings.Contains(body, "no kv_transfer_params") {
		t.Errorf("prefill answer without params: %d %s", resp.StatusCode, body)
	}
	gone := refuse.addr()
	refuse.srv.Close()
	if resp, _ := send(t, sc.URL+"/v1/completions", map[string]string{PrefillerHeader: gone}, `{"prompt":"x"}`); resp.StatusCode != 502 {
		t.Errorf("unreachable prefill: %d", resp.StatusCode)
	}
	if n := len(dec.requests()); n != 0 {
		t.Errorf("decode was asked %d times after prefill failed: a decode-only fallback", n)
	}
}

// An SSE answer arrives event by event, byte for byte as decode sent it.
func TestSidecarStreamsDecodeUnchanged(t *testing.T) {
	k := newPKI(t)
	router := k.creds(certs.RoleRouter, "decode-0")
	pre := newStub(t, k.creds(certs.RolePrefill, "p0"), okPrefill)
	release := make(chan struct{})
	events := []string{"data: {\"choices\":[{\"text\":\"a\"}]}\n\n", "data: {\"choices\":[{\"text\":\"b\"}],\"usage\":{\"prompt_tokens_details\":{\"cached_tokens\":0}}}\n\n", "data: [DONE]\n\n"}
	dec := newStub(t, k.creds(certs.RoleDecode, "decode-0"), func(rw http.ResponseWriter, r *http.Request, s seen) {
		rw.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(rw, events[0])
		rw.(http.Flusher).Flush()
		<-release // the rest only once the client has the first event
		io.WriteString(rw, events[1]+events[2])
	})
	sc := sidecar(t, Config{Creds: router}, dec)
	req, _ := http.NewRequest(http.MethodPost, sc.URL+"/v1/completions", strings.NewReader(`{"prompt":"x","stream":true}`))
	req.Header.Set(PrefillerHeader, pre.addr())
	late := time.AfterFunc(3*time.Second, func() { t.Error("first event not delivered before decode finished: not streamed"); close(release) })
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	first := make([]byte, len(events[0]))
	if _, err := io.ReadFull(br, first); err != nil || string(first) != events[0] {
		t.Fatalf("first event %q %v", first, err)
	}
	if late.Stop() {
		close(release)
	}
	rest, _ := io.ReadAll(br)
	if string(rest) != events[1]+events[2] || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("rest of the stream %q (%s)", rest, resp.Header.Get("Content-Type"))
	}
	if got := dec.requests()[0].body["stream"]; string(got) != "true" {
		t.Errorf("decode leg stream = %s, want the client's true", got)
	}
}

// Bodies are bounded, legs have deadlines, a bad header is refused, and
// /health is the sidecar's own.
func TestSidecarBoundsAndDeadlines(t *testing.T) {
	k := newPKI(t)
	router := k.creds(certs.RoleRouter, "decode-0")
	slow := newStub(t, k.creds(certs.RolePrefill, "p0"), func(rw http.ResponseWriter, r *http.Request, s seen) { <-r.Context().Done() })
	dec := newStub(t, k.creds(certs.RoleDecode, "decode-0"), echoDecode)
	sc := sidecar(t, Config{Creds: router, MaxBodyBytes: 64, PrefillTimeout: 200 * time.Millisecond}, dec)
	if resp, body := send(t, sc.URL+"/v1/completions", nil, `{"prompt":"`+strings.Repeat("x", 100)+`"}`); resp.StatusCode != 413 || !strings.Contains(body, "64 bytes") {
		t.Errorf("oversized body: %d %s", resp.StatusCode, body)
	}
	start := time.Now()
	if resp, _ := send(t, sc.URL+"/v1/completions", map[string]string{PrefillerHeader: slow.addr()}, `{"prompt":"x"}`); resp.StatusCode != 504 || time.Since(start) > 5*time.Second {
		t.Errorf("stalled prefill: %d after %v", resp.StatusCode, time.Since(start))
	}
	for _, h := range []string{"10.0.0.1", "10.0.0.1:80/admin", "user@10.0.0.1:80"} {
		if resp, _ := send(t, sc.URL+"/v1/completions", map[string]string{PrefillerHeader: h}, `{"prompt":"x"}`); resp.StatusCode != 400 {
			t.Errorf("header %q: %d, want 400", h, resp.StatusCode)
		}
	}
	if resp, body := send(t, sc.URL+"/v1/completions", map[string]string{PrefillerHeader: slow.addr()}, `[1,2]`); resp.StatusCode != 400 || !strings.Contains(body, "not a JSON object") {
		t.Errorf("non-object body: %d %s", resp.StatusCode, body)
	}
	dec.srv.Close()
	resp, err := http.Get(sc.URL + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("/health with decode down: %v %v", resp, err)
	}
	if n := len(dec.requests()); n != 0 {
		t.Errorf("decode got %d requests", n)
	}
}

// Without the header a request reaches decode as sent, other routes too.
func TestSidecarPassesThroughWithoutHeader(t *testing.T) {
	k := newPKI(t)
	dec := newStub(t, k.creds(certs.RoleDecode, "decode-0"), echoDecode)
	sc := sidecar(t, Config{Creds: k.creds(certs.RoleRouter, "decode-0")}, dec)
	const body = `{"prompt":"x",  "kv_transfer_params":{"do_remote_prefill":true}}`
	send(t, sc.URL+"/v1/completions?a=1", nil, body)
	if resp, err := http.Get(sc.URL + "/v1/models"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /v1/models: %v %v", resp, err)
	}
	got := dec.requests()
	if len(got) != 2 || got[0].raw != body || got[0].path != "/v1/completions?a=1" || got[1].path != "/v1/models" {
		t.Errorf("decode saw %+v", got)
	}
}

// A client that goes away cancels the leg in flight: prefill, or decode
// while it streams.
func TestSidecarClientDisconnectCancelsLegs(t *testing.T) {
	k := newPKI(t)
	router := k.creds(certs.RoleRouter, "decode-0")
	hang := func(rw http.ResponseWriter, r *http.Request, s seen) {
		rw.WriteHeader(200)
		rw.(http.Flusher).Flush()
		<-r.Context().Done()
	}
	pre := newStub(t, k.creds(certs.RolePrefill, "p0"), func(rw http.ResponseWriter, r *http.Request, s seen) { <-r.Context().Done() })
	okPre := newStub(t, k.creds(certs.RolePrefill, "p1"), okPrefill)
	dec := newStub(t, k.creds(certs.RoleDecode, "decode-0"), hang)
	// Deadlines well past the check, so only the disconnect can end a leg in time.
	sc := sidecar(t, Config{Creds: router, PrefillTimeout: 10 * time.Second, DecodeTimeout: 10 * time.Second}, dec)
	for _, c := range []struct {
		name string
		pod  *stub
		to   string
	}{{"prefill", pre, pre.addr()}, {"decode", dec, okPre.addr()}} {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, sc.URL+"/v1/completions", strings.NewReader(`{"prompt":"x"}`))
		req.Header.Set(PrefillerHeader, c.to)
		go func() {
			for len(c.pod.requests()) == 0 {
				time.Sleep(5 * time.Millisecond)
			}
			cancel()
		}()
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		select {
		case <-c.pod.done:
		case <-time.After(5 * time.Second):
			t.Errorf("%s leg not cancelled after the client left", c.name)
		}
		cancel()
	}
}
