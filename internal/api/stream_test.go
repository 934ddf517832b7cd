package api

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
)

// readSSE returns the data payloads of a stream.
func readSSE(t *testing.T, resp *http.Response) []string {
	t.Helper()
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, d)
		}
	}
	return events
}

func postStream(t *testing.T, ctx context.Context, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestStreamFailingMidwayEndsWithErrorEventAndNoDone(t *testing.T) {
	eng := apitest.NewFakeEngine()
	eng.FailAfter.Store(3)
	env := newTestEnv(t, eng, nil)
	resp := postStream(t, context.Background(), env.http.URL+"/v1/completions", `{"prompt":"abcdefgh","stream":true}`)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	events := readSSE(t, resp)
	if len(events) != 4 {
		t.Fatalf("events = %q, want 3 tokens and an error", events)
	}
	last := events[len(events)-1]
	if !strings.HasPrefix(last, `{"error":{`) || !strings.Contains(last, `"type":"server_error"`) {
		t.Errorf("last event = %s, want an error event", last)
	}
	for _, ev := range events {
		if ev == "[DONE]" {
			t.Errorf("failed stream sent [DONE]")
		}
	}
}

func TestClientDisconnectCancelsEngineRequest(t *testing.T) {
	eng := apitest.NewFakeEngine()
	eng.Block.Store(true)
	env := newTestEnv(t, eng, nil)
	ctx, cancel := context.WithCancel(context.Background())
	resp := postStream(t, ctx, env.http.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"stream":true}`)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), `"content":"["`) {
	}
	cancel()
	resp.Body.Close()
	select {
	case <-eng.Done:
	case <-time.After(10 * time.Second):
		t.Fatal("engine stream still running 10s after the client went away")
	}
	if eng.Cancelled() != 1 {
		t.Errorf("engine saw %d cancellations, want 1", eng.Cancelled())
	}
	// The server records the cancellation once the handler returns.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, m := env.adminMetrics(t); strings.Contains(m, `outcome="cancelled"`) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Error("no cancelled outcome in metrics")
}

func TestStreamNeverSendsPartOfAStopString(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	resp := postStream(t, context.Background(), env.http.URL+"/v1/completions",
		`{"prompt":"abc<EN<END>xyz","stream":true,"stop":"<END>","stream_options":{"include_usage":true}}`)
	defer resp.Body.Close()
	events := readSSE(t, resp)
	var text strings.Builder
	for _, ev := range events {
		if i := strings.Index(ev, `"text":"`); i >= 0 {
			rest := ev[i+8:]
			text.WriteString(rest[:strings.IndexByte(rest, '"')])
		}
	}
	if text.String() != `abc\u003cEN` || events[len(events)-1] != "[DONE]" {
		t.Fatalf("streamed %q, events %q", text.String(), events)
	}
	if !strings.Contains(events[len(events)-2], `"completion_tokens":11`) {
		t.Errorf("usage event = %s, want 11 completion tokens (through the stop string)", events[len(events)-2])
	}
}

func TestShutdownFinishesInFlightThenRefuses(t *testing.T) {
	eng := apitest.NewFakeEngine()
	eng.DelayNS.Store(int64(5 * time.Millisecond))
	env := newTestEnv(t, eng, nil)
	respCh := make(chan string, 1)
	go func() {
		_, _, body := env.post(t, "/v1/completions", "", `{"prompt":"finish me","max_tokens":9}`)
		respCh <- body
	}()
	<-eng.Started
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := env.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if body := <-respCh; !strings.Contains(body, `"text":"finish me"`) {
		t.Errorf("in-flight request was not finished: %s", body)
	}
	status, _, body := env.post(t, "/v1/completions", "", `{"prompt":"late"}`)
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "shutting_down") {
		t.Errorf("request after shutdown: %d %s", status, body)
	}
	if s, _ := env.get(t, "/ready"); s != http.StatusServiceUnavailable {
		t.Errorf("/ready during shutdown = %d, want 503", s)
	}
}

func TestShutdownDeadlineAbortsStreamsWithErrorEvent(t *testing.T) {
	eng := apitest.NewFakeEngine()
	eng.Block.Store(true)
	env := newTestEnv(t, eng, nil)
	resp := postStream(t, context.Background(), env.http.URL+"/v1/completions", `{"prompt":"forever","stream":true}`)
	defer resp.Body.Close()
	<-eng.Started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := env.srv.Shutdown(ctx); err == nil {
		t.Error("Shutdown returned nil though a request outlived the deadline")
	}
	events := readSSE(t, resp)
	last := events[len(events)-1]
	if !strings.Contains(last, `"code":"shutting_down"`) {
		t.Errorf("events %q: want a final shutting_down error event", events)
	}
	if eng.Cancelled() != 1 {
		t.Errorf("engine cancellations = %d, want 1", eng.Cancelled())
	}
}
