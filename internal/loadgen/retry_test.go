package loadgen

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/api"
	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
)

type connKey struct{}

// startClosingServer serves the fake engine but, like a server whose idle
// timeout fires just as a request arrives, closes a kept-alive connection
// without a byte of answer when the next completions request comes on it
// (and, with killFirst, the first request of every connection too).
func startClosingServer(t *testing.T, killFirst bool) (url string, killed *atomic.Int64) {
	t.Helper()
	eng := apitest.NewFakeEngine()
	eng.MaxCtx.Store(4096)
	inner := api.NewServer(api.Config{ModelID: "fake"}, eng, apitest.ByteTokenizer{},
		nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	killed = new(atomic.Int64)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := r.Context().Value(connKey{}).(*atomic.Int64)
		k := n.Add(1)
		if r.URL.Path == "/v1/completions" && (k > 1 || killFirst) {
			killed.Add(1)
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				c.Close()
			}
			return
		}
		inner.ServeHTTP(w, r)
	})
	hs := httptest.NewUnstartedServer(h)
	hs.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, new(atomic.Int64))
	}
	hs.Start()
	t.Cleanup(hs.Close)
	return hs.URL, killed
}

// TestRunResendsWhenReusedConnectionClosesUnanswered: a healthy server
// that closes kept-alive connections loses no request; each close is
// counted as a retry, not a failure.
func TestRunResendsWhenReusedConnectionClosesUnanswered(t *testing.T) {
	url, killed := startClosingServer(t, false)
	for _, conc := range []int{1, 3} {
		rep, err := Run(context.Background(), Config{URL: url, Model: "fake", Concurrency: conc, Requests: 8, InputLen: 10, OutputLen: 4, Stream: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Failed != 0 || rep.Completed != 8 {
			t.Fatalf("concurrency %d: %d completed, %d failed (%v), want all 8 completed", conc, rep.Completed, rep.Failed, rep.Errors)
		}
		if rep.Retries == 0 {
			t.Errorf("concurrency %d: no retries counted though the server closed %d connections", conc, killed.Load())
		}
	}
}

// TestRunSeparatesServerAndTransportFailures: a connection closed on its
// first request (nothing to resend safely) is a transport failure; an
// HTTP error or an error event is the server's.
func TestRunSeparatesServerAndTransportFailures(t *testing.T) {
	url, _ := startClosingServer(t, true)
	rep, err := Run(context.Background(), Config{URL: url, Model: "fake", Concurrency: 1, Requests: 3, InputLen: 10, OutputLen: 4, Stream: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.TransportFailures != 3 || rep.ServerFailures != 0 {
		t.Errorf("closed fresh connections: transport %d server %d, want 3 and 0 (%v)", rep.TransportFailures, rep.ServerFailures, rep.Errors)
	}
	eng := apitest.NewFakeEngine()
	eng.FailAfter.Store(2)
	url2 := startServer(t, eng, nil)
	rep, err = Run(context.Background(), Config{URL: url2, Concurrency: 2, Requests: 4, InputLen: 20, OutputLen: 10, Stream: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.ServerFailures != 4 || rep.TransportFailures != 0 {
		t.Errorf("error events: server %d transport %d, want 4 and 0", rep.ServerFailures, rep.TransportFailures)
	}
}
