package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/certs"
	"github.com/bulkhead-llm/bulkhead/internal/gateway"
)

var (
	clientMu     sync.Mutex
	workerClient *http.Client // the gateway's identity, for tests that read worker info
)

// clusterCerts runs `bulkhead certs` into a temporary directory and makes
// its gateway identity the one getBody presents to https workers.
func clusterCerts(t *testing.T, bin string, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	code, out, errOut := runCmd(t, 30*time.Second, bin, append([]string{"certs", "--out", dir}, extra...)...)
	if code != 0 || !strings.Contains(out, "spiffe://bulkhead/decode/decode-0") {
		t.Fatalf("bulkhead certs: exit %d\n%s%s", code, out, errOut)
	}
	c, err := certs.Load(certs.InDir(filepath.Join(dir, "gateway")))
	if err != nil {
		t.Fatal(err)
	}
	clientMu.Lock()
	workerClient = gateway.TLSClient(c)
	clientMu.Unlock()
	return dir
}

func clientFor(url string) *http.Client {
	clientMu.Lock()
	defer clientMu.Unlock()
	if strings.HasPrefix(url, "https://") && workerClient != nil {
		return workerClient
	}
	return http.DefaultClient
}

func TestWorkerWithoutCredentialsRefusesAPublicAddress(t *testing.T) {
	bin := binary(t, "")
	code, _, errOut := runCmd(t, 30*time.Second, bin, "worker", "--role", "prefill", "--listen", "0.0.0.0:0", "--threads", "1")
	if code != 2 || !strings.Contains(errOut, "refusing to serve without TLS credentials") || !strings.Contains(errOut, "0.0.0.0:0") {
		t.Fatalf("worker on 0.0.0.0 without credentials: exit %d, stderr:\n%s", code, errOut)
	}
}

func TestWorkerWithCertificatesAnswersOnlyTheGateway(t *testing.T) {
	bin := binary(t, "")
	dir := clusterCerts(t, bin)
	dec := start(t, bin, "worker", "--role", "decode", "--listen", "127.0.0.1:0", "--kv-listen", "127.0.0.1:0",
		"--tls-dir", filepath.Join(dir, "decode-0"), "--threads", "1", "--max-context", "512", "--kv-tokens", "2048")
	if !dec.tls {
		t.Fatalf("worker with certificates announced plaintext:\n%s", dec.output())
	}
	u := dec.url()
	if code, body := getBody(t, u+"/v1/worker/info"); code != 200 || !strings.Contains(body, "spiffe://bulkhead/decode/decode-0") {
		t.Fatalf("gateway identity: %d %s", code, body)
	}
	c, err := certs.Load(certs.InDir(filepath.Join(dir, "prefill-0")))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := gateway.TLSClient(c).Get(u + "/v1/worker/info")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("prefill identity calling a decode worker: %d, want 403", resp.StatusCode)
	}
}
