package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
	"github.com/bulkhead-llm/bulkhead/internal/tenant"
)

func twoTenants(t *testing.T) *tenant.Registry {
	t.Helper()
	r, err := tenant.Parse([]byte(fmt.Sprintf(`
[[tenant]]
id = "acme"
api_key_sha256 = [%q]
max_concurrent = 1

[[tenant]]
id = "globex"
api_key_sha256 = [%q]
max_concurrent = 4
`, tenant.HashKey("acme-key"), tenant.HashKey("globex-key"))))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestMissingOrWrongKeyIs401(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), twoTenants(t))
	for _, key := range []string{"", "nope", tenant.HashKey("acme-key")} {
		status, _, body := env.post(t, "/v1/completions", key, `{"prompt":"x"}`)
		if status != http.StatusUnauthorized || !strings.Contains(body, `"type":"authentication_error"`) {
			t.Errorf("key %q: %d %s", key, status, body)
		}
	}
	if len(env.eng.Requests()) != 0 {
		t.Errorf("unauthenticated requests reached the engine")
	}
}

func TestTwoTenantsGetSeparateOutputsUsageAndSalts(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), twoTenants(t))
	var wg sync.WaitGroup
	results := map[string]*openai.Completion{}
	var mu sync.Mutex
	for key, prompt := range map[string]string{"acme-key": "acme private canary 1234", "globex-key": "globex"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := env.client(key).Completions.New(context.Background(), openai.CompletionNewParams{
				Model: testModel, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)}, MaxTokens: openai.Int(30)})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			results[key] = resp
			mu.Unlock()
		}()
	}
	wg.Wait()
	if a, g := results["acme-key"], results["globex-key"]; a == nil || g == nil ||
		a.Choices[0].Text != "acme private canary 1234" || g.Choices[0].Text != "globex" ||
		a.Usage.PromptTokens != 25 || g.Usage.PromptTokens != 7 {
		t.Fatalf("results mixed up: %+v / %+v", results["acme-key"], results["globex-key"])
	}
	salts := map[string]string{}
	for _, r := range env.eng.Requests() {
		salts[r.Tenant] = string(r.CacheSalt)
	}
	if len(salts) != 2 || salts["acme"] == salts["globex"] || salts["acme"] == "" {
		t.Errorf("engine requests must carry distinct tenant salts: %q", salts)
	}
	_, metrics := env.adminMetrics(t)
	if !strings.Contains(metrics, `bulkhead:prompt_tokens_total{tenant="acme"} 25`) ||
		!strings.Contains(metrics, `bulkhead:prompt_tokens_total{tenant="globex"} 7`) {
		t.Errorf("per-tenant prompt token counters wrong:\n%s", metrics)
	}
}

func TestConcurrencyLimitIsPerTenant(t *testing.T) {
	eng := apitest.NewFakeEngine()
	eng.Block.Store(true) // every stream holds after its first token until cancelled
	env := newTestEnv(t, eng, twoTenants(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := env.client("acme-key").Completions.NewStreaming(ctx, openai.CompletionNewParams{
		Model: testModel, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("hold")}})
	if !first.Next() {
		t.Fatalf("first stream: %v", first.Err())
	}
	status, h, body := env.post(t, "/v1/completions", "acme-key", `{"prompt":"second"}`)
	if status != http.StatusTooManyRequests || h.Get("Retry-After") == "" || !strings.Contains(body, "concurrency_limit") {
		t.Fatalf("acme's second request: %d Retry-After=%q %s", status, h.Get("Retry-After"), body)
	}
	status, _, body = env.post(t, "/v1/completions", "globex-key", `{"prompt":"fine","max_tokens":1}`)
	if status != http.StatusOK {
		t.Fatalf("globex was limited by acme's load: %d %s", status, body)
	}
	cancel()
	first.Close()
	<-eng.Done
	<-eng.Done
	// With the slot freed acme is admitted again.
	eng.Block.Store(false)
	// The handler releases the slot as it returns, just after the engine's
	// stream ends, so allow it a moment (bounded) to do so.
	deadline := time.Now().Add(5 * time.Second)
	for {
		status, _, body := env.post(t, "/v1/completions", "acme-key", `{"prompt":"again","max_tokens":1}`)
		if status == 200 {
			break
		}
		if status != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("acme after release: %d %s", status, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestTokenRateLimitAnswers429WithRetryAfter(t *testing.T) {
	r, err := tenant.Parse([]byte(fmt.Sprintf("[[tenant]]\nid=\"small\"\napi_key_sha256=[%q]\ntokens_per_minute=10\n", tenant.HashKey("k"))))
	if err != nil {
		t.Fatal(err)
	}
	env := newTestEnv(t, apitest.NewFakeEngine(), r)
	if status, _, body := env.post(t, "/v1/completions", "k", `{"prompt":"twelve bytes","max_tokens":2}`); status != 200 {
		t.Fatalf("first request: %d %s", status, body)
	}
	status, h, body := env.post(t, "/v1/completions", "k", `{"prompt":"x","max_tokens":1}`)
	if status != http.StatusTooManyRequests || h.Get("Retry-After") == "" || !strings.Contains(body, "tokens_per_minute") {
		t.Fatalf("second request: %d Retry-After=%q %s", status, h.Get("Retry-After"), body)
	}
}
