package toolcall

import (
	"reflect"
	"testing"
)

const weather = `{"city":"Paris","unit":"celsius"}`

func TestParseFamilies(t *testing.T) {
	for _, c := range []struct {
		name    string
		f       Family
		out     string
		content string
		calls   []Call
	}{
		{"hermes one call", Hermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>",
			"", []Call{{"get_weather", weather}}},
		{"hermes text around two calls", Hermes, "Let me check.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>{\"name\": \"b\", \"arguments\": \"{\\\"x\\\": 1}\"}</tool_call>",
			"Let me check.\n\n", []Call{{"a", "{}"}, {"b", `{"x":1}`}}},
		{"hermes unterminated at EOS", Hermes, "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"k\": [1, 2]}}\n",
			"", []Call{{"a", `{"k":[1,2]}`}}},
		{"hermes broken JSON stays text", Hermes, "<tool_call>{\"name\": oops}</tool_call>",
			"<tool_call>{\"name\": oops}</tool_call>", nil},
		{"hermes no call", Hermes, "The weather is <b>fine</b> < tool", "The weather is <b>fine</b> < tool", nil},
		{"qwen3-coder xml", Hermes, "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
			"", []Call{{"get_weather", `{"city":"Paris","days":3}`}}},
		{"llama3 bare json", Llama3, `{"name": "get_weather", "parameters": {"city": "Paris", "unit": "celsius"}}`,
			"", []Call{{"get_weather", weather}}},
		{"llama3 string parameters", Llama3, `{"name": "get_weather", "parameters": "{\"city\": \"Paris\", \"unit\": \"celsius\"}"}`,
			"", []Call{{"get_weather", weather}}},
		{"llama3 python tag, two calls", Llama3, `<|python_tag|>{"name": "a", "parameters": {}}; {"name": "b", "parameters": {"q": "x"}}`,
			"", []Call{{"a", "{}"}, {"b", `{"q":"x"}`}}},
		{"llama3 prose with braces is text", Llama3, `Sure: {"name": "x"} is a JSON object`, `Sure: {"name": "x"} is a JSON object`, nil},
		{"llama3 json that is not a call", Llama3, `{"answer": 42}`, `{"answer": 42}`, nil},
		{"mistral array", Mistral, `[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}, "id": "abc123def"}]`,
			"", []Call{{"get_weather", weather}}},
		{"mistral text then array of two", Mistral, `Checking.[TOOL_CALLS][{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"n": 1}}]`,
			"Checking.", []Call{{"a", "{}"}, {"b", `{"n":1}`}}},
		{"mistral broken stays text", Mistral, `[TOOL_CALLS][{"name": }]`, `[TOOL_CALLS][{"name": }]`, nil},
		{"mistral args form", MistralArgs, `[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "unit": "celsius"}`,
			"", []Call{{"get_weather", weather}}},
		{"mistral args form with call id, two calls", MistralArgs, `[TOOL_CALLS]a[CALL_ID]call00001[ARGS]{}[TOOL_CALLS]b[ARGS]{"n": 2}`,
			"", []Call{{"a", "{}"}, {"b", `{"n":2}`}}},
		{"harmony call", Harmony, `<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris", "unit": "celsius"}<|call|>`,
			"", []Call{{"get_weather", weather}}},
		{"harmony reasoning, then a call in the template's order", Harmony,
			`<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris", "unit": "celsius"}`,
			"", []Call{{"get_weather", weather}}},
		{"harmony final answer", Harmony, `<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>It is sunny.`,
			"It is sunny.", nil},
		{"harmony plain text", Harmony, "Hello there", "Hello there", nil},
		{"none family parses nothing", None, "<tool_call>{\"name\": \"a\"}</tool_call>", "<tool_call>{\"name\": \"a\"}</tool_call>", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Parse(c.f, c.out)
			if r.Content != c.content || !reflect.DeepEqual(r.Calls, c.calls) {
				t.Fatalf("Parse = %q %+v, want %q %+v", r.Content, r.Calls, c.content, c.calls)
			}
			// Fed one byte at a time, the stream finds the same.
			s := NewStream(c.f)
			var evs []Event
			for i := range len(c.out) {
				evs = append(evs, s.Feed(c.out[i:i+1])...)
			}
			if got := collect(append(evs, s.Close()...)); !reflect.DeepEqual(got, r) {
				t.Fatalf("byte-wise stream = %+v, want %+v", got, r)
			}
		})
	}
}

// No markup reaches content before the stream knows it is not a call.
func TestStreamHoldsBackMarkerPrefixes(t *testing.T) {
	s := NewStream(Hermes)
	if evs := s.Feed("Hi <tool_"); len(evs) != 1 || evs[0].Content != "Hi " {
		t.Fatalf("Feed = %+v, want only %q", evs, "Hi ")
	}
	if evs := s.Feed(`call>{"name": "f", "arguments": {}`); len(evs) != 0 {
		t.Fatalf("inside a call Feed = %+v, want nothing yet", evs)
	}
	evs := s.Feed("}</tool_call>")
	if len(evs) != 1 || evs[0].Call == nil || evs[0].Call.Name != "f" {
		t.Fatalf("Feed at the call's end = %+v, want the call", evs)
	}
	s = NewStream(Harmony)
	if evs := s.Feed("<|channel|>final<|message|>Sun<|e"); len(evs) != 1 || evs[0].Content != "Sun" {
		t.Fatalf("harmony Feed = %+v, want only %q", evs, "Sun")
	}
}
