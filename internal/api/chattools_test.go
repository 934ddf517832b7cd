package api

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
)

// hermesTemplate teaches the Hermes syntax (which is how Detect knows it)
// and lists the tools; the fake engine echoes the prompt, so the last
// message's content, sent as a kwarg-free user turn, is the "model output".
const hermesTemplate = `{%- if tools %}<tools>{% for t in tools %}{{ t.function.name }};{% endfor %}</tools>` +
	`{%- endif %}{{ messages[-1].content }}{# calls: <tool_call>{"name": N, "arguments": A}</tool_call> #}`

func hermesEnv(t *testing.T, eng *apitest.FakeEngine) *testEnv {
	eng.MaxCtx.Store(4096)
	return newTestEnvWith(t, eng, apitest.ByteTokenizer{Template: hermesTemplate}, nil)
}

var weatherTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name: "get_weather",
	Parameters: shared.FunctionParameters{"type": "object", "additionalProperties": false, "required": []string{"city"},
		"properties": map[string]any{"city": map[string]any{"type": "string", "maxLength": 16}}},
})

const callOutput = "Checking.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"

func TestToolCallsThroughOfficialClient(t *testing.T) {
	env := hermesEnv(t, apitest.NewFakeEngine())
	resp, err := env.client("k").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: testModel, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(callOutput)},
		Tools: []openai.ChatCompletionToolUnionParam{weatherTool},
	})
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 {
		t.Fatalf("finish %q, tool_calls %+v; want one call and finish_reason tool_calls", ch.FinishReason, ch.Message.ToolCalls)
	}
	tc := ch.Message.ToolCalls[0]
	if !strings.HasPrefix(tc.ID, "call_") || tc.Type != "function" || tc.Function.Name != "get_weather" || tc.Function.Arguments != `{"city":"Paris"}` {
		t.Fatalf("tool call %+v", tc)
	}
	// The prompt (echoed) listed the tool: tools reached the template.
	if want := "<tools>get_weather;</tools>Checking."; ch.Message.Content != want {
		t.Fatalf("content = %q, want %q", ch.Message.Content, want)
	}
}

func TestToolCallsStreamAsOpenAIDoes(t *testing.T) {
	env := hermesEnv(t, apitest.NewFakeEngine())
	stream := env.client("k").Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: testModel, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(callOutput + callOutput)},
		Tools: []openai.ChatCompletionToolUnionParam{weatherTool},
	})
	var acc openai.ChatCompletionAccumulator
	var content strings.Builder
	var firsts, fragments int
	for stream.Next() {
		ch := stream.Current()
		acc.AddChunk(ch)
		if len(ch.Choices) == 0 {
			continue
		}
		d := ch.Choices[0].Delta
		content.WriteString(d.Content)
		for _, tc := range d.ToolCalls {
			switch {
			case tc.ID != "": // a call's first delta: id, type and name, no arguments yet
				if tc.Type != "function" || tc.Function.Name != "get_weather" || tc.Function.Arguments != "" || int(tc.Index) != firsts {
					t.Fatalf("first delta of a call: %+v", tc)
				}
				firsts++
			default:
				if tc.Function.Name != "" || tc.Function.Arguments == "" {
					t.Fatalf("argument delta: %+v", tc)
				}
				fragments++
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(content.String(), "tool_call") {
		t.Fatalf("call markup leaked into content deltas: %q", content.String())
	}
	if firsts != 2 || fragments != 2 {
		t.Fatalf("%d first deltas and %d argument deltas, want 2 and 2", firsts, fragments)
	}
	msg := acc.Choices[0].Message
	if acc.Choices[0].FinishReason != "tool_calls" || len(msg.ToolCalls) != 2 || msg.ToolCalls[1].Function.Arguments != `{"city":"Paris"}` ||
		msg.ToolCalls[0].ID == msg.ToolCalls[1].ID {
		t.Fatalf("accumulated: finish %q, calls %+v", acc.Choices[0].FinishReason, msg.ToolCalls)
	}
	if want := "<tools>get_weather;</tools>Checking.Checking."; msg.Content != want {
		t.Fatalf("accumulated content %q, want %q", msg.Content, want)
	}
}

// tool_choice "none": the tools are shown to the template, the output is
// not read for calls.
func TestToolChoiceNoneLeavesOutputAsText(t *testing.T) {
	env := hermesEnv(t, apitest.NewFakeEngine())
	status, _, body := env.post(t, "/v1/chat/completions", "", `{"messages":[{"role":"user","content":`+jsonString(callOutput)+`}],
		"tools":[{"type":"function","function":{"name":"get_weather"}}],"tool_choice":"none"}`)
	var r struct {
		Choices []struct {
			Message      map[string]any `json:"message"`
			FinishReason string         `json:"finish_reason"`
		} `json:"choices"`
	}
	if status != 200 || json.Unmarshal([]byte(body), &r) != nil {
		t.Fatalf("%d %s", status, body)
	}
	if _, has := r.Choices[0].Message["tool_calls"]; has || r.Choices[0].FinishReason != "stop" ||
		r.Choices[0].Message["content"] != "<tools>get_weather;</tools>"+callOutput {
		t.Fatalf("tool_choice none: %s", body)
	}
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestToolRequestsRefusedWithParam(t *testing.T) {
	env := hermesEnv(t, apitest.NewFakeEngine())
	plainEnv := newTestEnv(t, apitest.NewFakeEngine(), nil) // its template shows no call syntax
	fn := func(f string) string { return `[{"type":"function","function":` + f + `}]` }
	for _, c := range []struct {
		env   *testEnv
		extra string
		param string
		// grammar: refused in building the forcing grammar, which
		// /apply-template, rendering only, does not do.
		grammar bool
	}{
		{env, `"tools":` + fn(`{"name":"get weather"}`), "tools[0].function.name", false},
		{env, `"tools":` + fn(`{}`), "tools[0].function.name", false},
		{env, `"tools":` + fn(`{"name":"f","parameters":{"type":"array"}}`), "tools[0].function.parameters", false},
		{env, `"tools":` + fn(`{"name":"f","parametrs":{}}`), "tools[0].function", false},
		{env, `"tools":[{"type":"custom","custom":{"name":"f"}}]`, "tools[0]", false},
		{env, `"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]`, "tools[1].function.name", false},
		{env, `"tools":` + fn(`{"name":"f"}`) + `,"tool_choice":"sometimes"`, "tool_choice", false},
		{env, `"tool_choice":"required"`, "tool_choice", false},
		{env, `"tools":` + fn(`{"name":"f","parameters":{"type":"object","patternProperties":{}}}`) + `,"tool_choice":"required"`, "tools[0].function.parameters", true},
		{env, `"tools":` + fn(`{"name":"f"}`) + `,"tool_choice":"required","response_format":{"type":"json_object"}`, "tool_choice", true},
		{plainEnv, `"tools":` + fn(`{"name":"f"}`), "tools", false},
	} {
		body := `{"messages":[{"role":"user","content":"hi"}],` + c.extra + `}`
		for _, path := range []string{"/v1/chat/completions", "/apply-template"} {
			if path == "/apply-template" && c.grammar {
				continue
			}
			status, _, resp := c.env.post(t, path, "", body)
			if status != 400 || !strings.Contains(resp, `"param":"`+c.param+`"`) {
				t.Errorf("%s %s: got %d %s, want 400 with param %q", path, c.extra, status, resp, c.param)
			}
		}
	}
}

func TestUnknownNamedToolChoiceThroughOfficialClient(t *testing.T) {
	env := hermesEnv(t, apitest.NewFakeEngine())
	_, err := env.client("k").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: testModel, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		Tools: []openai.ChatCompletionToolUnionParam{weatherTool},
		ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{
			Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_time"}}},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "tool_choice" {
		t.Fatalf("err = %v, want 400 with param tool_choice", err)
	}
}

func TestApplyTemplateShowsTools(t *testing.T) {
	env := hermesEnv(t, apitest.NewFakeEngine())
	got := applyTemplate(t, env, "/apply-template", `{"messages":[{"role":"user","content":"hi"}],
		"tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b"}}]}`)
	if got != "<tools>a;b;</tools>hi" {
		t.Fatalf("rendered %q", got)
	}
}

// samplingEngine stands in for a model that follows the request's
// grammar: random logits over ByteTokenizer's vocabulary, masked by the
// constraint, the best token taken, until the mask allows end of text.
type samplingEngine struct {
	*apitest.FakeEngine
	seed uint64
}

func (e *samplingEngine) Submit(ctx context.Context, req engine.Request) (<-chan engine.Event, error) {
	if req.Sampling.Constraint == nil {
		return nil, errors.New("samplingEngine: the request carries no grammar")
	}
	ch := make(chan engine.Event, 4096)
	rng := rand.New(rand.NewPCG(e.seed, 7))
	go func() {
		defer close(ch)
		c := req.Sampling.Constraint
		logits := make([]float32, 259)
		n := 0
		for n < req.MaxTokens && n < 4000 {
			for i := range logits {
				logits[i] = float32(rng.NormFloat64())
			}
			logits[apitest.EOS] += 2 // end once the grammar allows, keeping outputs short
			c.Mask(logits)
			best := 0
			for i := range logits {
				if logits[i] > logits[best] {
					best = i
				}
			}
			if math.IsInf(float64(logits[best]), -1) {
				break
			}
			ch <- engine.Event{Token: int32(best)}
			n++
			if best == apitest.EOS {
				break
			}
			c.Accept(int32(best))
		}
		ch <- engine.Event{Finish: &engine.Finish{Reason: engine.FinishStop, Usage: engine.Usage{PromptTokens: len(req.Prompt), CompletionTokens: n}}}
	}()
	return ch, nil
}

// tool_choice "required" and a named function: whatever the "model" samples
// under the request's grammar, the response is a call to an allowed tool
// whose arguments validate against its schema.
func TestForcedToolChoiceOutputIsAValidCall(t *testing.T) {
	tools := `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","additionalProperties":false,"required":["city"],
		"properties":{"city":{"type":"string","minLength":1,"maxLength":10}}}}},
		{"type":"function","function":{"name":"add","parameters":{"type":"object","additionalProperties":false,"required":["a","b"],
		"properties":{"a":{"type":"integer"},"b":{"type":"integer"}}}}}]`
	for _, c := range []struct{ choice, only string }{
		{`"required"`, ""},
		{`{"type":"function","function":{"name":"add"}}`, "add"},
	} {
		seen := map[string]bool{}
		for seed := range uint64(12) {
			eng := &samplingEngine{FakeEngine: apitest.NewFakeEngine(), seed: seed}
			eng.MaxCtx.Store(8192)
			env := newTestEnvWith(t, eng.FakeEngine, apitest.ByteTokenizer{Template: hermesTemplate}, nil)
			env.srv.eng = eng
			status, _, body := env.post(t, "/v1/chat/completions", "", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2000,
				"parallel_tool_calls":false,"tools":`+tools+`,"tool_choice":`+c.choice+`}`)
			var r struct {
				Choices []struct {
					Message struct {
						Content   *string
						ToolCalls []toolCallOut `json:"tool_calls"`
					}
					FinishReason string `json:"finish_reason"`
				}
			}
			if status != 200 || json.Unmarshal([]byte(body), &r) != nil {
				t.Fatalf("%s seed %d: %d %s", c.choice, seed, status, body)
			}
			ch := r.Choices[0]
			if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 || ch.Message.Content != nil {
				t.Fatalf("%s seed %d: %s", c.choice, seed, body)
			}
			fn := ch.Message.ToolCalls[0].Function
			dec := json.NewDecoder(strings.NewReader(fn.Arguments))
			dec.DisallowUnknownFields()
			var ok bool
			switch fn.Name {
			case "get_weather":
				var a struct{ City *string }
				ok = dec.Decode(&a) == nil && a.City != nil && len(*a.City) >= 1
			case "add":
				var a struct{ A, B *int64 }
				ok = dec.Decode(&a) == nil && a.A != nil && a.B != nil
			}
			if !ok || (c.only != "" && fn.Name != c.only) {
				t.Fatalf("%s seed %d: call %+v does not validate", c.choice, seed, fn)
			}
			seen[fn.Name] = true
		}
		if c.only == "" && len(seen) < 2 {
			t.Errorf(`"required": only %v were called in 12 samples`, seen)
		}
	}
}

// controlTokenizer is ByteTokenizer with one control token, 259, spelled
// [TOOL_CALLS], which plain decoding hides as real tokenizers do.
type controlTokenizer struct{ apitest.ByteTokenizer }

func (controlTokenizer) IsControl(id int32) bool {
	return id == 259 || id == apitest.BOS || id == apitest.EOS
}
func (t controlTokenizer) TokenText(id int32) string {
	if id == 259 {
		return "[TOOL_CALLS]"
	}
	return t.ByteTokenizer.TokenText(id)
}

// With a tool-call reader on, control tokens are decoded as their text so
// the reader sees a marker such as [TOOL_CALLS]; end-of-generation tokens
// stay hidden; without the reader, decoding is unchanged.
func TestToolReaderSeesControlTokens(t *testing.T) {
	s := NewServer(Config{ModelID: testModel}, apitest.NewFakeEngine(), controlTokenizer{}, nil, nil)
	ids := []int32{'h' + 3, 'i' + 3, 259, '[' + 3, ']' + 3, apitest.EOS}
	for _, c := range []struct {
		controlText bool
		want        string
	}{{true, "hi[TOOL_CALLS][]"}, {false, "hi[]"}} {
		dec := s.decoderFor(genParams{controlText: c.controlText})
		var b strings.Builder
		for _, id := range ids {
			b.WriteString(dec.Add(id))
		}
		b.WriteString(dec.Flush())
		if b.String() != c.want {
			t.Errorf("controlText %v: decoded %q, want %q", c.controlText, b.String(), c.want)
		}
	}
}
