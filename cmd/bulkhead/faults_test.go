package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

// Faults of a disaggregated deployment with real processes: a killed
// worker, a restarted worker whose configuration drifted, a client that
// disconnects mid-stream. Each request ends correct or with a clean error,
// both pools drain, and the gateway keeps serving.

func completion(t *testing.T, base, prompt string, maxTokens int, stream bool) (int, string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"model": copymodel.Name, "prompt": prompt, "max_tokens": maxTokens, "stream": stream})
	resp, err := http.Post(base+"/v1/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func workerInfo(t *testing.T, p *proc) worker.Info {
	t.Helper()
	_, body := getBody(t, p.url()+"/v1/worker/info")
	var in worker.Info
	if err := json.Unmarshal([]byte(body), &in); err != nil {
		t.Fatalf("worker info: %v: %s", err, body)
	}
	return in
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func drained(t *testing.T, ps ...*proc) {
	t.Helper()
	for _, p := range ps {
		waitFor(t, p.addr+" to drain", func() bool {
			in := workerInfo(t, p)
			return in.PagesFree == in.PagesTotal && in.Running+in.Waiting == 0
		})
	}
}

func TestDisaggregatedFaultsWithRealProcesses(t *testing.T) {
	bin := binary(t, "")
	top := t // processes started in subtests must outlive them
	pool := []string{"--max-context", "1024", "--kv-tokens", "8192", "--threads", "1", "--log-level", "warn"}
	certs := clusterCerts(t, bin)
	pre := start(t, bin, append([]string{"worker", "--role", "prefill", "--listen", "127.0.0.1:0", "--tls-dir", certs + "/prefill-0"}, pool...)...)
	dec := start(t, bin, append([]string{"worker", "--role", "decode", "--listen", "127.0.0.1:0", "--kv-listen", "127.0.0.1:0", "--tls-dir", certs + "/decode-0"}, pool...)...)
	gw := start(t, bin, "gateway", "--admin-listen", "127.0.0.1:0", "--prefill", pre.url(), "--decode", dec.url(), "--listen", "127.0.0.1:0", "--check-interval", "200ms", "--tls-dir", certs+"/gateway")
	words := copymodel.AuditWords()
	prompt, _ := copymodel.Prompt(words.Canary[:8], 30, 700, 3)
	want := " " + strings.Join(words.Canary[:8], " ")

	if code, body := completion(t, gw.url(), prompt, 8, false); code != 200 || !strings.Contains(body, want) {
		t.Fatalf("healthy deployment: %d %s", code, body)
	}

	t.Run("client disconnects mid-stream", func(t *testing.T) {
		b, _ := json.Marshal(map[string]any{"model": copymodel.Name, "prompt": prompt, "max_tokens": 300, "stream": true, "ignore_eos": true})
		resp, err := http.Post(gw.url()+"/v1/completions", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 256)
		if _, err := resp.Body.Read(buf); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close() // gone after the first bytes
		drained(t, pre, dec)
	})

	t.Run("prefill killed, then back", func(t *testing.T) {
		pre.kill()
		waitFor(t, "gateway not ready", func() bool { c, _ := getBody(t, gw.url()+"/ready"); return c != 200 })
		if code, body := completion(t, gw.url(), prompt, 8, false); code != 503 {
			t.Fatalf("without a prefill worker: %d %s", code, body)
		}
		pre2 := start(top, bin, append([]string{"worker", "--role", "prefill", "--listen", pre.addr, "--tls-dir", certs + "/prefill-0"}, pool...)...)
		waitFor(t, "gateway ready again", func() bool { c, _ := getBody(t, gw.url()+"/ready"); return c == 200 })
		if code, body := completion(t, gw.url(), prompt, 8, false); code != 200 || !strings.Contains(body, want) {
			t.Fatalf("after prefill restart: %d %s", code, body)
		}
		drained(t, pre2, dec)
		pre = pre2
	})

	t.Run("decode killed mid-generation", func(t *testing.T) {
		b, _ := json.Marshal(map[string]any{"model": copymodel.Name, "prompt": prompt, "max_tokens": 300, "stream": true, "ignore_eos": true})
		resp, err := http.Post(gw.url()+"/v1/completions", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		buf := make([]byte, 64)
		resp.Body.Read(buf)
		dec.kill()
		rest, _ := io.ReadAll(resp.Body)
		stream := string(buf) + string(rest)
		if !strings.Contains(stream, `"error"`) || strings.Contains(stream, "[DONE]") {
			t.Fatalf("stream after decode died must end with an error event, not [DONE]:\n%s", stream)
		}
		drained(t, pre)
	})

	t.Run("decode restarted with a drifted configuration", func(t *testing.T) {
		drift := []string{"--max-context", "512", "--kv-tokens", "8192", "--threads", "1", "--log-level", "warn"}
		dec2 := start(top, bin, append([]string{"worker", "--role", "decode", "--listen", dec.addr, "--kv-listen", "127.0.0.1:0", "--tls-dir", certs + "/decode-0"}, drift...)...)
		time.Sleep(time.Second) // several checks
		if c, _ := getBody(t, gw.url()+"/ready"); c == 200 {
			t.Fatal("gateway ready with a decode worker whose max context differs")
		}
		if !strings.Contains(gw.output(), "max_context is 512, want 1024") {
			t.Fatalf("gateway did not log which value drifted:\n%s", gw.output())
		}
		if code, _ := completion(t, gw.url(), prompt, 8, false); code != 503 {
			t.Fatalf("request with only a drifted decode worker: %d", code)
		}
		dec2.kill()
		dec3 := start(top, bin, append([]string{"worker", "--role", "decode", "--listen", dec.addr, "--kv-listen", "127.0.0.1:0", "--tls-dir", certs + "/decode-0"}, pool...)...)
		waitFor(t, "gateway ready with a matching decode worker", func() bool { c, _ := getBody(t, gw.url()+"/ready"); return c == 200 })
		if code, body := completion(t, gw.url(), prompt, 8, false); code != 200 || !strings.Contains(body, want) {
			t.Fatalf("after the matching decode worker came back: %d %s", code, body)
		}
		drained(t, pre, dec3)
	})
}
