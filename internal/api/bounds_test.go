package api

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
	"github.com/bulkhead-llm/bulkhead/internal/tenant"
)

func TestDeclaredBodyOverTheLimitIs413AtOnce(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	c, err := net.Dial("tcp", strings.TrimPrefix(env.http.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n{")
	c.SetReadDeadline(time.Now().Add(20 * time.Second)) // a guard against hanging, not a timing assertion
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer before the body arrived: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "request_too_large") {
		t.Fatalf("declared 1 GB body: %d %s", resp.StatusCode, b)
	}
}

// peakHeap samples the heap in use while f runs and returns the growth
// over the level before it.
func peakHeap(f func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	<-done
	if p := peak.Load(); p > base {
		return p - base
	}
	return 0
}

func TestSevenMegabytePromptsStayWithinMemoryBounds(t *testing.T) {
	tok := realTokenizer(t)
	const limit = 64 << 20
	// The bodies are generated as they are sent, so the test's own data
	// does not inflate the heap it measures.
	const sentence = "hello world, the quick brown fox jumps over 12345 lazy dogs. "
	bodies := map[string]func() (io.Reader, int64){}
	for path, head := range map[string]string{
		"/v1/completions": `{"model":"` + testModel + `","max_tokens":1,"prompt":"`,
		"/tokenize":       `{"prompt":"`,
	} {
		bodies[path] = func() (io.Reader, int64) {
			r := io.MultiReader(strings.NewReader(head), &repeatReader{s: sentence, n: 7 << 20 / len(sentence)}, strings.NewReader(`"}`))
			return r, int64(len(head) + len(sentence)*(7<<20/len(sentence)) + 2)
		}
	}
	for _, maxCtx := range []int64{4096, 1 << 19} { // refused by the byte bound; by counting
		if maxCtx > 4096 && testing.Short() {
			t.Log("the counting path tokenizes megabytes; skipped with -short")
			continue
		}
		eng := apitest.NewFakeEngine()
		eng.MaxCtx.Store(maxCtx)
		srv := NewServer(Config{ModelID: testModel}, eng, tok, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
		hs := httptest.NewServer(srv)
		for path, body := range bodies {
			post := func() (int, string) {
				r, n := body()
				req, _ := http.NewRequest(http.MethodPost, hs.URL+path, r)
				req.ContentLength = n
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return 0, err.Error()
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			for _, n := range []int{1, 8} {
				var wg sync.WaitGroup
				var bad atomic.Value
				grew := peakHeap(func() {
					for range n {
						wg.Go(func() {
							if code, b := post(); code != 400 || !strings.Contains(b, "at least") || !strings.Contains(b, fmt.Sprint(maxCtx)) || !strings.Contains(b, "context_length_exceeded") {
								bad.Store(fmt.Sprintf("%d %.300s", code, b))
							}
						})
					}
					wg.Wait()
				})
				if v := bad.Load(); v != nil {
					t.Errorf("max context %d, %s ×%d: want 400 \"at least N tokens\" naming the limit, got %s", maxCtx, path, n, v)
				}
				t.Logf("max context %d, %s, %d × 7 MB at once: heap grew %.1f MiB", maxCtx, path, n, float64(grew)/(1<<20))
				if grew > limit {
					t.Errorf("max context %d, %s, %d × 7 MB at once: heap grew %d MiB, want ≤ 64 MiB", maxCtx, path, n, grew>>20)
				}
			}
		}
		hs.Close()
	}
}

// repeatReader yields s n times without holding the result.
type repeatReader struct {
	s   string
	n   int
	off int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	w := 0
	for w < len(p) && r.n > 0 {
		c := copy(p[w:], r.s[r.off:])
		w += c
		r.off += c
		if r.off == len(r.s) {
			r.off = 0
			r.n--
		}
	}
	if w == 0 && r.n == 0 {
		return 0, io.EOF
	}
	return w, nil
}

// countingTokenizer records how many bytes it was asked to tokenize.
type countingTokenizer struct {
	apitest.ByteTokenizer
	bytes *atomic.Int64
}

func (c countingTokenizer) Encode(text string, addSpecial, parseSpecial bool) []int32 {
	c.bytes.Add(int64(len(text)))
	return c.ByteTokenizer.Encode(text, addSpecial, parseSpecial)
}

func TestTenantLimitsComeBeforeTokenizing(t *testing.T) {
	reg, err := tenant.Parse([]byte(`
[[tenant]]
id = "one-at-a-time"
api_key_sha256 = ["` + tenant.HashKey("sk-1") + `"]
max_concurrent = 1
`))
	if err != nil {
		t.Fatal(err)
	}
	eng := apitest.NewFakeEngine()
	eng.Block.Store(true)
	var tokenized atomic.Int64
	env := newTestEnvWith(t, eng, countingTokenizer{apitest.ByteTokenizer{Template: testTemplate}, &tokenized}, reg)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // runs before the server's Close
	hold, _ := http.NewRequestWithContext(ctx, http.MethodPost, env.http.URL+"/v1/completions",
		strings.NewReader(`{"model":"`+testModel+`","prompt":"hold","max_tokens":50,"stream":true}`))
	hold.Header.Set("Authorization", "Bearer sk-1")
	go func() {
		if resp, err := http.DefaultClient.Do(hold); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-eng.Started
	before := tokenized.Load()
	long := strings.Repeat("x", 200) // short enough that only tokenizing could refuse it
	code, _, body := env.post(t, "/v1/completions", "sk-1", `{"model":"`+testModel+`","prompt":"`+long+`","max_tokens":1}`)
	if code != http.StatusTooManyRequests {
		t.Fatalf("second concurrent request: %d %.200s, want 429", code, body)
	}
	if got := tokenized.Load() - before; got != 0 {
		t.Errorf("a request refused by the concurrency limit was tokenized first (%d bytes)", got)
	}
}
