package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
	"github.com/bulkhead-llm/bulkhead/internal/model"
)

// pageWatcher wraps the model: before every forward pass it counts the
// pool's referenced pages and checks that no page appears in two
// sequences' tables unless it is a shared read-only prefix page.
type pageWatcher struct {
	m    *model.Model
	pool *kvcache.Pool

	mu       sync.Mutex
	maxInUse int
	// maxSharers is the most sequences of one pass whose tables held the
	// same shared prefix page.
	maxSharers int
	problems   []string
	infos      []kvcache.PageInfo
}

func (w *pageWatcher) Forward(kv model.KVStore, seqs []model.Seq) ([][]float32, error) {
	w.mu.Lock()
	w.infos = w.pool.PageInfos(w.infos[:0])
	inUse := 0
	for _, in := range w.infos[1:] {
		if in.Refs > 0 {
			inUse++
		}
	}
	w.maxInUse = max(w.maxInUse, inUse)
	seen := map[int32]int{}
	sharers := map[int32]int{}
	for i, s := range seqs {
		for _, pg := range s.Pages {
			if j, ok := seen[pg]; ok && j != i && w.infos[pg].State != kvcache.PageShared {
				w.problems = append(w.problems, fmt.Sprintf("page %d (%v) is in sequences %d and %d", pg, w.infos[pg].State, j, i))
			}
			seen[pg] = i
			if w.infos[pg].State == kvcache.PageShared {
				sharers[pg]++
				w.maxSharers = max(w.maxSharers, sharers[pg])
			}
		}
	}
	w.mu.Unlock()
	return w.m.Forward(kv, seqs)
}

func tinyEngine(t *testing.T, pageSize, poolTokens int) (*engine.Engine, *pageWatcher) {
	t.Helper()
	sh := model.Shapes["tiny"]
	sh.Vocab, sh.WeightStd = 256, 0.3
	m, err := model.LoadRandom(sh, gguf.F32, 7, model.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := kvcache.New(kvcache.Config{PageSize: pageSize, DType: gguf.F16, Layers: m.Config.Layers,
		KVDim: m.Config.KVDim(), Tokens: poolTokens, PoisonFreed: true})
	if err != nil {
		t.Fatal(err)
	}
	pw := &pageWatcher{m: m, pool: pool}
	eng, err := engine.New(engine.Config{MaxContext: 64, VocabSize: 256}, pw, pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		eng.Close()
		if err := pool.CheckDrained(); err != nil {
			t.Errorf("after close: %v", err)
		}
	})
	return eng, pw
}

// TestNForksShareThePromptsFullPagesOnce runs n = 4 on the real engine and
// pool: the prompt's two full pages are computed once and then referenced
// by the three later forks (three prefix hits of 8 tokens each), each fork
// writing only the partial page's tokens and its output into pages of its
// own, which no sibling's table ever names.
func TestNForksShareThePromptsFullPagesOnce(t *testing.T) {
	const pageSize, promptLen, maxTokens, n = 4, 10, 4, 4
	eng, pw := tinyEngine(t, pageSize, 256)
	srv := NewServer(Config{ModelID: testModel, MaxBodyBytes: 64 << 10}, eng, apitest.ByteTokenizer{}, nil, discardLogger())
	hs := httptest.NewServer(srv)
	defer hs.Close()

	ids := make([]string, promptLen)
	for i := range ids {
		ids[i] = fmt.Sprint(10 + i)
	}
	before := eng.Stats()
	body := fmt.Sprintf(`{"prompt":[%s],"n":%d,"max_tokens":%d,"ignore_eos":true,"temperature":1,"seed":3}`, strings.Join(ids, ","), n, maxTokens)
	resp, err := http.Post(hs.URL+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Choices []struct {
			Index        int    `json:"index"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	if len(out.Choices) != n || out.Usage.PromptTokens != promptLen || out.Usage.CompletionTokens != n*maxTokens {
		t.Fatalf("response %+v", out)
	}
	after := eng.Stats()

	full := promptLen / pageSize                            // 2 shared pages
	own := (promptLen+maxTokens+pageSize-1)/pageSize - full // 2 per fork: the partial page and the output's
	if hits := after.PrefixHitTokens - before.PrefixHitTokens; hits != uint64((n-1)*full*pageSize) {
		t.Errorf("prefix hit tokens %d, want %d (3 forks × %d full pages)", hits, (n-1)*full*pageSize, full)
	}
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if limit := full + n*own; pw.maxInUse > limit {
		t.Errorf("%d pages in use at the peak, want ≤ %d (the prompt's %d full pages once + %d × %d)", pw.maxInUse, limit, full, n, own)
	}
	// Forks ran together on the shared pages, or the bound above would hold
	// without any sharing. (How many overlap depends on when each fork's
	// submission lands between steps; two always do.)
	t.Logf("peak %d pages in use (bound %d); at most %d forks read one shared page in a pass", pw.maxInUse, full+n*own, pw.maxSharers)
	if pw.maxSharers < 2 {
		t.Errorf("no forward pass had two forks reading the same shared page (at most %d): sharing was not exercised", pw.maxSharers)
	}
	for _, p := range pw.problems {
		t.Error(p)
	}
	if after.OwnershipFailures != 0 {
		t.Errorf("%d ownership failures", after.OwnershipFailures)
	}
}
