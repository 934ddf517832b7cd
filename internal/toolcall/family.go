// Package toolcall reads tool calls out of a model's output and builds the
// grammars that force them. A model family writes its calls in its own
// syntax, which its chat template teaches it; the family is recognised from
// the template's text (Detect), so one server serves whatever model it
// loaded:
//
//	Hermes / Qwen   <tool_call>{"name": N, "arguments": {...}}</tool_call>
//	                (Qwen3-Coder: <tool_call><function=N><parameter=K>V</parameter>...;
//	                GLM: <tool_call>N<arg_key>K</arg_key><arg_value>V</arg_value>...)
//	Llama 3         {"name": N, "parameters": {...}}, maybe after <|python_tag|>
//	Functionary 3.1 <function=N>{...}</function>
//	Apriel          <tool_calls>[{"name": N, "arguments": {...}}, ...]</tool_calls>
//	Mistral         [TOOL_CALLS][{"name": N, "arguments": {...}}, ...]
//	Mistral v11+    [TOOL_CALLS]N[ARGS]{...}
//	Harmony         <|channel|>commentary to=functions.N <|constrain|>json<|message|>{...}<|call|>
//
// Parsing is incremental (Stream) so that a server can stream calls as
// OpenAI does and never show call markup as content; Parse is the same
// machine fed the whole text at once.
package toolcall

import "strings"

// Family is a tool-call syntax.
type Family string

const (
	None        Family = "" // the template shows no syntax this package knows
	Hermes      Family = "hermes"
	Llama3      Family = "llama3"
	Mistral     Family = "mistral"      // a JSON array after [TOOL_CALLS]
	MistralArgs Family = "mistral-args" // NAME[ARGS]{...} after [TOOL_CALLS]
	Harmony     Family = "harmony"
	Functionary Family = "functionary"
	Apriel      Family = "apriel"
)

// Detect names the family whose syntax a chat template teaches. The order
// matters: Harmony and Mistral templates can mention JSON objects too, so
// the most specific markers are looked for first.
func Detect(template string) Family {
	has := func(s string) bool { return strings.Contains(template, s) }
	switch {
	case has("<|channel|>") && (has("to=functions.") || has("assistant to=")):
		return Harmony
	case has("[TOOL_CALLS]") && has("[ARGS]"):
		return MistralArgs
	case has("[TOOL_CALLS]"):
		return Mistral
	case has("<invoke"): // MiniMax's XML calls: not parsed, so not claimed
		return None
	case has("<tool_calls>"):
		return Apriel
	case has("<tool_call>"):
		return Hermes
	case has("<function=") && has("<|start_header_id|>"):
		return Functionary
	case has("<|python_tag|>"), has("<|start_header_id|>") && has(`"parameters"`):
		return Llama3
	}
	return None
}

// Call is one parsed tool call.
type Call struct {
	Name string
	// Arguments is JSON text, as OpenAI's function.arguments carries it.
	Arguments string
}

// Event is what the stream found: text outside any call, or a whole call.
type Event struct {
	Content string
	Call    *Call
}

// Result is a whole output, parsed.
type Result struct {
	Content string // the text outside calls, joined
	Calls   []Call
}

// Parse reads every call in text.
func Parse(f Family, text string) Result {
	s := NewStream(f)
	return collect(append(s.Feed(text), s.Close()...))
}

func collect(evs []Event) Result {
	var r Result
	var b strings.Builder
	for _, e := range evs {
		if e.Call != nil {
			r.Calls = append(r.Calls, *e.Call)
		} else {
			b.WriteString(e.Content)
		}
	}
	r.Content = b.String()
	return r
}
