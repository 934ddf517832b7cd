package worker

import (
	"bufio"
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/certs"
	"github.com/bulkhead-llm/bulkhead/internal/llmdproxy"
)

// startSidecar runs bulkhead's llm-d sidecar (internal/llmdproxy, what
// `bulkhead llmd-sidecar` serves) in front of the decode worker at
// decodeURL. With creds it presents the router certificate on both legs
// and serves TLS 1.3 with it, as the command does by default; the
// returned client is a tenant's, trusting the cluster CA. Without creds
// everything is plain HTTP (--secure-proxy=false, workers trusting
// loopback).
func startSidecar(t *testing.T, decodeURL string, creds *certs.Credentials) (string, *http.Client) {
	t.Helper()
	p, err := llmdproxy.New(llmdproxy.Config{Decode: hostPort(decodeURL), Creds: creds, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if creds == nil {
		s := httptest.NewServer(p)
		t.Cleanup(s.Close)
		return s.URL, &http.Client{}
	}
	s := httptest.NewUnstartedServer(p)
	s.TLS = &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{creds.Cert}}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s.URL, &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: creds.Roots, MinVersion: tls.VersionTLS13}}}
}

func hostPort(url string) string {
	return strings.TrimPrefix(strings.TrimPrefix(url, "https://"), "http://")
}

// A tenant's own kv_transfer_params on the prefill/decode path never
// travel: the sidecar replaces them on the prefill leg and hands decode
// only what prefill returned, so the answer is serve's.
func TestLLMDSidecarReplacesClientKVTransferParams(t *testing.T) {
	c := newLLMDCluster(t, LLMDConfig{})
	const base = `{"prompt":"replace what the client claims, replace what","max_tokens":6,"temperature":0,"logprobs":1`
	forged := base + `,"kv_transfer_params":{"do_remote_prefill":true,"remote_host":"10.9.9.9","remote_port":1,"bulkhead_handle":"AAAA"}}`
	want := parseOutcome(t, post(t, c.tenant, c.serve+"/v1/completions", "acme-key", nil, base+"}"), false)
	got := parseOutcome(t, post(t, c.tenant, c.sidecar+"/v1/completions", "acme-key", map[string]string{"x-prefiller-host-port": c.preAddr}, forged), false)
	if got != want {
		t.Errorf("with a client's kv_transfer_params: got %+v, want %+v", got, want)
	}
	if n := c.pre.RejectedHandoffs() + c.dec.RejectedHandoffs(); n != 0 {
		t.Errorf("%d handoffs refused; the forged params reached a worker", n)
	}
	c.drained(t)
}

// The sidecar's listener answers only TLS 1.3 with the router certificate,
// and /health without asking decode.
func TestLLMDSidecarListenerAndHealth(t *testing.T) {
	c := newLLMDCluster(t, LLMDConfig{})
	resp, err := c.tenant.Get(c.sidecar + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/health: %v %v", resp, err)
	}
	resp.Body.Close()
	if resp.TLS == nil || resp.TLS.Version != tls.VersionTLS13 || len(resp.TLS.PeerCertificates) == 0 {
		t.Fatalf("/health not served over TLS 1.3: %+v", resp.TLS)
	}
	if id, err := certs.IdentityOf(resp.TLS.PeerCertificates[0]); err != nil || id != (certs.Identity{Role: certs.RoleRouter, Name: "decode-0"}) {
		t.Errorf("sidecar serves as %v (%v), want its router certificate", id, err)
	}
	if n := c.decodeCalls.Load(); n != 0 {
		t.Errorf("/health reached the decode worker %d times", n)
	}
	old := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.ca.creds(certs.RoleRouter, "x").Roots, MaxVersion: tls.VersionTLS12}}}
	if _, err := old.Get(c.sidecar + "/health"); err == nil {
		t.Error("a TLS 1.2 client was served")
	}
}

// A tenant that hangs up mid-stream leaves nothing behind: every page and
// handle comes back (that each leg is cancelled is internal/llmdproxy's
// TestSidecarClientDisconnectCancelsLegs).
func TestLLMDSidecarClientDisconnectFreesPools(t *testing.T) {
	c := newLLMDCluster(t, LLMDConfig{})
	body := `{"prompt":"hang up after the first token, hang up after the first token","max_tokens":400,"temperature":0,"stream":true}`
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.sidecar+"/v1/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer acme-key")
	req.Header.Set("x-prefiller-host-port", c.preAddr)
	resp, err := c.tenant.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first event %q %v", line, err)
	}
	cancel()
	resp.Body.Close()
	c.drained(t)
}
