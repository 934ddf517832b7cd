package api

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bulkhead-llm/bulkhead/internal/chat"
	"github.com/bulkhead-llm/bulkhead/internal/tenant"
	"github.com/bulkhead-llm/bulkhead/internal/tokenizer"
)

// Text a tenant writes is text (DESIGN I9, I10): "</s>" or "<|im_start|>"
// typed into a prompt or a chat message are tokenized as the characters
// they are, so a user cannot end their turn early or forge a system turn.
// Only the chat template's own markers become control tokens. An operator
// can restore llama-server's behaviour server-wide (--parse-special) or
// per tenant (parse_special = true in the tenants file).

// segmentEncoder is implemented by tokenizers that can tokenize text whose
// pieces have different special-token policies.
type segmentEncoder interface {
	EncodeSegments(segs []tokenizer.Segment, addSpecial bool) []int32
}

// controlChecker is implemented by tokenizers that know their control tokens.
type controlChecker interface{ IsControl(id int32) bool }

// parseSpecial reports whether a tenant's text may carry control tokens.
func (s *Server) parseSpecial(t *tenant.Tenant) bool {
	return s.cfg.ParseSpecial || (t != nil && t.ParseSpecial)
}

func (s *Server) encodeSegments(segs []tokenizer.Segment) []int32 {
	if se, ok := s.tok.(segmentEncoder); ok {
		return se.EncodeSegments(segs, false)
	}
	var out []int32
	for _, sg := range segs {
		out = append(out, s.tok.Encode(sg.Text, false, sg.ParseSpecial)...)
	}
	return out
}

// encodeChat renders conv and tokenizes the result so that only the
// template's text may hold control tokens. When no string a tenant wrote
// (message fields, tools, documents, kwargs) holds control-token text, the
// rendered text is tokenized as is. Otherwise each message's string content
// is wrapped in unique sentinels, which locate the contents in the output so
// they are tokenized as plain text; control-token text anywhere else (tool
// arguments, names, content parts), or in a content the template transformed
// beyond recognition, is refused with a 400 naming it.
func (s *Server) encodeChat(conv chat.Conversation, parse bool) ([]int32, *apiError) {
	text, err := s.chatTmpl.RenderConversation(conv)
	switch {
	case errors.Is(err, chat.ErrKwarg):
		return nil, invalid("chat_template_kwargs", "invalid_value", "%v", err)
	case err != nil:
		return nil, invalid("messages", "invalid_value", "%v", err)
	}
	if lp := s.maxPieceBytes(); lp > 0 && s.eng != nil && len(text) > exactBelow {
		if lower, limit := len(text)/lp, s.eng.MaxContext()-1; lower > limit {
			return nil, s.atLeast("messages", lower, limit)
		}
	}
	if parse {
		return s.tok.Encode(text, false, true), nil
	}
	contents := make([]*string, len(conv.Messages)) // string contents, located by sentinels
	forged := ""                                    // the first field holding control text outside a string content
	anyControl := false
	for i, raw := range conv.Messages {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return nil, invalid("messages", "invalid_value", "messages[%d] is not an object", i)
		}
		for k, v := range m {
			var str string
			if k == "content" && json.Unmarshal(v, &str) == nil {
				contents[i] = &str
				if s.hasControlText(str) {
					anyControl = true
				}
				continue
			}
			if path := s.controlTextIn(v, fmt.Sprintf("messages[%d].%s", i, k)); path != "" && forged == "" {
				forged = path
			}
		}
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"tools", conv.Tools}, {"documents", conv.Documents}} {
		if path := s.controlTextIn(f.raw, f.name); path != "" && forged == "" {
			forged = path
		}
	}
	for k, v := range conv.Kwargs {
		if path := s.controlTextIn(v, "chat_template_kwargs."+k); path != "" && forged == "" {
			forged = path
		}
	}
	if forged != "" {
		param, _, _ := strings.Cut(forged, ".")
		param, _, _ = strings.Cut(param, "[")
		return nil, invalid(param, "invalid_value",
			"%s contains control-token text, which is only allowed in a message's string content", forged)
	}
	if !anyControl {
		return s.tok.Encode(text, false, true), nil
	}
	for _, trim := range []bool{false, true} {
		if segs, ok := s.locateContents(conv, contents, text, trim); ok {
			return s.encodeSegments(segs), nil
		}
	}
	for i, c := range contents {
		if c != nil && s.hasControlText(*c) {
			return nil, invalid("messages", "invalid_value", "messages[%d].content contains control-token text, which this model's chat template does not let the server keep apart from its own markers", i)
		}
	}
	return s.tok.Encode(text, false, true), nil
}

// hasControlText reports whether text would yield control tokens if parsed.
func (s *Server) hasControlText(text string) bool {
	return !slices.Equal(s.tok.Encode(text, false, true), s.tok.Encode(text, false, false))
}

// controlTextIn returns the path of the first JSON string inside raw that
// holds control-token text, or "".
func (s *Server) controlTextIn(raw json.RawMessage, path string) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	var walk func(v any, path string) string
	walk = func(v any, path string) string {
		switch x := v.(type) {
		case string:
			if s.hasControlText(x) {
				return path
			}
		case []any:
			for i, e := range x {
				if p := walk(e, fmt.Sprintf("%s[%d]", path, i)); p != "" {
					return p
				}
			}
		case map[string]any:
			for k, e := range x {
				if p := walk(e, path+"."+k); p != "" {
					return p
				}
			}
		}
		return ""
	}
	return walk(v, path)
}

// locateContents renders conv with sentinel-wrapped string contents and
// splits the output into template text and content text; ok only if
// removing the sentinels gives exactly want.
func (s *Server) locateContents(conv chat.Conversation, contents []*string, want string, trim bool) ([]tokenizer.Segment, bool) {
	var nb [8]byte
	rand.Read(nb[:])
	tag := "\uE000bulkhead-" + hex.EncodeToString(nb[:])
	open := func(i int) string { return tag + "<" + strconv.Itoa(i) + "\uE001" }
	closer := func(i int) string { return tag + ">" + strconv.Itoa(i) + "\uE001" }
	wrapped := conv
	wrapped.Messages = make([]json.RawMessage, len(conv.Messages))
	for i, raw := range conv.Messages {
		wrapped.Messages[i] = raw
		if contents[i] == nil {
			continue
		}
		c := *contents[i]
		if trim {
			c = strings.TrimSpace(c)
		}
		w, ok := replaceContent(raw, open(i)+c+closer(i))
		if !ok {
			return nil, false
		}
		wrapped.Messages[i] = w
	}
	out, err := s.chatTmpl.RenderConversation(wrapped)
	if err != nil {
		return nil, false
	}
	var segs []tokenizer.Segment
	var plain strings.Builder
	for out != "" {
		j := strings.Index(out, tag+"<")
		if j < 0 {
			segs = append(segs, tokenizer.Segment{Text: out, ParseSpecial: true})
			plain.WriteString(out)
			break
		}
		segs = append(segs, tokenizer.Segment{Text: out[:j], ParseSpecial: true})
		plain.WriteString(out[:j])
		out = out[j+len(tag)+1:]
		end := strings.Index(out, "\uE001")
		if end < 0 {
			return nil, false
		}
		i, err := strconv.Atoi(out[:end])
		if err != nil || i < 0 || i >= len(conv.Messages) {
			return nil, false
		}
		out = out[end+len("\uE001"):]
		c := strings.Index(out, closer(i))
		if c < 0 {
			return nil, false
		}
		content := out[:c]
		if strings.Contains(content, tag) {
			return nil, false
		}
		segs = append(segs, tokenizer.Segment{Text: content, ParseSpecial: false})
		plain.WriteString(content)
		out = out[c+len(closer(i)):]
	}
	return segs, plain.String() == want
}

// replaceContent returns raw with its top-level "content" string replaced
// by content, every other byte (and so the key order) unchanged.
func replaceContent(raw json.RawMessage, content string) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, false
		}
		start := dec.InputOffset()
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		if k == "content" {
			end := dec.InputOffset()
			enc, _ := json.Marshal(content)
			// start is just after the key; skip the colon and blanks to the value.
			vs := start + int64(bytes.Index(raw[start:end], v))
			out := append(append(append([]byte{}, raw[:vs]...), enc...), raw[vs+int64(len(v)):]...)
			return out, true
		}
	}
	return nil, false
}
