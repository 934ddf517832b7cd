package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
)

// A gateway with 2 prefill and 3 decode workers as processes, canary load
// from three tenants, and one prefill and one decode worker killed and
// restarted mid-load. Every request ends with the right canary or a clean
// JSON error; afterwards every pool drains and the restarted decode worker
// is generating again (seen on its pod metrics). BULKHEAD_LONG=1 runs more
// rounds.
func TestScaleKillAndRestartUnderLoad(t *testing.T) {
	bin := binary(t, "")
	rounds := 4
	if os.Getenv("BULKHEAD_LONG") == "1" {
		rounds = 40
	}
	pool := []string{"--max-context", "1024", "--kv-tokens", "8192", "--threads", "1", "--log-level", "warn"}
	startPrefill := func(listen string) *proc {
		return start(t, bin, append([]string{"worker", "--role", "prefill", "--listen", listen}, pool...)...)
	}
	startDecode := func(listen, kv, metrics string) *proc {
		return start(t, bin, append([]string{"worker", "--role", "decode", "--listen", listen, "--kv-listen", kv, "--metrics-listen", metrics}, pool...)...)
	}
	pre := []*proc{startPrefill("127.0.0.1:0"), startPrefill("127.0.0.1:0")}
	var dec []*proc
	decMetrics := []string{freeAddr(t), freeAddr(t), freeAddr(t)}
	for i := range 3 {
		dec = append(dec, startDecode("127.0.0.1:0", "127.0.0.1:0", decMetrics[i]))
	}
	keys := []string{"key-a", "key-b", "key-c"}
	args := []string{"gateway", "--listen", "127.0.0.1:0", "--check-interval", "200ms", "--tenants", tenantsFile(t, keys...)}
	for _, p := range pre {
		args = append(args, "--prefill", p.url())
	}
	for _, d := range dec {
		args = append(args, "--decode", d.url())
	}
	gw := start(t, bin, args...)

	words := copymodel.AuditWords()
	type client struct {
		key, prompt, want string
	}
	var clients []client
	for i := range 6 { // two concurrent clients per tenant, each with its own canary
		canary := words.Canary[i*4 : i*4+4]
		prompt, err := copymodel.Prompt(canary, 20, 300, uint64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, client{keys[i%3], prompt, " " + strings.Join(canary, " ")})
	}
	var (
		mu      sync.Mutex
		outcome = map[string]int{}
		done    atomic.Int64
	)
	post := func(c client) (string, error) {
		b, _ := json.Marshal(map[string]any{"model": copymodel.Name, "prompt": c.prompt, "max_tokens": 6})
		req, _ := http.NewRequest("POST", gw.url()+"/v1/completions", bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+c.key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		switch {
		case resp.StatusCode == 200 && strings.Contains(string(body), c.want):
			return "ok", nil
		case resp.StatusCode == 200:
			return "", fmt.Errorf("200 with the wrong text (want %q): %s", c.want, body)
		case strings.Contains(string(body), `"error"`):
			var e struct {
				Error struct{ Type string } `json:"error"`
			}
			json.Unmarshal(body, &e)
			return fmt.Sprintf("%d %s", resp.StatusCode, e.Error.Type), nil
		}
		return "", fmt.Errorf("status %d without a JSON error: %s", resp.StatusCode, body)
	}
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			for range rounds {
				kind, err := post(c)
				if err != nil {
					t.Error(err)
					kind = "unclean"
				}
				mu.Lock()
				outcome[kind]++
				mu.Unlock()
				done.Add(1)
			}
		})
	}
	// Mid-load: once a third of the requests are done, kill one worker of
	// each role and restart it on the same addresses.
	total := int64(len(clients) * rounds)
	waitFor(t, "a third of the load", func() bool { return done.Load() >= total/3 })
	pre[0].kill()
	dec[0].kill()
	killed := time.Now()
	pre[0] = startPrefill(pre[0].addr)
	dec[0] = startDecode(dec[0].addr, dec[0].kv, decMetrics[0])
	wg.Wait()

	// Recovery: the restarted decode worker generates again.
	var recovered time.Duration
	waitFor(t, "the restarted decode worker to generate", func() bool {
		if v := counterValue(t, scrapeFamilies(t, decMetrics[0]), "vllm:generation_tokens_total"); v > 0 {
			recovered = time.Since(killed)
			return true
		}
		if kind, err := post(clients[0]); err != nil || kind != "ok" {
			t.Logf("probe request after restart: %q %v", kind, err)
		}
		return false
	})
	drained(t, append(pre, dec...)...)

	var kinds []string
	for k, n := range outcome {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	t.Logf("%d requests from %d clients of 3 tenants: %s; restarted decode worker generating %.1fs after the kills",
		total, len(clients), strings.Join(kinds, " "), recovered.Seconds())
	if outcome["ok"] == 0 {
		t.Errorf("no request succeeded: %v", outcome)
	}
}
