package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// peakRSS reads a process's high-water resident set (VmHWM) in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc status for the gateway (%v): the memory bound is measured only on Linux", err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// sevenMegabytes streams a 7 MB completion body without holding it.
type sevenMegabytes struct{ sent, n int }

func (r *sevenMegabytes) Read(p []byte) (int, error) {
	const sentence = "hello world, the quick brown fox jumps over 12345 lazy dogs. "
	if r.sent >= r.n {
		return 0, io.EOF
	}
	k := 0
	for k < len(p) && r.sent < r.n {
		p[k] = sentence[r.sent%len(sentence)]
		k++
		r.sent++
	}
	return k, nil
}

// The gateway bounds what a prompt costs before admission (I11) as serve
// does: eight concurrent 7 MB prompts are refused with the 400 naming the
// limit, and its peak resident memory grows by at most 64 MiB.
func TestGatewayPeakMemoryStaysBoundedForSevenMegabytePrompts(t *testing.T) {
	bin := binary(t, "")
	pool := []string{"--max-context", "1024", "--kv-tokens", "4096", "--threads", "1", "--log-level", "warn"}
	pre := start(t, bin, append([]string{"worker", "--role", "prefill", "--listen", "127.0.0.1:0"}, pool...)...)
	dec := start(t, bin, append([]string{"worker", "--role", "decode", "--listen", "127.0.0.1:0", "--kv-listen", "127.0.0.1:0"}, pool...)...)
	gw := start(t, bin, "gateway", "--prefill", pre.url(), "--decode", dec.url(), "--listen", "127.0.0.1:0", "--log-level", "warn")
	before := peakRSS(t, gw.cmd.Process.Pid)
	const head = `{"model":"bulkhead-copy","max_tokens":1,"prompt":"`
	const body = 7 << 20
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Go(func() {
			r := io.MultiReader(strings.NewReader(head), &sevenMegabytes{n: body}, strings.NewReader(`"}`))
			req, _ := http.NewRequest(http.MethodPost, gw.url()+"/v1/completions", r)
			req.ContentLength = int64(len(head) + body + 2)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 400 || !strings.Contains(string(b), "at least") || !strings.Contains(string(b), "context_length_exceeded") {
				errs <- fmt.Sprintf("%d %.300s", resp.StatusCode, b)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("want 400 context_length_exceeded \"at least N tokens\", got %s", e)
	}
	grew := peakRSS(t, gw.cmd.Process.Pid) - before
	t.Logf("gateway peak RSS grew %.1f MiB for 8 concurrent 7 MB prompts", float64(grew)/(1<<20))
	if grew > 64<<20 {
		t.Errorf("gateway peak RSS grew %d MiB, want ≤ 64 MiB", grew>>20)
	}
}
