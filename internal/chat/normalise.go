package chat

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// When a template refuses the conversation exactly as sent, rendering is
// retried once with the normalisations llama.cpp's server applies to
// OpenAI requests (templates are written against Hugging Face's inputs,
// and many break on OpenAI's wire format): null or missing content becomes "", an
// array of text parts becomes one string joined with "\n", a tool call's
// arguments sent as a JSON string become the object they encode, and —
// only if the template still refuses — a leading system message is folded
// into the first user turn (for templates without a system role). A
// template that refuses even then is refused to the client. The verbatim
// rendering always comes first, so a template that accepts OpenAI's
// shapes sees them untouched.

// withLlamacppDefaults gives the retry the variables llama.cpp's server
// defines besides the request's own: today's date as date_string
// ("02 Dec 2026") and datetime ("Dec 02 2026"), and enable_thinking=true
// (its default reasoning mode) for templates that write thinking tags,
// which is when llama.cpp detects reasoning support. A client's
// chat_template_kwargs still win.
func (t *Template) withLlamacppDefaults(c Conversation, now time.Time) Conversation {
	kw := make(map[string]json.RawMessage, len(c.Kwargs)+3)
	kw["date_string"] = jsonString(now.Format("02 Jan 2006"))
	kw["datetime"] = jsonString(now.Format("Jan 02 2006"))
	if t.thinks {
		kw["enable_thinking"] = json.RawMessage("true")
	}
	for k, v := range c.Kwargs {
		kw[k] = v
	}
	c.Kwargs = kw
	return c
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// normalise applies the llama.cpp request normalisations to msgs in place.
func normalise(msgs []jinja.Value) {
	for _, m := range msgs {
		if !m.IsDict() {
			continue
		}
		d := m.AsDict()
		if _, ok := d.Get("content"); !ok {
			d.Set("content", jinja.NewString(""))
		}
		if c, ok := d.Get("content"); ok {
			switch {
			case c.IsNone():
				d.Set("content", jinja.NewString(""))
			case c.IsList():
				if s, ok := joinTextParts(c.AsList()); ok {
					d.Set("content", jinja.NewString(s))
				}
			}
		}
		if tc, ok := d.Get("tool_calls"); ok && tc.IsList() {
			for _, call := range tc.AsList().Items {
				parseArguments(call)
			}
		}
	}
}

func joinTextParts(l *jinja.List) (string, bool) {
	parts := make([]string, 0, len(l.Items))
	for _, p := range l.Items {
		if !p.IsDict() {
			return "", false
		}
		text, ok := p.AsDict().Get("text")
		if !ok || !text.IsString() {
			return "", false
		}
		parts = append(parts, text.AsString())
	}
	return strings.Join(parts, "\n"), true
}

func parseArguments(call jinja.Value) {
	if !call.IsDict() {
		return
	}
	fn, ok := call.AsDict().Get("function")
	if !ok || !fn.IsDict() {
		return
	}
	args, ok := fn.AsDict().Get("arguments")
	if !ok || !args.IsString() {
		return
	}
	v, err := jsonValue(json.RawMessage(args.AsString()))
	if err == nil && v.IsDict() {
		fn.AsDict().Set("arguments", v)
	}
}

// foldSystem merges a leading system message into the first user message
// ("system\nuser"), returning the shortened list, or nil if there is no
// such pair.
func foldSystem(msgs []jinja.Value) []jinja.Value {
	if len(msgs) < 2 || role(msgs[0]) != "system" || role(msgs[1]) != "user" {
		return nil
	}
	sys, _ := msgs[0].AsDict().Get("content")
	usr, _ := msgs[1].AsDict().Get("content")
	if !sys.IsString() || !usr.IsString() {
		return nil
	}
	msgs[1].AsDict().Set("content", jinja.NewString(sys.AsString()+"\n"+usr.AsString()))
	return msgs[1:]
}

func role(m jinja.Value) string {
	if !m.IsDict() {
		return ""
	}
	r, ok := m.AsDict().Get("role")
	if !ok || !r.IsString() {
		return ""
	}
	return r.AsString()
}
