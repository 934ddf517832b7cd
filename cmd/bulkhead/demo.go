package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
	"github.com/bulkhead-llm/bulkhead/internal/gateway"
	"github.com/bulkhead-llm/bulkhead/internal/loader"
	"github.com/bulkhead-llm/bulkhead/internal/tenant"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

// runDemo starts a disaggregated deployment in this process — a prefill
// worker, a decode worker and a gateway, joined by real loopback TCP — on
// the built-in copy model, sends traffic from two tenants, and prints what
// happened. It exits 0 when every check held.
func runDemo(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", "[flags]", stderr)
	rounds := fs.Int("rounds", 4, "concurrent request pairs (one per tenant) in the isolation round, 1 to 5")
	verbose := fs.Bool("v", false, "show the servers' logs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rounds < 1 || *rounds > 5 { // 2×5 distinct 8-word canaries from the 80 the isolation round uses
		return &exitCode{2, fmt.Errorf("--rounds %d out of range [1, 5]", *rounds)}
	}
	logs := io.Discard
	if *verbose {
		logs = stderr
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := &demo{out: stdout}

	fmt.Fprintln(stdout, "bulkhead demo: a prefill worker, a decode worker and a gateway on 127.0.0.1, serving the built-in copy model")
	pool := loader.PoolOptions{MaxContext: 1024, KVTokens: 8192}
	o := serveOptions{pool: pool, threads: 1, tokenBudget: 512, maxRunning: 16, drain: 5 * time.Second, logLevel: "warn", listen: "127.0.0.1:0"}
	creds, err := demoCerts()
	if err != nil {
		return err
	}
	d.workerClient = gateway.TLSClient(creds["gateway"])
	o.tls.creds = creds["prefill-0"]
	pre, err := d.startWorker(ctx, o, worker.Prefill, logs)
	if err != nil {
		return err
	}
	o.tls.creds = creds["decode-0"]
	dec, err := d.startWorker(ctx, o, worker.Decode, logs)
	if err != nil {
		return err
	}
	keys := map[string]string{"alice": randomKey("alice"), "bob": randomKey("bob")}
	tf := ""
	for _, name := range []string{"alice", "bob"} {
		tf += fmt.Sprintf("[[tenant]]\nid = %q\napi_key_sha256 = [%q]\n\n", name, tenant.HashKey(keys[name]))
	}
	reg, err := tenant.Parse([]byte(tf))
	if err != nil {
		return err
	}
	gwReady := make(chan string, 1)
	gwDone := make(chan error, 1)
	go func() {
		gwDone <- runGatewayProcessWith(ctx, gatewayOptions{prefill: urlList{pre}, decode: urlList{dec}, listen: "127.0.0.1:0",
			interval: 2 * time.Second, drain: 5 * time.Second, logLevel: "warn", tls: tlsFlags{creds: creds["gateway"]}}, reg, logs, func(a string) { gwReady <- a })
	}()
	var gw string
	select {
	case gw = <-gwReady:
	case err := <-gwDone:
		return fmt.Errorf("gateway: %w", err)
	}
	fmt.Fprintf(stdout, "  prefill worker %s, decode worker %s, gateway http://%s (tenants alice and bob, max context 1024)\n\n", pre, dec, gw)
	base := "http://" + gw
	words := copymodel.AuditWords()

	// 1. Each tenant retrieves its own canary through the disaggregated path.
	fmt.Fprintln(stdout, "1. each tenant asks the copy model to repeat the words after its key")
	canary := map[string][]string{"alice": words.Canary[0:8], "bob": words.Canary[8:16]}
	for i, name := range []string{"alice", "bob"} {
		prompt, err := copymodel.Prompt(canary[name], 20, 600, uint64(i))
		if err != nil {
			return err
		}
		status, text, _ := d.complete(ctx, base, keys[name], prompt, 8)
		d.check(status == 200 && strings.TrimSpace(text) == strings.Join(canary[name], " "),
			"%-5s 600-token prompt, canary %q → %d %q", name, strings.Join(canary[name], " "), status, strings.TrimSpace(text))
	}

	// 2. Concurrent traffic: nobody sees the other's words.
	fmt.Fprintf(stdout, "\n2. %d concurrent requests per tenant, distinct canaries, lengths up to the maximum\n", *rounds)
	var wg sync.WaitGroup
	var mu sync.Mutex
	leaks, wrong := 0, 0
	for r := range *rounds {
		for ti, name := range []string{"alice", "bob"} {
			wg.Go(func() {
				c := words.Canary[16+(2*r+ti)*8 : 16+(2*r+ti)*8+8]
				other := words.Canary[16+(2*r+1-ti)*8 : 16+(2*r+1-ti)*8+8]
				n := 200 + (r*311+ti*97)%800
				prompt, err := copymodel.Prompt(c, 1+(r*53)%(n-40), n, uint64(100+r*2+ti))
				if err != nil {
					return
				}
				status, text, _ := d.complete(ctx, base, keys[name], prompt, 8)
				mu.Lock()
				defer mu.Unlock()
				if status != 200 || strings.TrimSpace(text) != strings.Join(c, " ") {
					wrong++
				}
				if strings.Contains(text, strings.Join(other[:2], " ")) {
					leaks++
				}
			})
		}
	}
	wg.Wait()
	d.check(wrong == 0 && leaks == 0, "%d requests: %d wrong answers, %d answers containing the other tenant's words", 2**rounds, wrong, leaks)

	// 3. Oversized prompts are refused before any page exists.
	fmt.Fprintln(stdout, "\n3. bob sends a prompt longer than the context")
	long, _ := copymodel.Prompt(canary["bob"], 5, 1500, 9)
	status, _, body := d.complete(ctx, base, keys["bob"], long, 8)
	d.check(status == 400 && strings.Contains(body, "context_length_exceeded"), "1500-token prompt → %d %s", status, firstLine(body))

	// 4. Authentication.
	fmt.Fprintln(stdout, "\n4. a request without a valid key")
	status, _, body = d.complete(ctx, base, "sk-wrong", "hello", 4)
	d.check(status == 401, "wrong key → %d %s", status, firstLine(body))

	// 4b. The workers answer only the gateway's certificate.
	status, body = d.noCertDecode(ctx, dec)
	d.check(status == 401, "decode worker called without the gateway's certificate → %d %s", status, firstLine(body))

	// 5. Accounting: every page is free again on both workers.
	fmt.Fprintln(stdout, "\n5. after the traffic, both KV pools are free again")
	for _, w := range []string{pre, dec} {
		in, err := d.info(ctx, w)
		if err != nil {
			return err
		}
		deadline := time.Now().Add(5 * time.Second)
		for in.PagesFree != in.PagesTotal && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			in, _ = d.info(ctx, w)
		}
		d.check(in.PagesFree == in.PagesTotal, "%-7s worker: %d of %d pages free", in.Role, in.PagesFree, in.PagesTotal)
	}
	fmt.Fprintln(stdout)
	if d.failed > 0 {
		return fmt.Errorf("%d of %d checks failed", d.failed, d.checks)
	}
	fmt.Fprintf(stdout, "all %d checks passed\n", d.checks)
	return nil
}

type demo struct {
	out            io.Writer
	workerClient   *http.Client // carries the gateway certificate
	checks, failed int
}

func (d *demo) check(ok bool, format string, args ...any) {
	d.checks++
	mark := "ok  "
	if !ok {
		mark = "FAIL"
		d.failed++
	}
	fmt.Fprintf(d.out, "   %s %s\n", mark, fmt.Sprintf(format, args...))
}

func (d *demo) startWorker(ctx context.Context, o serveOptions, role worker.Role, logs io.Writer) (string, error) {
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runWorkerProcess(ctx, o, role, "127.0.0.1:0", logs, func(addr, _ string) { ready <- "https://" + addr })
	}()
	select {
	case u := <-ready:
		return u, nil
	case err := <-done:
		return "", fmt.Errorf("%s worker: %w", role, err)
	}
}

func (d *demo) complete(ctx context.Context, base, key, prompt string, maxTokens int) (int, string, string) {
	b, _ := json.Marshal(map[string]any{"model": copymodel.Name, "prompt": prompt, "max_tokens": maxTokens, "temperature": 0})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err.Error()
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	if json.Unmarshal(raw, &out) == nil && len(out.Choices) == 1 {
		return resp.StatusCode, out.Choices[0].Text, string(raw)
	}
	return resp.StatusCode, "", string(raw)
}

func (d *demo) info(ctx context.Context, base string) (worker.Info, error) {
	var in worker.Info
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/worker/info", nil)
	resp, err := d.workerClient.Do(req)
	if err != nil {
		return in, err
	}
	defer resp.Body.Close()
	return in, json.NewDecoder(resp.Body).Decode(&in)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
