package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/loader"
	"github.com/bulkhead-llm/bulkhead/internal/tenant"
)

// Self-check server: the copy model with a deliberately small context and
// pool, so the audit's boundary probes (up to twice the context) are quick
// and pages are reused between tenants all the time.
const (
	selfCheckContext = 1024
	selfCheckPool    = 8192
)

// startSelfCheckServer serves the copy model in-process on a free loopback
// port with two tenants, and returns its URL, their API keys, and a stop
// function that drains it.
// It returns the API base URL, the tenants' keys, the admin listener's
// /metrics URL (so the pressure phase reads the pool) and a stop function.
func startSelfCheckServer(ctx context.Context, stderr io.Writer) (string, []string, string, func(), error) {
	keys := []string{randomKey("tenant-a"), randomKey("tenant-b")}
	toml := fmt.Sprintf("[[tenant]]\nid = \"self-check-a\"\napi_key_sha256 = [%q]\n\n[[tenant]]\nid = \"self-check-b\"\napi_key_sha256 = [%q]\n",
		tenant.HashKey(keys[0]), tenant.HashKey(keys[1]))
	reg, err := tenant.Parse([]byte(toml))
	if err != nil {
		return "", nil, "", nil, err
	}
	admin := make(chan string, 1)
	o := serveOptions{listen: "127.0.0.1:0", tenants: reg,
		trust: trustOptions{adminListen: "127.0.0.1:0", onAdmin: func(a string) { admin <- a }}, tokenBudget: 512, maxRunning: 16,
		drain: 5 * time.Second, logLevel: "warn",
		pool: loader.PoolOptions{MaxContext: selfCheckContext, KVTokens: selfCheckPool}}
	sctx, cancel := context.WithCancel(ctx)
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(sctx, o, stderr, func(addr string) { ready <- addr }) }()
	select {
	case addr := <-ready:
		fmt.Fprintf(stderr, "self-check: bulkhead serving the copy model on %s (max context %d, pool %d tokens, 2 tenants)\n", addr, selfCheckContext, selfCheckPool)
		return "http://" + addr, keys, "http://" + <-admin + "/metrics", func() { cancel(); <-done }, nil
	case err := <-done:
		cancel()
		return "", nil, "", nil, err
	}
}

func randomKey(prefix string) string {
	b := make([]byte, 16)
	rand.Read(b)
	return "sk-" + prefix + "-" + hex.EncodeToString(b)
}
