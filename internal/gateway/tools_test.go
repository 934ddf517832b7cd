package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/api"
	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
	"github.com/bulkhead-llm/bulkhead/internal/tokenizer"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

// hermesTokenizer is the copy model's tokenizer with a chat template that
// teaches the Hermes call syntax and passes the last message through, so
// the API reads the output for tool calls.
type hermesTokenizer struct{ *tokenizer.Tokenizer }

func (hermesTokenizer) ChatTemplate() string {
	return `{{ bos_token }}{{ messages[-1].content }}{# <tool_call>{"name": N, "arguments": A}</tool_call> #}`
}
func (t hermesTokenizer) NewStreamDecoder() api.StreamDecoder { return t.NewDecoder() }

// Tool calls are read from the output by the API in front of the gateway,
// so tools with tool_choice "auto" work through it unchanged; a required
// choice's call grammar travels to the decode worker as a GBNF Spec, like a
// client's grammar, and forces a call there.
func TestToolsThroughTheGateway(t *testing.T) {
	pre, dec := startWorker(t, worker.Prefill, smallPool), startWorker(t, worker.Decode, smallPool)
	g := newGateway(t, []*node{pre}, []*node{dec})
	words := copymodel.AuditWords()
	text, err := copymodel.Prompt(words.Canary[:8], 30, 200, 1)
	if err != nil {
		t.Fatal(err)
	}
	srv := api.NewServer(api.Config{ModelID: "copy", MaxBodyBytes: 1 << 20}, g, hermesTokenizer{g.Tokenizer()}, nil,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	post := func(extra string) (int, string) {
		body := `{"messages":[{"role":"user","content":"` + strings.TrimSpace(text) + `"}],` +
			`"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{},"additionalProperties":false}}}]` + extra + `}`
		resp, err := http.Post(hs.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := post(`,"max_tokens":8,"tool_choice":"auto"`)
	if want := strings.Join(words.Canary[:8], " "); status != 200 || !strings.Contains(body, `"content":" `+want+`"`) {
		t.Fatalf("auto through the gateway: %d %s, want the canary %q as content", status, body, want)
	}
	status, body = post(`,"max_tokens":64,"parallel_tool_calls":false,"tool_choice":"required"`)
	if status != 200 || !strings.Contains(body, `"finish_reason":"tool_calls"`) || !strings.Contains(body, `"name":"f"`) {
		t.Fatalf("required through the gateway: %d %s, want a call of f", status, body)
	}
	if n := dec.hits.Load(); n != 2 {
		t.Fatalf("decode worker heard %d requests, want both", n)
	}
}
