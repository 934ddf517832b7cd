package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/loader"
)

func TestServeMetricsOnlyOnTheAdminListener(t *testing.T) {
	admin := make(chan string, 1)
	o := serveOptions{listen: "127.0.0.1:0", threads: 1, tokenBudget: 256, maxRunning: 8, drain: 5 * time.Second,
		logLevel: "error", pool: loader.PoolOptions{MaxContext: 1024, KVTokens: 8192},
		trust: trustOptions{adminListen: "127.0.0.1:0", onAdmin: func(a string) { admin <- a }}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, o, io.Discard, func(a string) { ready <- a }) }()
	var base string
	select {
	case base = <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	adminAddr := <-admin
	if code, body := getBody(t, "http://"+base+"/metrics"); code != 404 || strings.Contains(body, "tenant=") {
		t.Errorf("tenant listener /metrics: %d %.200s", code, body)
	}
	if code, body := getBody(t, "http://"+adminAddr+"/metrics"); code != 200 || !strings.Contains(body, "bulkhead:kv_pages") {
		t.Errorf("admin listener /metrics: %d %.200s", code, body)
	}
	cancel()
	<-done
}

func TestMaxContextAboveTheTrainedContextRefusesToStart(t *testing.T) {
	bin := binary(t, "")
	// The built-in copy model is trained for 2048 tokens.
	code, _, errOut := runCmd(t, 60*time.Second, bin, "serve", "--max-context", "1000000", "--kv-tokens", "4096", "--threads", "1", "--listen", "127.0.0.1:0", "--admin-listen", "off")
	if code != 2 || !strings.Contains(errOut, "1000000") || !strings.Contains(errOut, "2048") || !strings.Contains(errOut, "--allow-long-context") {
		t.Fatalf("serve --max-context 1000000: exit %d, stderr:\n%s", code, errOut)
	}
	code, _, errOut = runCmd(t, 60*time.Second, bin, "worker", "--role", "decode", "--max-context", "4096", "--kv-tokens", "8192", "--threads", "1", "--listen", "127.0.0.1:0", "--kv-listen", "127.0.0.1:0")
	if code != 2 || !strings.Contains(errOut, "4096") || !strings.Contains(errOut, "2048") {
		t.Fatalf("worker --max-context 4096: exit %d, stderr:\n%s", code, errOut)
	}
	p := start(t, bin, "serve", "--max-context", "4096", "--kv-tokens", "8192", "--threads", "1", "--listen", "127.0.0.1:0", "--admin-listen", "off", "--allow-long-context")
	if out := p.output(); !strings.Contains(out, "trained_context=2048") {
		t.Errorf("--allow-long-context does not say what it allowed:\n%s", out)
	}
}

func TestTenantSecretFlagIsRequiredToBeStrong(t *testing.T) {
	bin := binary(t, "")
	dir := t.TempDir()
	weak := filepath.Join(dir, "secret")
	os.WriteFile(weak, []byte("abc"), 0o600)
	tf := tenantsFile(t, "sk-a")
	code, _, errOut := runCmd(t, 60*time.Second, bin, "serve", "--tenants", tf, "--tenant-secret", weak, "--listen", "127.0.0.1:0", "--admin-listen", "off")
	if code != 2 || !strings.Contains(errOut, "at least 16") {
		t.Fatalf("weak secret: exit %d\n%s", code, errOut)
	}
}
