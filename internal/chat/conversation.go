package chat

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ardanlabs/jinja"
)

// Conversation is what a chat request gives the template, passed through
// as the client sent it, the way Hugging Face's apply_chat_template does:
// each message keeps every field (tool_calls with their arguments as sent,
// tool_call_id, name, reasoning_content, content as a string, null or an
// array of parts), nothing is joined, trimmed or normalised.
type Conversation struct {
	// Messages are the raw JSON message objects.
	Messages            []json.RawMessage
	AddGenerationPrompt bool
	BOSToken, EOSToken  string
	// Tools and Documents are passed when set; nil leaves them undefined,
	// as llama.cpp does, so a template's `for tool in tools` is empty
	// rather than an error.
	Tools, Documents json.RawMessage
	// Kwargs are extra template variables (chat_template_kwargs, such as
	// enable_thinking). They may not replace the variables above.
	Kwargs map[string]json.RawMessage
}

// reserved are the variables a conversation sets itself.
var reserved = map[string]bool{"messages": true, "add_generation_prompt": true, "bos_token": true,
	"eos_token": true, "tools": true, "documents": true, "raise_exception": true, "strftime_now": true}

// ErrKwarg means chat_template_kwargs tried to set a reserved variable.
var ErrKwarg = fmt.Errorf("chat: chat_template_kwargs may not set a reserved variable")

// RenderConversation renders c into prompt text: verbatim first, then,
// if the template refuses, with llama.cpp's normalisations (normalise.go).
func (t *Template) RenderConversation(c Conversation) (string, error) {
	msgs, err := c.messages()
	if err != nil {
		return "", err
	}
	out, err := t.render(c, msgs, true)
	if err == nil {
		return out, nil
	}
	// Retry with llama.cpp's normalisations (see normalise.go); the error
	// reported is the verbatim rendering's.
	msgs, _ = c.messages()
	normalise(msgs)
	c = t.withLlamacppDefaults(c, time.Now())
	if out2, err2 := t.render(c, msgs, false); err2 == nil {
		return out2, nil
	}
	if err == nil {
		return out, nil
	}
	if folded := foldSystem(msgs); folded != nil {
		if out, err2 := t.render(c, folded, false); err2 == nil {
			return out, nil
		}
	}
	return "", err
}

func (c Conversation) messages() ([]jinja.Value, error) {
	msgs := make([]jinja.Value, len(c.Messages))
	for i, m := range c.Messages {
		v, err := jsonValue(m)
		if err != nil {
			return nil, fmt.Errorf("chat: messages[%d]: %w", i, err)
		}
		msgs[i] = v
	}
	return msgs, nil
}

// render renders with jinja2's strict `+` (strict.go) or, for the
// llama.cpp-normalised retry, with the engine's lenient one, as llama.cpp's
// own engine is.
func (t *Template) render(c Conversation, msgs []jinja.Value, strict bool) (string, error) {
	vars := make(map[string]jinja.Value, 8+len(c.Kwargs))
	for k, raw := range c.Kwargs {
		if reserved[k] {
			return "", fmt.Errorf("%w: %q", ErrKwarg, k)
		}
		v, err := jsonValue(raw)
		if err != nil {
			return "", fmt.Errorf("chat: chat_template_kwargs[%q]: %w", k, err)
		}
		vars[k] = v
	}
	vars["messages"] = jinja.NewList(msgs)
	vars["add_generation_prompt"] = jinja.NewBool(c.AddGenerationPrompt)
	vars["bos_token"] = jinja.NewString(c.BOSToken)
	vars["eos_token"] = jinja.NewString(c.EOSToken)
	for name, raw := range map[string]json.RawMessage{"tools": c.Tools, "documents": c.Documents} {
		if raw == nil || string(raw) == "null" {
			// Hugging Face passes None; llama.cpp (the retry) leaves
			// them undefined.
			if strict {
				vars[name] = jinja.None()
			}
			continue
		}
		v, err := jsonValue(raw)
		if err != nil {
			return "", fmt.Errorf("chat: %s: %w", name, err)
		}
		vars[name] = v
	}
	tmpl := t.t
	if strict && t.strict != nil {
		tmpl = t.strict
		for name, f := range strictFilters {
			vars[name] = f
		}
	}
	out, err := tmpl.RenderValues(vars)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrRender, err)
	}
	return out, nil
}
