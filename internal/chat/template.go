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
	// strict is the same template with jinja2's `+` (strict.go), used
	// for the verbatim rendering; nil if the rewrite was not possible.
	strict *jinja.Template
	// thinks: the source writes thinking tags (<think>, <|START_THINKING|>,
	// <|think|>), as the templates llama.cpp treats as reasoning do.
	thinks bool
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
	thinks := strings.Contains(source, "think>") || strings.Contains(source, "THINKING") || strings.Contains(source, "think|")
	return &Template{t: t, strict: compileStrict(source), thinks: thinks}, nil
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

// probedAST is the engine's AST shape, read once.
var probedAST, probeErr = probeAST()

// compileStrict compiles source a second time and makes its `+` strict;
// nil when the engine's AST is not the shape strict.go knows.
func compileStrict(source string) *jinja.Template {
	if probeErr != nil {
		return nil
	}
	t, err := jinja.Compile(source)
	if err != nil {
		return nil
	}
	strictify(t, probedAST)
	return t
}
