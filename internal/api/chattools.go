package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"

	"github.com/bulkhead-llm/bulkhead/internal/grammar"
	"github.com/bulkhead-llm/bulkhead/internal/sample"
	"github.com/bulkhead-llm/bulkhead/internal/toolcall"
)

// Tool calling: the request's tools go to the chat template, which teaches
// the model its family's call syntax; the output is parsed in that syntax
// (internal/toolcall, family detected from the template's text) into
// OpenAI's tool_calls. tool_choice "required" or a named function is
// enforced by a grammar that only admits calls (toolcall.Grammar), with
// arguments valid against the tool's parameters schema.

// toolRequest holds the fields; chatRequest embeds it.
type toolRequest struct {
	Tools             json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
}

// toolSpec is a request's validated tools.
type toolSpec struct {
	tools  []toolcall.Tool
	choice toolcall.Choice
	family toolcall.Family
}

// parse reports whether the output is read for calls.
func (t toolSpec) parse() bool { return len(t.tools) > 0 && t.choice.Mode != "none" }

// checkTools validates tools and tool_choice against each other and the
// model's template. It is the check /apply-template shares.
func (s *Server) checkTools(r *toolRequest) (toolSpec, *apiError) {
	var spec toolSpec
	if raw := bytes.TrimSpace(r.Tools); len(raw) > 0 && string(raw) != "null" {
		tools, err := toolcall.ParseTools(raw)
		if err != nil {
			return spec, toolFieldError(err, "tools")
		}
		spec.tools = tools
	}
	choice, err := toolcall.ParseChoice(r.ToolChoice, spec.tools)
	if err != nil {
		return spec, toolFieldError(err, "tool_choice")
	}
	spec.choice = choice
	spec.family = toolcall.Detect(s.tok.ChatTemplate())
	if spec.parse() && spec.family == toolcall.None {
		return spec, invalid("tools", "unsupported_value", "this model's chat template shows no tool-call syntax this server can read "+
			`(Hermes <tool_call>, Llama 3 JSON, Mistral [TOOL_CALLS], Harmony, Functionary, Apriel); send tool_choice "none" or no tools`)
	}
	return spec, nil
}

func toolFieldError(err error, param string) *apiError {
	var fe *toolcall.FieldError
	if errors.As(err, &fe) {
		return invalid(fe.Path, "invalid_value", "%s", err)
	}
	return invalid(param, "invalid_value", "%v", err)
}

// applyTools validates the request's tools, sets up the output parser and,
// for a forced choice, the grammar. It returns nil when the output is not
// read for calls.
func (s *Server) applyTools(r *toolRequest, p *genParams) (*chatTools, *apiError) {
	spec, e := s.checkTools(r)
	if e != nil || !spec.parse() {
		return nil, e
	}
	if spec.choice.Forced() {
		if p.sampling.Constraint != nil {
			return nil, invalid("tool_choice", "invalid_value", "a required or named tool_choice cannot be combined with response_format, grammar or regex: output follows one grammar")
		}
		parallel := r.ParallelToolCalls == nil || *r.ParallelToolCalls
		src, err := toolcall.Grammar(spec.family, spec.tools, spec.choice, parallel)
		if err != nil {
			return nil, toolFieldError(err, "tool_choice")
		}
		// A GBNF Spec like a client's grammar: through a gateway the decode
		// worker compiles the same source (internal/gateway/structured.go).
		g, err := s.grammars.get(grammar.Spec{Kind: grammar.KindGBNF, Source: src})
		if err != nil {
			return nil, invalid("tools", "invalid_value", "the tools' call grammar: %v", err)
		}
		vc, err := s.vocab()
		if err != nil {
			return nil, invalid("tool_choice", "unsupported_value", "%v", err)
		}
		p.newConstraint = func() sample.Constraint { return vc.v.Constraint(g) }
		p.sampling.Constraint = p.newConstraint()
	}
	// Markers such as [TOOL_CALLS] and <|channel|> are control tokens,
	// which plain decoding hides; the parser must see them.
	p.controlText = true
	return &chatTools{family: spec.family, stream: toolcall.NewStream(spec.family)}, nil
}

// decoderFor is the output decoder: the model's, or with control tokens
// written out when a tool-call parser reads the text.
func (s *Server) decoderFor(p genParams) StreamDecoder {
	cc, ok := s.tok.(controlChecker)
	if !p.controlText || !ok {
		return s.newDecoder()
	}
	return newStreamDecoder(func(ids []int32) string {
		var b []byte
		start := 0
		for i, id := range ids {
			if cc.IsControl(id) && !s.tok.IsEOG(id) {
				b = append(b, s.tok.Decode(ids[start:i])...)
				b = append(b, s.tok.TokenText(id)...)
				start = i + 1
			}
		}
		return string(append(b, s.tok.Decode(ids[start:])...))
	})
}

// chatTools is one response's tool-call reader.
type chatTools struct {
	family toolcall.Family
	stream *toolcall.Stream
	calls  int // calls sent so far, the next call's index
}

type toolCallOut struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function toolFunctionJSON `json:"function"`
}

type toolFunctionJSON struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type toolCallDelta struct {
	Index    int              `json:"index"`
	ID       string           `json:"id,omitempty"`
	Type     string           `json:"type,omitempty"`
	Function toolFunctionJSON `json:"function"`
}

func newCallID() string {
	const digits = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := []byte("call_")
	for range 24 {
		b = append(b, digits[rand.IntN(len(digits))])
	}
	return string(b)
}

// message is a whole output as a chat message: content null when the
// output is nothing but calls, as OpenAI sends it.
func (t *chatTools) message(text, finish string) (chatMessageOut, string) {
	r := toolcall.Parse(t.family, text)
	m := chatMessageOut{Role: "assistant", Content: &r.Content}
	for _, c := range r.Calls {
		m.ToolCalls = append(m.ToolCalls, toolCallOut{ID: newCallID(), Type: "function",
			Function: toolFunctionJSON{Name: c.Name, Arguments: c.Arguments}})
	}
	if len(r.Calls) > 0 {
		if isBlank(r.Content) {
			m.Content = nil
		}
		if finish == "stop" {
			finish = "tool_calls"
		}
	}
	return m, finish
}

func isBlank(s string) bool { return len(bytes.TrimSpace([]byte(s))) == 0 }

// deltas turns stream events into chat deltas: content as it comes; a call
// as a delta with its index, id, type and name, then one with its
// arguments.
func (t *chatTools) deltas(evs []toolcall.Event) []*chatDelta {
	var out []*chatDelta
	for _, e := range evs {
		if e.Call == nil {
			text := e.Content
			out = append(out, &chatDelta{Content: &text})
			continue
		}
		i := t.calls
		t.calls++
		out = append(out,
			&chatDelta{ToolCalls: []toolCallDelta{{Index: i, ID: newCallID(), Type: "function", Function: toolFunctionJSON{Name: e.Call.Name}}}},
			&chatDelta{ToolCalls: []toolCallDelta{{Index: i, Function: toolFunctionJSON{Arguments: e.Call.Arguments}}}})
	}
	return out
}

// sseBatch is several stream chunks from one step; nil is none.
type sseBatch []any

// sendAll sends one chunk, a batch of them, or nothing for nil.
func (s *sseWriter) sendAll(v any) error {
	switch v := v.(type) {
	case nil:
		return nil
	case sseBatch:
		for _, x := range v {
			if err := s.send(x); err != nil {
				return err
			}
		}
		return nil
	}
	return s.send(v)
}

// toolDelta is chatShape.delta when a tool-call reader is on: the text
// goes through the reader, and logprobs ride on the first chunk (or on an
// empty delta while the reader holds the text).
func (c *chatShape) toolDelta(ch chunk) any {
	ds := c.tools.deltas(c.tools.stream.Feed(ch.text))
	lps := c.lps(ch.tokens)
	if len(ds) == 0 {
		if lps == nil {
			return nil
		}
		ds = []*chatDelta{{}}
	}
	var b sseBatch
	for i, d := range ds {
		ch := chatChoice{Delta: d}
		if i == 0 {
			ch.Logprobs = lps
		}
		b = append(b, c.chunk([]chatChoice{ch}, nil))
	}
	return b
}

// toolFinal sends what the reader still held, then the finish.
func (c *chatShape) toolFinal(finish string) any {
	var b sseBatch
	for _, d := range c.tools.deltas(c.tools.stream.Close()) {
		b = append(b, c.chunk([]chatChoice{{Delta: d}}, nil))
	}
	if c.tools.calls > 0 && finish == "stop" {
		finish = "tool_calls"
	}
	return append(b, c.chunk([]chatChoice{{Delta: &chatDelta{}, FinishReason: &finish}}, nil))
}
