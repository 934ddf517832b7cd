package api

import (
	"crypto/rand"
	"encoding/hex"
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

// encodeChat renders msgs and tokenizes the result so that only the
// template's text may hold control tokens. It renders once with the real
// contents and once with each content wrapped in unique sentinels, which
// locate the contents in the output; if the template transformed a content
// beyond recognition, the prompt is accepted only when no content holds
// control-token text at all.
func (s *Server) encodeChat(msgs []chat.Message, opts chat.Options, parse bool) ([]int32, *apiError) {
	text, err := s.chatTmpl.Render(msgs, opts)
	if err != nil {
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
	for _, trim := range []bool{false, true} {
		if segs, ok := s.locateContents(msgs, opts, text, trim); ok {
			return s.encodeSegments(segs), nil
		}
	}
	for i, m := range msgs {
		if !slices.Equal(s.tok.Encode(m.Content, false, true), s.tok.Encode(m.Content, false, false)) {
			return nil, invalid("messages", "invalid_value", "messages[%d].content contains control-token text, which this model's chat template does not let the server keep apart from its own markers", i)
		}
	}
	return s.tok.Encode(text, false, true), nil
}

// locateContents renders msgs with sentinel-wrapped contents and splits the
// output into template text and content text; ok only if removing the
// sentinels gives exactly want.
func (s *Server) locateContents(msgs []chat.Message, opts chat.Options, want string, trim bool) ([]tokenizer.Segment, bool) {
	var nb [8]byte
	rand.Read(nb[:])
	tag := "\uE000bulkhead-" + hex.EncodeToString(nb[:])
	open := func(i int) string { return tag + "<" + strconv.Itoa(i) + "\uE001" }
	closer := func(i int) string { return tag + ">" + strconv.Itoa(i) + "\uE001" }
	wrapped := make([]chat.Message, len(msgs))
	for i, m := range msgs {
		c := m.Content
		if trim {
			c = strings.TrimSpace(c)
		}
		wrapped[i] = chat.Message{Role: m.Role, Content: open(i) + c + closer(i)}
	}
	out, err := s.chatTmpl.Render(wrapped, opts)
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
		if err != nil || i < 0 || i >= len(msgs) {
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
