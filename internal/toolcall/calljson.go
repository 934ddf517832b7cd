package toolcall

import (
	"bytes"
	"encoding/json"
	"strings"
)

// callObject reads {"name": N, "arguments" | "parameters": A}. A may be an
// object or, as templates render OpenAI's wire format back, a string
// holding JSON; either way the call's Arguments is JSON text.
func callObject(raw []byte) (Call, bool) {
	var o struct {
		Name       *string         `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if json.Unmarshal(raw, &o) != nil || o.Name == nil || *o.Name == "" {
		return Call{}, false
	}
	args := o.Arguments
	if args == nil {
		args = o.Parameters
	}
	a, ok := argumentsText(args)
	if !ok {
		return Call{}, false
	}
	return Call{Name: *o.Name, Arguments: a}, true
}

// argumentsText is a call's arguments as compact JSON text: an object as
// given, a string's JSON content, and {} when absent.
func argumentsText(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "{}", true
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil || !json.Valid([]byte(s)) {
			return "", false
		}
		raw = []byte(s)
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil || b.Len() == 0 || b.Bytes()[0] != '{' {
		return "", false
	}
	return b.String(), true
}

// firstJSON reads one JSON object or array at the start of s (after white
// space) and returns it with what follows.
func firstJSON(s string) (json.RawMessage, string, bool) {
	t := strings.TrimLeft(s, " \t\r\n")
	if t == "" || (t[0] != '{' && t[0] != '[') {
		return nil, s, false
	}
	dec := json.NewDecoder(strings.NewReader(t))
	var v json.RawMessage
	if dec.Decode(&v) != nil {
		return nil, s, false
	}
	return v, t[dec.InputOffset():], true
}

// jsonValues reads consecutive JSON values from s, separated by white
// space or sep, and returns them with what follows the last one.
func jsonValues(s string, sep byte) ([]json.RawMessage, string) {
	var out []json.RawMessage
	for {
		t := s
		if len(out) > 0 && sep != 0 {
			if u := strings.TrimLeft(s, " \t\r\n"); strings.HasPrefix(u, string(sep)) {
				t = u[1:]
			}
		}
		v, rest, ok := firstJSON(t)
		if !ok {
			return out, s
		}
		out, s = append(out, v), rest
	}
}

// callsJSON reads the calls of a JSON-object syntax: objects, or arrays
// of objects, in sequence. ok is false if any value is not a call.
func callsJSON(s string, sep byte) ([]Call, string, bool) {
	vals, rest := jsonValues(s, sep)
	var calls []Call
	for _, v := range vals {
		items := []json.RawMessage{v}
		if v[0] == '[' {
			if json.Unmarshal(v, &items) != nil {
				return nil, s, false
			}
		}
		for _, it := range items {
			c, ok := callObject(it)
			if !ok {
				return nil, s, false
			}
			calls = append(calls, c)
		}
	}
	return calls, rest, len(calls) > 0
}

// hermesInner reads what is between <tool_call> and </tool_call>: a JSON
// call, or Qwen3-Coder's <function=N><parameter=K>V</parameter></function>.
func hermesInner(inner string) ([]Call, bool) {
	if calls, rest, ok := callsJSON(inner, 0); ok && strings.TrimSpace(rest) == "" {
		return calls, true
	}
	if calls, ok := xmlFunction(inner); ok {
		return calls, true
	}
	return argKeys(inner)
}

// argKeys reads GLM's call form: N, then <arg_key>K</arg_key>
// <arg_value>V</arg_value> pairs.
func argKeys(s string) ([]Call, bool) {
	s = strings.TrimSpace(s)
	name, rest, _ := strings.Cut(s, "<arg_key>")
	name = strings.TrimSpace(name)
	if name == "" || strings.ContainsAny(name, "<>{}\n\"") {
		return nil, false
	}
	var kv [][2]string
	for rest != "" {
		key, r, ok := strings.Cut(rest, "</arg_key>")
		if !ok {
			return nil, false
		}
		r = strings.TrimLeft(r, " \t\r\n")
		r, ok = strings.CutPrefix(r, "<arg_value>")
		if !ok {
			return nil, false
		}
		val, r, ok := strings.Cut(r, "</arg_value>")
		if !ok {
			return nil, false
		}
		kv = append(kv, [2]string{strings.TrimSpace(key), val})
		r = strings.TrimLeft(r, " \t\r\n")
		if r == "" {
			break
		}
		if rest, ok = strings.CutPrefix(r, "<arg_key>"); !ok {
			return nil, false
		}
	}
	return []Call{{Name: name, Arguments: objectText(kv)}}, true
}

// objectText writes pairs as a JSON object in their order; a value is JSON
// when it parses as JSON, else the text itself, as these templates render
// strings bare.
func objectText(kv [][2]string) string {
	var b bytes.Buffer
	b.WriteByte('{')
	seen := map[string]bool{}
	for _, p := range kv {
		if seen[p[0]] {
			continue
		}
		seen[p[0]] = true
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(p[0])
		b.Write(kb)
		b.WriteByte(':')
		if json.Valid([]byte(p[1])) {
			_ = json.Compact(&b, []byte(p[1]))
		} else {
			vb, _ := json.Marshal(p[1])
			b.Write(vb)
		}
	}
	b.WriteByte('}')
	return b.String()
}

// xmlFunction reads Qwen3-Coder's call form.
func xmlFunction(s string) ([]Call, bool) {
	s = strings.TrimSpace(s)
	rest, ok := strings.CutPrefix(s, "<function=")
	if !ok {
		return nil, false
	}
	name, rest, ok := strings.Cut(rest, ">")
	if !ok || name == "" || strings.ContainsAny(name, "<\n") {
		return nil, false
	}
	var kv [][2]string
	for {
		rest = strings.TrimLeft(rest, " \t\r\n")
		if r, ok := strings.CutPrefix(rest, "</function>"); ok {
			if strings.TrimSpace(r) != "" {
				return nil, false
			}
			break
		}
		r, ok := strings.CutPrefix(rest, "<parameter=")
		if !ok {
			return nil, false
		}
		key, r, ok := strings.Cut(r, ">")
		if !ok || key == "" {
			return nil, false
		}
		val, r, ok := strings.Cut(r, "</parameter>")
		if !ok {
			return nil, false
		}
		kv = append(kv, [2]string{key, strings.TrimPrefix(strings.TrimSuffix(val, "\n"), "\n")})
		rest = r
	}
	return []Call{{Name: name, Arguments: objectText(kv)}}, true
}

// mistralArgs reads N[ARGS]{...} (optionally N[CALL_ID]id[ARGS]{...}),
// repeated with [TOOL_CALLS] between calls.
func mistralArgs(s string) ([]Call, string, bool) {
	var calls []Call
	for {
		head, rest, ok := strings.Cut(s, "[ARGS]")
		if !ok {
			break
		}
		name, _, _ := strings.Cut(head, "[CALL_ID]")
		name = strings.TrimSpace(name)
		if name == "" || strings.ContainsAny(name, "{[\n\"") {
			break
		}
		v, after, ok := firstJSON(rest)
		if !ok { // arguments as a JSON string, as templates render the wire format back
			var str string
			dec := json.NewDecoder(strings.NewReader(rest))
			if dec.Decode(&str) != nil {
				break
			}
			v, after = json.RawMessage(rest[:dec.InputOffset()]), rest[dec.InputOffset():]
		}
		a, ok := argumentsText(v)
		if !ok {
			break
		}
		calls = append(calls, Call{Name: name, Arguments: a})
		s = after
		t := strings.TrimLeft(s, " \t\r\n")
		if r, ok := strings.CutPrefix(t, "[TOOL_CALLS]"); ok {
			s = r
			continue
		}
		break
	}
	return calls, s, len(calls) > 0
}
