package gateway

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

// freeAddr returns a loopback address nothing listens on (yet).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// A gateway started before its workers (as a process manager starts them
// together) is not ready, refuses requests with 503, probes with backoff,
// and serves once the workers come up 5 s later.
func TestGatewayStartedBeforeItsWorkersBecomesReady(t *testing.T) {
	preAddr, decAddr := freeAddr(t), freeAddr(t)
	g, err := New(context.Background(), Config{Prefill: []string{"http://" + preAddr}, Decode: []string{"http://" + decAddr},
		Logger: quiet, CheckInterval: time.Second})
	if err != nil {
		t.Fatalf("gateway with no worker up yet: %v", err)
	}
	t.Cleanup(g.Close)
	if g.Ready() {
		t.Fatal("ready with no worker up")
	}
	if _, err := g.Submit(context.Background(), engine.Request{Prompt: []int32{1, 2}, MaxTokens: 1}); !errors.Is(err, engine.ErrShuttingDown) {
		t.Fatalf("submit before any worker answered: %v, want ErrShuttingDown (503)", err)
	}
	// The workers start 5 s late (issue 9's bound); the gateway keeps
	// probing with backoff and is still up, not ready, meanwhile.
	time.Sleep(5 * time.Second)
	if g.Ready() {
		t.Fatal("ready before any worker is up")
	}
	listen := func(addr string) net.Listener {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("port %s taken meanwhile: %v", addr, err)
		}
		return ln
	}
	pre := startWorkerOn(t, worker.Prefill, smallPool, engine.Config{TokenBudget: 256, MaxRunning: 8}, listen(preAddr))
	dec := startWorkerOn(t, worker.Decode, smallPool, engine.Config{TokenBudget: 256, MaxRunning: 8}, listen(decAddr))
	select {
	case <-g.Started():
	case <-time.After(30 * time.Second):
		t.Fatal("gateway did not start within 30s of its workers")
	}
	waitFor(t, g.Ready)
	words := copymodel.AuditWords()
	prompt, want := canaryPrompt(t, g, words.Canary[:8], 3, 60, 1)
	ch, err := g.Submit(context.Background(), engine.Request{Prompt: prompt, MaxTokens: 8})
	if err != nil {
		t.Fatal(err)
	}
	got, err := collect(t, ch)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("after the late start: %v %v, want %v", got, err, want)
	}
	pre.drained(t)
	dec.drained(t)
}
