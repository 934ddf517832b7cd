package api

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/tokenizer"
)

// realTokenizer loads the SentencePiece vocabulary of the shared tiny
// Llama model, or skips.
func realTokenizer(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	path := filepath.Join("..", "..", "..", "shared", "testdata", "models", "llama-2-tiny-random.gguf")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("shared test model not present (%v); it lives at repo-root ../shared/testdata", err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestRealTokenizerStreamsContinuationTextWithLeadingSpace(t *testing.T) {
	tok := realTokenizer(t)
	// Passed as it is: NewServer must pick the tokenizer's own stream decoder.
	env := newTestEnvWith(t, apitest.NewFakeEngine(), tok, nil)
	prompt := "Héllo wörld, 你好 😀"
	stream := env.client("k").Completions.NewStreaming(context.Background(), openai.CompletionNewParams{
		Model: testModel, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
		Logprobs: openai.Int(0),
	})
	var text strings.Builder
	var first string
	for stream.Next() {
		for _, ch := range stream.Current().Choices {
			text.WriteString(ch.Text)
			if first == "" && len(ch.Logprobs.Tokens) > 0 {
				first = ch.Logprobs.Tokens[0]
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	// The echoed tokens continue a text, so the first SentencePiece "▁"
	// prints as a space, and every character arrives whole.
	if text.String() != " "+prompt {
		t.Fatalf("streamed %q, want %q", text.String(), " "+prompt)
	}
	if !strings.HasPrefix(first, " ") {
		t.Errorf("first logprobs token %q should carry its SentencePiece space", first)
	}
}

func TestRealTokenizerWithoutChatTemplateRefusesChatClearly(t *testing.T) {
	tok := realTokenizer(t)
	if tok.ChatTemplate() != "" {
		t.Skip("the shared model gained a chat template")
	}
	srv := NewServer(Config{ModelID: testModel}, apitest.NewFakeEngine(), tok, nil, discardLogger())
	rec := doRequest(srv, "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`)
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), "no chat template") {
		t.Fatalf("%d %s", rec.Code, rec.Body.String())
	}
}

func TestChatTemplateGetsBOSSpellingFromVocabulary(t *testing.T) {
	tok := realTokenizer(t)
	if got := tok.TokenText(tok.BOS()); got != "<s>" {
		t.Fatalf("bos spelling %q, want <s>", got)
	}
}
