package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
)

// toolTemplate prints what a template can see of each message.
const toolTemplate = `{{ bos_token }}{% for m in messages %}[{{ m.role }}{% if m.name %} name={{ m.name }}{% endif %}]` +
	`{% if m.content is string %}{{ m.content }}{% elif m.content %}{% for p in m.content %}<{{ p.text }}>{% endfor %}{% endif %}` +
	`{% if m.tool_calls %}{% for c in m.tool_calls %}call {{ c.id }} {{ c.function.name }} {{ c.function.arguments }}{% endfor %}{% endif %}` +
	`{% if m.tool_call_id %} for {{ m.tool_call_id }}{% endif %}{% endfor %}` +
	`{% if documents %}docs={{ documents | length }}{% endif %}{% if enable_thinking %}<think>{% endif %}` +
	`{% if add_generation_prompt %}[assistant]{% endif %}`

func renderEnv(t *testing.T) *testEnv {
	return newTestEnvWith(t, apitest.NewFakeEngine(), apitest.ByteTokenizer{Template: toolTemplate}, nil)
}

func applyTemplate(t *testing.T, env *testEnv, path, body string) string {
	t.Helper()
	status, _, resp := env.post(t, path, "", body)
	if status != 200 {
		t.Fatalf("%s: %d %s", path, status, resp)
	}
	var out struct {
		Prompt *string `json:"prompt"`
	}
	if err := json.Unmarshal([]byte(resp), &out); err != nil || out.Prompt == nil {
		t.Fatalf("%s: %s", path, resp)
	}
	return *out.Prompt
}

func TestChatMessagesReachTheTemplateUnchanged(t *testing.T) {
	env := renderEnv(t)
	body := `{"messages":[
		{"role":"user","name":"ann","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"42"}],
		"documents":[{"title":"t","text":"d"}],"chat_template_kwargs":{"enable_thinking":true},"add_generation_prompt":false}`
	got := applyTemplate(t, env, "/apply-template", body)
	want := `<s>[user name=ann]<a><b>[assistant]call c1 f {"x":1}[tool]42 for c1docs=1<think>`
	if got != want {
		t.Fatalf("rendered\n%q\nwant\n%q", got, want)
	}
	if again := applyTemplate(t, env, "/v1/chat/render", body); again != got {
		t.Fatalf("/v1/chat/render differs: %q", again)
	}
}

func TestApplyTemplateShowsExactlyWhatChatCompletionsRuns(t *testing.T) {
	env := renderEnv(t)
	body := `{"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}],"max_tokens":1}`
	text := applyTemplate(t, env, "/apply-template", body)
	if !strings.HasSuffix(text, "[assistant]") {
		t.Fatalf("add_generation_prompt must default to true: %q", text)
	}
	if s, _, b := env.post(t, "/v1/chat/completions", "", body); s != 200 {
		t.Fatalf("%d %s", s, b)
	}
	sent := env.eng.Requests()[0].Prompt
	want := apitest.ByteTokenizer{}.Encode(text, false, true)
	if len(sent) != len(want) {
		t.Fatalf("engine prompt %v, apply-template %v", sent, want)
	}
	for i := range sent {
		if sent[i] != want[i] {
			t.Fatalf("engine prompt %v, apply-template %v", sent, want)
		}
	}
}

func TestTemplateInputsAreValidated(t *testing.T) {
	env := renderEnv(t)
	for _, c := range []struct{ body, param string }{
		{`{"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"messages":[]}}`, "chat_template_kwargs"},
		{`{"messages":[{"role":"user","content":"x"}],"continue_final_message":true}`, "continue_final_message"},
		{`{"messages":[{"role":"user","content":"x"}],"add_generation_prompt":"yes"}`, "add_generation_prompt"},
	} {
		if s, _, b := env.post(t, "/apply-template", "", c.body); s != 400 || !strings.Contains(b, `"param":"`+c.param+`"`) {
			t.Errorf("%s: %d %s", c.body, s, b)
		}
	}
}
