package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

// Strictness: a 200 must mean the server did what the request asked. Every
// top-level field of a request body is looked up in its endpoint's table:
// a field the server honours passes; a field it supports only at its
// neutral value (n = 1, echo = false, tools = []) passes at that value and
// is otherwise refused with a 400 naming the field; a field not in the
// table at all is refused as unknown — or, with Config.Lenient, logged and
// reported in the X-Bulkhead-Ignored-Fields response header.

// fieldRule says what the server does with one request field.
type fieldRule struct {
	// neutral reports whether a value is one the server honours; nil
	// means every (well-typed) value is honoured.
	neutral func(raw json.RawMessage) bool
	// why explains the refusal of a non-neutral value.
	why string
}

// ignoredFieldsHeader lists the unknown fields a lenient server let through.
const ignoredFieldsHeader = "X-Bulkhead-Ignored-Fields"

var honoured = fieldRule{}

// only accepts exactly the given JSON values (compared after compacting).
func only(why string, values ...string) fieldRule {
	return fieldRule{why: why, neutral: func(raw json.RawMessage) bool {
		var b bytes.Buffer
		if json.Compact(&b, raw) != nil {
			return false
		}
		return slices.Contains(values, b.String())
	}}
}

// never refuses every value (other than null, which means absent).
func never(why string) fieldRule {
	return fieldRule{why: why, neutral: func(json.RawMessage) bool { return false }}
}

// commonFields are the fields completions and chat share.
var commonFields = map[string]fieldRule{
	"model": honoured, "max_tokens": honoured, "max_completion_tokens": honoured,
	"temperature": honoured, "top_p": honoured, "top_k": honoured, "min_p": honoured,
	"seed": honoured, "stop": honoured, "stream": honoured, "stream_options": streamOptionsRule,
	"ignore_eos": honoured, "min_tokens": honoured, "stop_token_ids": honoured,
	"logit_bias": honoured, "presence_penalty": honoured, "frequency_penalty": honoured,
	"repetition_penalty": honoured,
	// structured output (structured.go), on both endpoints
	"response_format": honoured, "grammar": honoured, "regex": honoured,
	// user and safety_identifier are identifiers for abuse tracing; the
	// server honours them by writing them to the request's log line.
	"user": honoured, "safety_identifier": honoured,
	// llm-d's prefill/decode field: admitted only by Config.KVTransfer
	// (kvtransfer.go), refused otherwise.
	"kv_transfer_params": honoured,
	"n":                  honoured, // choices.go
}

var completionFields = merge(commonFields, map[string]fieldRule{
	"prompt": honoured, "logprobs": honoured,
	"echo":    honoured, // with logprobs the prompt is scored (engine PromptLogprobs)
	"suffix":  only("suffix is not supported", `""`),
	"best_of": honoured, // choices.go
})

var chatFields = merge(commonFields, map[string]fieldRule{
	"messages": honoured, "logprobs": honoured, "top_logprobs": honoured,
	"add_generation_prompt": honoured, "chat_template_kwargs": honoured,
	"documents":              honoured,
	"continue_final_message": only("continue_final_message = true is not supported", "false"),
	"tools":                  honoured, // chattools.go
	"tool_choice":            honoured,
	"parallel_tool_calls":    honoured, // false: a forced choice's grammar admits one call
	"functions":              never("functions (deprecated) is not supported"),
	"function_call":          never("function_call (deprecated) is not supported"),
	"store":                  only("store = true is not supported: this server stores no completions", "false"),
	"metadata":               honoured, // only used with store, which is refused
	"modalities":             only(`only the "text" modality is supported`, `["text"]`),
	"audio":                  never("audio output is not supported"),
	"prediction":             never("predicted outputs are not supported"),
	"reasoning_effort":       never("reasoning_effort is not supported by this server"),
	"verbosity":              never("verbosity is not supported by this server"),
	"web_search_options":     never("web search is not supported"),
	"service_tier":           only(`only service_tier "auto" or "default" is supported`, `"auto"`, `"default"`),
	"prompt_cache_key":       never("prompt_cache_key is not supported: prefix caching is automatic and per tenant"),
	"prompt_cache_retention": never("prompt_cache_retention is not supported"),
	"prompt_cache_options":   never("prompt_cache_options is not supported"),
	"moderation":             never("moderation is not supported"),
})

// streamOptionsRule refuses unknown keys inside stream_options too, and
// include_obfuscation = true (this server pads no chunks).
var streamOptionsRule = fieldRule{why: `stream_options accepts only "include_usage" (and "include_obfuscation": false)`,
	neutral: func(raw json.RawMessage) bool {
		var o map[string]json.RawMessage
		if json.Unmarshal(raw, &o) != nil {
			return false
		}
		for k, v := range o {
			switch {
			case k == "include_usage":
			case k == "include_obfuscation" && (string(v) == "false" || string(v) == "null"):
			default:
				return false
			}
		}
		return true
	}}

func merge(a, b map[string]fieldRule) map[string]fieldRule {
	out := make(map[string]fieldRule, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// checkFields applies table to the body's top-level fields. It returns the
// unknown fields let through (lenient only), or the refusal of the first
// offending field in name order, so the answer is deterministic.
func checkFields(body []byte, table map[string]fieldRule, lenient bool) ([]string, *apiError) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, nil // the typed decode reports malformed bodies
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	slices.Sort(names)
	var ignored []string
	for _, k := range names {
		raw := fields[k]
		rule, ok := table[k]
		switch {
		case !ok && lenient:
			ignored = append(ignored, k)
		case !ok:
			return nil, invalid(k, "unknown_field", "unknown field %q: this server does not implement it, and refuses rather than ignore it", k)
		case rule.neutral == nil || string(bytes.TrimSpace(raw)) == "null":
		case !rule.neutral(raw):
			return nil, invalid(k, "unsupported_value", "%s", rule.why)
		}
	}
	return ignored, nil
}

// readRequest reads a body, decodes it into v and applies table.
func (s *Server) readRequest(w http.ResponseWriter, r *http.Request, table map[string]fieldRule, v any) *apiError {
	data, e := s.readBodyData(w, r)
	if e != nil {
		return e
	}
	if e := decodeJSON(data, v); e != nil {
		return e
	}
	ignored, e := checkFields(data, table, s.cfg.Lenient)
	if e != nil {
		return e
	}
	if len(ignored) > 0 {
		infoFrom(r.Context()).log.Warn("lenient: ignoring unknown request fields", "fields", ignored)
		w.Header().Set(ignoredFieldsHeader, strings.Join(ignored, ","))
	}
	return nil
}
