package api

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/loader"
)

// hermesModelTokenizer is the built-in model's tokenizer with hermesTemplate.
type hermesModelTokenizer struct{ tokenizerAdapter }

func (hermesModelTokenizer) ChatTemplate() string { return hermesTemplate }

// The real engine and sampler on the built-in copy model: under a required
// or named tool_choice, whatever the model's logits favour, the response is
// one call whose arguments validate against the tool's schema.
func TestForcedToolChoiceOnTheCopyModel(t *testing.T) {
	env, _, _ := copyModelEnv(t, func(tok Tokenizer) Tokenizer { return hermesModelTokenizer{tok.(tokenizerAdapter)} })
	tools := `[{"type":"function","function":{"name":"lookup","parameters":{"type":"object","additionalProperties":false,
		"required":["word","count"],"properties":{"word":{"type":"string","minLength":1,"maxLength":8},"count":{"type":"integer"}}}}},
		{"type":"function","function":{"name":"other","parameters":{"type":"object","additionalProperties":false,"properties":{}}}}]`
	for _, choice := range []string{`"required"`, `{"type":"function","function":{"name":"lookup"}}`} {
		for seed := range 4 {
			body := fmt.Sprintf(`{"messages":[{"role":"user","content":"bako tisum bako"}],"max_tokens":200,"seed":%d,"temperature":1,"parallel_tool_calls":false,
				"tools":%s,"tool_choice":%s}`, seed, tools, choice)
			status, _, resp := env.post(t, "/v1/chat/completions", "", body)
			var r struct {
				Choices []struct {
					Message struct {
						ToolCalls []toolCallOut `json:"tool_calls"`
					}
					FinishReason string `json:"finish_reason"`
				}
			}
			if status != 200 || json.Unmarshal([]byte(resp), &r) != nil || len(r.Choices) != 1 {
				t.Fatalf("%s seed %d: %d %s", choice, seed, status, resp)
			}
			ch := r.Choices[0]
			if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 {
				t.Fatalf("%s seed %d: %s", choice, seed, resp)
			}
			t.Logf("%s seed %d: %s(%s)", choice, seed, ch.Message.ToolCalls[0].Function.Name, ch.Message.ToolCalls[0].Function.Arguments)
			for _, tc := range ch.Message.ToolCalls {
				dec := json.NewDecoder(strings.NewReader(tc.Function.Arguments))
				dec.DisallowUnknownFields()
				var a struct {
					Word  *string
					Count *int64
				}
				switch {
				case tc.Function.Name == "other" && choice == `"required"`:
					var o map[string]any
					if json.Unmarshal([]byte(tc.Function.Arguments), &o) != nil {
						t.Fatalf("%s seed %d: arguments %q are not an object", choice, seed, tc.Function.Arguments)
					}
				case tc.Function.Name != "lookup" || dec.Decode(&a) != nil || a.Word == nil || len(*a.Word) == 0 || a.Count == nil:
					t.Fatalf("%s seed %d: call %+v does not validate", choice, seed, tc.Function)
				}
			}
		}
	}
}

// copyModelEnv serves the built-in copy model on the real engine, its
// tokenizer wrapped by wrap (nil: as it is).
func copyModelEnv(t *testing.T, wrap func(Tokenizer) Tokenizer) (*testEnv, *engine.Engine, *loader.Model) {
	t.Helper()
	m, err := loader.Load(loader.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := m.NewEngine(loader.PoolOptions{MaxContext: 1024, KVTokens: 4096}, engine.Config{TokenBudget: 256, MaxRunning: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	var tok Tokenizer = tokenizerAdapter{m.Tok}
	if wrap != nil {
		tok = wrap(tok)
	}
	srv := NewServer(Config{ModelID: testModel, MaxBodyBytes: 1 << 20}, eng, tok, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	env := &testEnv{srv: srv, http: httptest.NewServer(srv)}
	t.Cleanup(env.http.Close)
	return env, eng, m
}
