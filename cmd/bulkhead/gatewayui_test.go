package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/loader"
	"github.com/bulkhead-llm/bulkhead/internal/pagemap"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

// lockedBuffer is a bytes.Buffer the servers' goroutines may write to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// `bulkhead gateway --max-context 1024 --ui-listen` over workers serving 512:
// its page map names both workers as drifted and says in what, though the
// gateway itself is not ready (no healthy pair).
func TestGatewayPageMapShowsItsWorkersDrift(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := serveOptions{pool: loader.PoolOptions{MaxContext: 512, KVTokens: 1024}, threads: 1, tokenBudget: 256, maxRunning: 4,
		drain: time.Second, logLevel: "error", listen: "127.0.0.1:0"}
	var urls []string
	for _, role := range []worker.Role{worker.Prefill, worker.Decode} {
		ready := make(chan string, 1)
		go runWorkerProcess(ctx, o, role, "127.0.0.1:0", io.Discard, func(addr, _ string) { ready <- "http://" + addr })
		select {
		case u := <-ready:
			urls = append(urls, u)
		case <-time.After(time.Minute): // a hung start, not a speed check
			t.Fatalf("%s worker did not start", role)
		}
	}
	var stderr lockedBuffer
	go runGatewayProcessWith(ctx, gatewayOptions{prefill: urlList{urls[0]}, decode: urlList{urls[1]}, listen: "127.0.0.1:0",
		maxContext: 1024, interval: time.Hour, drain: time.Second, logLevel: "error", ui: uiOptions{listen: "127.0.0.1:0"}}, nil, &stderr, nil)
	addr := regexp.MustCompile(`live KV page map at (http://\S+)/ui`)
	var base string
	for deadline := time.Now().Add(time.Minute); base == ""; time.Sleep(20 * time.Millisecond) {
		if m := addr.FindStringSubmatch(stderr.String()); m != nil {
			base = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no page map address on stderr:\n%s", stderr.String())
		}
	}
	resp, err := http.Get(base + "/ui/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st pagemap.State
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.Gateway == nil || len(st.Gateway.Members) != 2 {
		t.Fatalf("gateway view: %+v", st)
	}
	for i, m := range st.Gateway.Members {
		if m.URL != urls[i] || m.State != "drift" || m.Problem != "max_context is 512, want 1024" {
			t.Errorf("worker %d: %+v, want %s drifted in max_context", i, m, urls[i])
		}
	}
}
