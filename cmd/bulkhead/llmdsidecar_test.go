package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/certs"
)

// The sidecar refuses to start where it could not work as documented: a
// TLS listener without a certificate, or a certificate that is not a
// router's (workers would refuse its kv_transfer_params).
func TestLLMDSidecarRefusesWhatCannotWork(t *testing.T) {
	dir := t.TempDir()
	if _, err := certs.WriteCluster(dir, certs.ClusterSpec{Decode: 1, Routers: true}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--secure-proxy needs the router certificate"},
		{[]string{"--tls-dir", filepath.Join(dir, "decode-0")}, "is not a router certificate"},
		{[]string{"--secure-proxy=false", "--decode", "8200"}, "want host:port"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		var out, errOut bytes.Buffer
		codes := make(chan int, 1)
		go func() {
			codes <- run(append([]string{"llmd-sidecar", "--listen", "127.0.0.1:0"}, c.args...), &out, &errOut)
		}()
		select {
		case code := <-codes:
			if code != 2 || !strings.Contains(errOut.String(), c.want) {
				t.Errorf("%v: exit %d, %s; want 2 and %q", c.args, code, errOut.String(), c.want)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%v: started serving; want a refusal naming %q", c.args, c.want)
		}
	}
}

// With the router certificate the command serves TLS 1.3 as that identity,
// answers /health itself (no decode worker is running) and stops cleanly.
func TestLLMDSidecarCommandServes(t *testing.T) {
	dir := t.TempDir()
	if _, err := certs.WriteCluster(dir, certs.ClusterSpec{Decode: 1, Routers: true}); err != nil {
		t.Fatal(err)
	}
	var o sidecarOptions
	fs := newFlags("llmd-sidecar", "", &bytes.Buffer{})
	o.register(fs)
	if err := fs.Parse([]string{"--listen", "127.0.0.1:0", "--tls-dir", filepath.Join(dir, "router-0"), "--log-level", "warn"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- runSidecarProcess(ctx, o, &bytes.Buffer{}, func(u string) { urls <- u }) }()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatal(err)
	}
	ca, err := certs.Load(certs.InDir(filepath.Join(dir, "router-0")))
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Roots}}}
	resp, err := client.Get(url + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s/health: %v %v", url, resp, err)
	}
	resp.Body.Close()
	if id, _ := certs.IdentityOf(resp.TLS.PeerCertificates[0]); !strings.HasPrefix(url, "https://") || resp.TLS.Version != tls.VersionTLS13 || id != (certs.Identity{Role: certs.RoleRouter, Name: "decode-0"}) {
		t.Errorf("served %s as %v over %x", url, id, resp.TLS.Version)
	}
	// No decode worker behind it: a proxied route is a clean 503, not a hang.
	if resp, err := client.Get(url + "/v1/models"); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("GET /v1/models with no decode worker: %v %v", resp, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sidecar did not stop")
	}
}

// The four processes as an operator runs them (docs/DEPLOY.md, llm-d):
// prefill and decode workers with certificates, `bulkhead llmd-sidecar`
// with the router certificate, and serve for reference. Two tenants'
// canaries through the sidecar answer what serve answers, streamed or
// not; a tenant's forged params are refused.
func TestLLMDSidecarProcessesEqualServe(t *testing.T) {
	bin := binary(t, "")
	dir := clusterCerts(t, bin, "--llmd-routers")
	keys := []string{"sk-llmd-acme-0123456789", "sk-llmd-globex-0123456789"}
	tenants := tenantsFile(t, keys...)
	pool := []string{"--threads", "1", "--max-context", "512", "--kv-tokens", "2048", "--log-level", "warn"}
	pre := start(t, bin, append([]string{"worker", "--role", "prefill", "--llmd", "--tenants", tenants, "--listen", "127.0.0.1:0",
		"--tls-dir", filepath.Join(dir, "prefill-0")}, pool...)...)
	dec := start(t, bin, append([]string{"worker", "--role", "decode", "--llmd", "--tenants", tenants, "--listen", "127.0.0.1:0",
		"--kv-listen", "127.0.0.1:0", "--tls-dir", filepath.Join(dir, "decode-0")}, pool...)...)
	sc := start(t, bin, "llmd-sidecar", "--listen", "127.0.0.1:0", "--decode", dec.addr, "--tls-dir", filepath.Join(dir, "router-0"), "--log-level", "warn")
	ref := start(t, bin, append([]string{"serve", "--tenants", tenants, "--listen", "127.0.0.1:0"}, pool...)...)
	if !sc.tls {
		t.Fatalf("sidecar announced plaintext:\n%s", sc.output())
	}
	ca, err := certs.Load(certs.InDir(filepath.Join(dir, "router-0")))
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Roots}}}
	ask := func(url, key, body string, hdr map[string]string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	unstable := regexp.MustCompile(`"(id|created)":("[^"]*"|[0-9]+)|"cached_tokens":[0-9]+`)
	hdr := map[string]string{"x-prefiller-host-port": pre.addr}
	for _, key := range keys {
		for _, b := range []string{
			`{"prompt":"canary-` + key[8:12] + `: the quick brown fox, the quick","max_tokens":10,"temperature":0,"logprobs":2}`,
			`{"prompt":"canary-` + key[8:12] + `: streamed, streamed","max_tokens":10,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`,
		} {
			ws, want := ask(ref.url(), key, b, nil)
			gs, got := ask(sc.url(), key, b, hdr)
			if ws != 200 || gs != 200 || unstable.ReplaceAllString(want, "") != unstable.ReplaceAllString(got, "") {
				t.Errorf("%s:\nsidecar %d %s\nserve   %d %s", b, gs, got, ws, want)
			}
		}
	}
	// A tenant's params on the decode-only path name the real prefill pod
	// and a made-up handle: refused there, by the handle.
	host, port, _ := strings.Cut(pre.addr, ":")
	forged := `{"prompt":"x y","max_tokens":2,"kv_transfer_params":{"do_remote_prefill":true,"remote_host":"` + host + `","remote_port":` + port + `,"bulkhead_handle":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","bulkhead_handoff_tokens":3}}`
	if code, body := ask(sc.url(), keys[0], forged, nil); code != 400 || !strings.Contains(body, `"param":"kv_transfer_params"`) || !strings.Contains(body, "unknown, already used or expired") {
		t.Errorf("forged params through the sidecar: %d %s", code, body)
	}
}

// --secure-proxy=false serves plain HTTP while keeping the router
// certificate for the legs.
func TestLLMDSidecarPlainListener(t *testing.T) {
	dir := t.TempDir()
	if _, err := certs.WriteCluster(dir, certs.ClusterSpec{Decode: 1, Routers: true}); err != nil {
		t.Fatal(err)
	}
	var o sidecarOptions
	fs := newFlags("llmd-sidecar", "", &bytes.Buffer{})
	o.register(fs)
	if err := fs.Parse([]string{"--listen", "127.0.0.1:0", "--secure-proxy=false", "--tls-dir", filepath.Join(dir, "router-0"), "--log-level", "warn"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- runSidecarProcess(ctx, o, &bytes.Buffer{}, func(u string) { urls <- u }) }()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatal(err)
	}
	resp, err := http.Get(url + "/health")
	if err != nil || resp.StatusCode != 200 || !strings.HasPrefix(url, "http://") || resp.TLS != nil {
		t.Fatalf("plain listener %s: %v %v", url, resp, err)
	}
	resp.Body.Close()
}
