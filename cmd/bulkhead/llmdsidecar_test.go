package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"net/http"
	"path/filepath"
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
		if code := run(append([]string{"llmd-sidecar", "--listen", "127.0.0.1:0"}, c.args...), &out, &errOut); code != 2 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: exit %d, %s; want 2 and %q", c.args, code, errOut.String(), c.want)
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
