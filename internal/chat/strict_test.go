package chat

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ardanlabs/jinja"
)

// renderStrict renders src through the strict (jinja2-like) template with
// vars given as JSON.
func renderStrict(t *testing.T, src, varsJSON string) (string, error) {
	t.Helper()
	tmpl, err := Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.strict == nil {
		t.Fatalf("no strict template (probe: %v)", probeErr)
	}
	vars := map[string]jinja.Value{}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(varsJSON), &raw); err != nil {
		t.Fatal(err)
	}
	for k, r := range raw {
		v, err := jsonValue(r)
		if err != nil {
			t.Fatal(err)
		}
		vars[k] = v
	}
	for k, f := range strictFilters {
		vars[k] = f
	}
	return tmpl.strict.RenderValues(vars)
}

// TestStrictRenderingFollowsJinja2 checks each rewritten operation against
// what Python's jinja2 3.1 does with the same expression (the expected
// values are jinja2's, written out by hand).
func TestStrictRenderingFollowsJinja2(t *testing.T) {
	vars := `{"s": "ab", "n": null, "l": [1, 2], "d": {"k": 1}, "i": 3}`
	renders := []struct{ src, want string }{
		{`{{ s + "c" }}`, "abc"},
		{`{{ i + 2 }}|{{ i + 0.5 }}|{{ true + 1 }}`, "5|3.5|2"},
		{`{{ (l + [3]) | length }}`, "3"},
		{`{{ "a" in s }}|{{ "z" not in s }}|{{ 2 in l }}|{{ "k" in d }}|{{ "x" in undefined_name }}`, "True|True|True|True|False"},
		{`{% for x in l %}{{ x }}{% endfor %}{% for x in undefined_name %}never{% endfor %}`, "12"},
		{`{{ s | tojson }}`, `"ab"`},
		// Inside a macro and a set block the filters must still resolve.
		{`{% macro m(a) %}{{ a + "!" }}{% endmacro %}{% set b %}{{ m(s) }}{% endset %}{{ b }}`, "ab!"},
		// Printing a list or None is fine in jinja2 too (repr, None is
		// the engine's empty print).
		{`{{ l }}`, "[1, 2]"},
	}
	for _, r := range renders {
		got, err := renderStrict(t, r.src, vars)
		if err != nil || got != r.want {
			t.Errorf("%s: got %q, %v; want %q", r.src, got, err, r.want)
		}
	}
	refusals := []struct{ src, msg string }{
		{`{{ s + n }}`, "TypeError"},
		{`{{ "x" + l }}`, "TypeError"},
		{`{{ "x" + d }}`, "TypeError"},
		{`{{ "x" + undefined_name }}`, "UndefinedError"},
		{`{{ "a" in n }}`, "not iterable"},
		{`{{ "a" not in n }}`, "not iterable"},
		{`{{ 1 in s }}`, "requires string"},
		{`{% for x in n %}{% endfor %}`, "not iterable"},
		{`{{ undefined_name | tojson }}`, "not JSON serializable"},
		{`{{ s | from_json }}`, "from_json"},
	}
	for _, r := range refusals {
		got, err := renderStrict(t, r.src, vars)
		if err == nil || !strings.Contains(err.Error(), r.msg) {
			t.Errorf("%s: got %q, %v; want an error containing %q", r.src, got, err, r.msg)
		}
	}
}

// TestRefusedVerbatimRetriesAsLlamacpp: a template that jinja2 refuses on
// the conversation as sent renders through the llama.cpp-normalised retry,
// with llama.cpp's variables; one that accepts it keeps its own rendering.
func TestRefusedVerbatimRetriesAsLlamacpp(t *testing.T) {
	msgs := []json.RawMessage{json.RawMessage(`{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`)}
	concat, _ := Compile(`{{ "U:" + messages[0].content }}{% if enable_thinking %}<think>{% endif %}`)
	got, err := concat.RenderConversation(Conversation{Messages: msgs})
	if err != nil || got != "U:a\nb<think>" {
		t.Errorf("concatenating template: got %q, %v; want the joined parts and llama.cpp's enable_thinking", got, err)
	}
	printing, _ := Compile(`{{ messages[0].content }}{% if enable_thinking %}<think>{% endif %}`)
	got, err = printing.RenderConversation(Conversation{Messages: msgs})
	if want := "[{'type': 'text', 'text': 'a'}, {'type': 'text', 'text': 'b'}]"; err != nil || got != want {
		t.Errorf("printing template: got %q, %v; want jinja2's %q", got, err, want)
	}
	noThinkTags, _ := Compile(`{{ "U:" + messages[0].content }}{% if enable_thinking %}on{% endif %}`)
	got, _ = noThinkTags.RenderConversation(Conversation{Messages: msgs})
	if got != "U:a\nb" {
		t.Errorf("a template without thinking tags got enable_thinking: %q", got)
	}
	kw := map[string]json.RawMessage{"enable_thinking": json.RawMessage("false")}
	got, _ = concat.RenderConversation(Conversation{Messages: msgs, Kwargs: kw})
	if got != "U:a\nb" {
		t.Errorf("the client's enable_thinking=false was overridden: %q", got)
	}
}
