// Package chat renders chat conversations into prompt text with the Jinja
// chat template a model ships in its GGUF metadata
// (tokenizer.chat_template), the same way Hugging Face's tokenizers and
// other OpenAI-compatible servers do.
package chat

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ardanlabs/jinja"
)

// ErrNoTemplate means the model has no chat template, so chat requests
// cannot be served (completions still can).
var ErrNoTemplate = errors.New("chat: the model has no chat template (tokenizer.chat_template); use /v1/completions")

// ErrRender wraps failures while rendering a conversation, including a
// template's own raise_exception (e.g. "roles must alternate").
var ErrRender = errors.New("chat: rendering the chat template failed")

// Message is one turn of a conversation.
type Message struct {
	Role    string
	Content string
}

// Options are the variables templates expect besides the messages.
type Options struct {
	AddGenerationPrompt bool
	BOSToken, EOSToken  string
}

// Template is a compiled chat template, safe for concurrent use.
type Template struct {
	t *jinja.Template
}

// Compile compiles a chat template source; an empty source is ErrNoTemplate.
func Compile(source string) (*Template, error) {
	if strings.TrimSpace(source) == "" {
		return nil, ErrNoTemplate
	}
	t, err := jinja.Compile(source)
	if err != nil {
		return nil, fmt.Errorf("chat: compiling the chat template: %w", err)
	}
	return &Template{t: t}, nil
}

// Render renders messages into prompt text.
func (t *Template) Render(messages []Message, opts Options) (string, error) {
	msgs := make([]any, len(messages))
	for i, m := range messages {
		msgs[i] = map[string]any{"role": m.Role, "content": m.Content}
	}
	out, err := t.t.Render(map[string]any{
		"messages":              msgs,
		"add_generation_prompt": opts.AddGenerationPrompt,
		"bos_token":             opts.BOSToken,
		"eos_token":             opts.EOSToken,
	})
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrRender, err)
	}
	return out, nil
}
