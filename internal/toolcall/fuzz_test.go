package toolcall

import (
	"encoding/json"
	"reflect"
	"testing"
)

var fuzzFamilies = []Family{None, Hermes, Llama3, Mistral, MistralArgs, Harmony, Functionary, Apriel}

// FuzzParseStream: for any output, in any family, fed in two pieces split
// anywhere, the stream finds what Parse finds; every call's arguments are a
// JSON object; and an output with no call comes back as content byte for
// byte (except Harmony's, whose headers and reasoning are not content).
func FuzzParseStream(f *testing.F) {
	for _, s := range []string{
		"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>",
		" {\"name\": \"f\", \"parameters\": {}}; {\"name\": \"g\", \"parameters\": \"{}\"}",
		"x[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}]",
		"[TOOL_CALLS]f[CALL_ID]1[ARGS]{\"a\": [1]}[TOOL_CALLS]g[ARGS]\"{}\"",
		"<|channel|>analysis<|message|>t<|end|><|start|>assistant to=functions.f<|channel|>commentary json<|message|>{}<|call|>",
		"<function=f>{\"a\":1}</function>", "<tool_calls>[{\"name\": \"f\", \"arguments\": {}}]</tool_calls>",
		"<tool_call><function=f><parameter=a>1</parameter></function></tool_call>",
		"<tool_call>f<arg_key>a</arg_key><arg_value>b</arg_value></tool_call>",
	} {
		for i := range fuzzFamilies {
			f.Add(uint8(i), s, uint16(len(s)/2))
		}
	}
	f.Fuzz(func(t *testing.T, fam uint8, text string, cut uint16) {
		fm := fuzzFamilies[int(fam)%len(fuzzFamilies)]
		whole := Parse(fm, text)
		k := int(cut) % (len(text) + 1)
		s := NewStream(fm)
		evs := append(s.Feed(text[:k]), s.Feed(text[k:])...)
		if got := collect(append(evs, s.Close()...)); !reflect.DeepEqual(got, whole) {
			t.Fatalf("split at %d: %+v, whole: %+v", k, got, whole)
		}
		for _, c := range whole.Calls {
			var o map[string]any
			if c.Name == "" || json.Unmarshal([]byte(c.Arguments), &o) != nil {
				t.Fatalf("call %+v: empty name or arguments not a JSON object", c)
			}
		}
		if fm != Harmony && len(whole.Calls) == 0 && whole.Content != text {
			t.Fatalf("no call, but content %q differs from the output %q", whole.Content, text)
		}
	})
}
