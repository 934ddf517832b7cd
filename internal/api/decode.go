package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// decodeJSON decodes a request body into v; a field of the wrong type, bad
// JSON or invalid UTF-8 is a 400 naming the problem.
func decodeJSON(data []byte, v any) *apiError {
	if len(bytes.TrimSpace(data)) == 0 {
		return invalid("", "invalid_json", "request body is empty; expected a JSON object")
	}
	if !utf8.Valid(data) {
		return invalid("", "invalid_encoding", "request body is not valid UTF-8")
	}
	err := json.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var fe *fieldError
	switch {
	case errors.As(err, &se):
		return invalid("", "invalid_json", "request body is not valid JSON (at byte %d): %v", se.Offset, se)
	case errors.As(err, &te):
		if te.Field == "" {
			return invalid("", "invalid_json", "request body must be a JSON object, got %s", te.Value)
		}
		field := strings.TrimPrefix(te.Field, "commonRequest.") // the embedded struct is not part of the API
		return invalid(field, "invalid_type", "field %q must be %s, got %s", field, jsonKind(te.Type.String()), te.Value)
	case errors.As(err, &fe):
		return invalid(fe.field, "invalid_type", "%s", fe.msg)
	default:
		return invalid("", "invalid_json", "request body is not valid JSON: %v", err)
	}
}

// jsonKind names a Go type the way a JSON client thinks of it.
func jsonKind(goType string) string {
	t := strings.TrimLeft(goType, "*")
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "string":
		return "a string"
	case t == "bool":
		return "a boolean"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	default:
		return "an object"
	}
}

// fieldError reports a union-typed field (stop, prompt, content) holding
// none of its allowed shapes.
type fieldError struct{ field, msg string }

func (e *fieldError) Error() string { return e.msg }

// stringList is OpenAI's "string or array of strings" (stop).
type stringList []string

func (s *stringList) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = nil
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = stringList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return &fieldError{"stop", `field "stop" must be a string or an array of strings`}
	}
	*s = many
	return nil
}

// promptField is the completions prompt: a string, an array of strings,
// an array of token ids, or an array of arrays of token ids. text/tokens
// hold the first prompt; texts/lists hold all of them (choices.go serves
// more than one).
type promptField struct {
	text   string
	tokens []int32
	isIDs  bool
	set    bool
	texts  []string
	lists  [][]int32
}

// count is how many prompts the field holds.
func (p *promptField) count() int {
	if p.isIDs {
		return max(1, len(p.lists))
	}
	return max(1, len(p.texts))
}

func (p *promptField) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	p.set = true
	var s string
	if json.Unmarshal(b, &s) == nil {
		p.text = s
		return nil
	}
	none := &fieldError{"prompt", `field "prompt" is an empty array; send at least one prompt`}
	var ss []string
	if json.Unmarshal(b, &ss) == nil {
		if len(ss) == 0 {
			return none
		}
		p.text, p.texts = ss[0], ss
		return nil
	}
	var ids []int32
	if json.Unmarshal(b, &ids) == nil {
		p.tokens, p.isIDs = ids, true
		return nil
	}
	var idss [][]int32
	if json.Unmarshal(b, &idss) == nil {
		if len(idss) == 0 {
			return none
		}
		p.tokens, p.isIDs, p.lists = idss[0], true, idss
		return nil
	}
	return &fieldError{"prompt", `field "prompt" must be a string, an array of strings, an array of token ids, or an array of arrays of token ids`}
}

// messageContent is a chat message's content: a string, null, or an array
// of {"type":"text","text":...} parts.
type messageContent string

func (c *messageContent) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*c = ""
		return nil
	}
	var s string
	if json.Unmarshal(b, &s) == nil {
		*c = messageContent(s)
		return nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(b, &parts); err != nil {
		return &fieldError{"messages", `message "content" must be a string or an array of content parts`}
	}
	var sb strings.Builder
	for _, p := range parts {
		if p.Type != "text" || p.Text == nil {
			return &fieldError{"messages", fmt.Sprintf(`content part of type %q is not supported; only "text" parts with a "text" string are`, p.Type)}
		}
		sb.WriteString(*p.Text)
	}
	*c = messageContent(sb.String())
	return nil
}
