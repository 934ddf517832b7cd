package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// tokShape is one of the /tokenize request shapes servers accept.
type tokShape int

const (
	tokNone       tokShape = iota // no endpoint: lengths are estimated
	tokVLLMChat                   // vLLM: {"model","messages"} applies the chat template
	tokVLLMPrompt                 // vLLM (and bulkhead): {"model","prompt"}
	tokLlamaCPP                   // llama.cpp: {"content","add_special"}
	tokUnprobed                   // not yet tried
)

// counter measures prompts in the server's own tokens when the server has
// a /tokenize endpoint, and estimates them otherwise.
type counter struct {
	c     *client
	key   string
	style Style
	shape tokShape
}

// Name says how lengths were counted, for the report.
func (t *counter) Name() string {
	switch t.shape {
	case tokVLLMChat:
		return "server /tokenize (chat template applied)"
	case tokVLLMPrompt:
		return "server /tokenize"
	case tokLlamaCPP:
		if t.style == StyleNatural {
			return "server /tokenize (message text only; chat template not counted)"
		}
		return "server /tokenize"
	}
	return "estimated (the server has no /tokenize endpoint)"
}

// Exact reports whether counts come from the server's tokenizer.
func (t *counter) Exact() bool { return t.shape != tokNone && t.shape != tokUnprobed }

// detect tries the request shapes in turn on a sample text and keeps the
// first the server answers; a transport failure is returned.
func (t *counter) detect(ctx context.Context, sample string) error {
	shapes := []tokShape{tokVLLMPrompt, tokLlamaCPP}
	if t.style == StyleNatural {
		shapes = []tokShape{tokVLLMChat, tokVLLMPrompt, tokLlamaCPP}
	}
	for _, s := range shapes {
		n, err := t.tokenize(ctx, s, sample)
		if err != nil {
			return err
		}
		if n <= 0 {
			continue
		}
		// A server that ignores the field it does not know would count an
		// empty prompt; the count must grow with the text.
		n2, err := t.tokenize(ctx, s, sample+" "+sample)
		if err != nil {
			return err
		}
		if n2 > n {
			t.shape = s
			return nil
		}
	}
	t.shape = tokNone
	return nil
}

// Count returns the prompt's length in tokens.
func (t *counter) Count(ctx context.Context, text string) (int, error) {
	if !t.Exact() {
		return estimateTokens(t.style, text), nil
	}
	n, err := t.tokenize(ctx, t.shape, text)
	if err != nil {
		return 0, err
	}
	if n == tooLongToCount {
		// A server that bounds its tokenizer (bulkhead counts up to a few
		// contexts) refuses to count a text far past its context; such a
		// text is only ever a probe the server must refuse, so an
		// estimate places it well enough.
		return estimateTokens(t.style, text), nil
	}
	if n <= 0 {
		return 0, fmt.Errorf("%w: /tokenize stopped answering", ErrConnection)
	}
	return n, nil
}

// estimateTokens guesses a length when the server cannot count: copy-style
// words are one token each plus a BOS; English text runs about four bytes
// a token, plus a little for the chat template.
func estimateTokens(style Style, text string) int {
	if style == StyleCopy {
		return len(strings.Fields(text)) + 1
	}
	return (len(text)+3)/4 + 8
}

// tokenizeReply covers vLLM's {"count","tokens"} and llama.cpp's
// {"tokens"} (whose entries may be ids or {id, piece} objects).
type tokenizeReply struct {
	Count  int               `json:"count"`
	Tokens []json.RawMessage `json:"tokens"`
}

// tokenize sends one shape; it returns 0 and no error when the server
// does not understand that shape.
func (t *counter) tokenize(ctx context.Context, s tokShape, text string) (int, error) {
	var body map[string]any
	switch s {
	case tokVLLMChat:
		body = map[string]any{"model": t.c.model, "messages": []map[string]string{{"role": "user", "content": text}}, "add_generation_prompt": true}
	case tokVLLMPrompt:
		body = map[string]any{"model": t.c.model, "prompt": text}
	case tokLlamaCPP:
		body = map[string]any{"content": text, "add_special": true}
	default:
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, t.c.timeout)
	defer cancel()
	resp, err := t.c.send(ctx, http.MethodPost, "/tokenize", t.key, body)
	if err != nil {
		return 0, fmt.Errorf("%w: POST /tokenize: %v", ErrConnection, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return 0, fmt.Errorf("%w: POST /tokenize: reading body: %v", ErrConnection, err)
	}
	if resp.StatusCode == http.StatusBadRequest && bytes.Contains(b, []byte("context_length_exceeded")) {
		return tooLongToCount, nil
	}
	if resp.StatusCode != http.StatusOK {
		return 0, nil
	}
	return parseTokenCount(b), nil
}

// tooLongToCount is tokenize's answer when the server refused to count a
// text because it is far longer than its context.
const tooLongToCount = -1

// parseTokenCount reads a /tokenize answer: vLLM's count, else the length
// of the tokens array; 0 when the body is not a tokenize answer.
func parseTokenCount(b []byte) int {
	var tr tokenizeReply
	if json.Unmarshal(b, &tr) != nil || tr.Tokens == nil {
		return 0
	}
	if tr.Count > 0 {
		return tr.Count
	}
	return len(tr.Tokens)
}
