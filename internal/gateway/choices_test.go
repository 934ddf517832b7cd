package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/api"
	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

// Through the gateway each choice is its own disaggregated request. The
// API submits a prompt's later forks only after the first one's prefill
// returned, so on the prefill worker they find the prompt's full pages in
// its prefix cache; each decode worker still receives the whole prompt's
// KV per fork (pages are not shared across the transfer).
func TestNAndPromptListsWorkThroughTheGateway(t *testing.T) {
	pre, dec := startWorker(t, worker.Prefill, smallPool), startWorker(t, worker.Decode, smallPool)
	g := newGateway(t, []*node{pre}, []*node{dec})
	srv := api.NewServer(api.Config{ModelID: g.Model()}, g, g.Tokenizer(), nil, quiet)
	hs := httptest.NewServer(srv)
	defer hs.Close()

	words := copymodel.AuditWords()
	var prompts, wants []string
	for i := range 2 {
		canary := words.Canary[8*i : 8*i+8]
		text, err := copymodel.Prompt(canary, 5, 80, uint64(40+i))
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, text)
		wants = append(wants, " "+strings.Join(canary, " "))
	}
	post := func(body string) []string {
		t.Helper()
		resp, err := http.Post(hs.URL+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Choices []struct {
				Index int    `json:"index"`
				Text  string `json:"text"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%d %v", resp.StatusCode, err)
		}
		var texts []string
		for i, c := range out.Choices {
			if c.Index != i {
				t.Errorf("choice %d has index %d", i, c.Index)
			}
			texts = append(texts, c.Text)
		}
		return texts
	}
	q, _ := json.Marshal(prompts[0])
	before := pre.eng.Stats().PrefixHitTokens
	got := post(fmt.Sprintf(`{"prompt":%s,"n":3,"max_tokens":8,"temperature":0}`, q))
	if len(got) != 3 {
		t.Fatalf("%d choices, want 3", len(got))
	}
	for i, text := range got {
		if text != wants[0] {
			t.Errorf("choice %d: %q, want the canary %q", i, text, wants[0])
		}
	}
	ps := pre.eng.Pool().PageSize()
	promptLen := len(g.Tokenizer().Encode(prompts[0], true, false))
	if hits, want := pre.eng.Stats().PrefixHitTokens-before, uint64(2*((promptLen-1)/ps)*ps); hits < want {
		t.Errorf("prefill found %d prompt tokens cached, want at least %d (two forks × the full pages)", hits, want)
	}

	ql, _ := json.Marshal(prompts)
	got = post(fmt.Sprintf(`{"prompt":%s,"n":2,"max_tokens":8,"temperature":0}`, ql))
	want := []string{wants[0], wants[0], wants[1], wants[1]}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("prompt list choices %q, want %q", got, want)
	}
	pre.drained(t)
	dec.drained(t)
}
