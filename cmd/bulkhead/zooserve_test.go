package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/bulkhead-llm/bulkhead/internal/loader"
)

// zooDir is the shared model zoo seen from this package's directory.
const zooDir = "../../../shared/testdata/zoo"

// startServeModel runs serve in-process on a GGUF file, single-threaded
// with a small KV pool so one file per architecture stays quick.
func startServeModel(t *testing.T, path string) string {
	t.Helper()
	base, _, stop := startServeWith(t, serveOptions{model: path, name: "zoo", threads: 1, tokenBudget: 256, maxRunning: 4,
		drain: 10 * time.Second, logLevel: "error", pool: loader.PoolOptions{MaxContext: 256, KVTokens: 1024}})
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("serve %s: %v", path, err)
		}
	})
	return base
}

// zooPromptTokens is what llama.cpp tokenized the first reference prompt
// to, read from the file's reference.
func zooPromptTokens(t *testing.T, stem string) (string, []int32) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(zooDir, stem+".reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Results []struct {
			Prompt       string  `json:"prompt"`
			PromptTokens []int32 `json:"prompt_tokens"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &ref); err != nil || len(ref.Results) == 0 {
		t.Fatalf("%s reference: %v (%d results)", stem, err, len(ref.Results))
	}
	return ref.Results[0].Prompt, ref.Results[0].PromptTokens
}

// hasChatTemplate reports whether the GGUF names tokenizer.chat_template
// in its metadata; the key text is enough, since a zoo file that has the
// key has the template.
func hasChatTemplate(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(b, []byte("tokenizer.chat_template"))
}

// One zoo file of every architecture behind `serve --model FILE`, driven
// by the official OpenAI client: a completion answers 200 with text and a
// prompt count equal to /tokenize's (and to llama.cpp's tokens); a chat
// request is answered where the file has a chat template and otherwise
// refused with a 400 that names the missing template.
func TestServeZooArchitectures(t *testing.T) {
	if _, err := os.Stat(zooDir); err != nil {
		t.Skipf("model zoo not present at %s (the shared test data is outside the repository): %v", zooDir, err)
	}
	for _, stem := range []string{"random-llama-Q8_0", "random-qwen2-Q8_0", "random-qwen3-Q8_0", "random-qwen3moe-Q8_0", "random-phi3-Q8_0", "random-gemma3-Q8_0"} {
		t.Run(stem, func(t *testing.T) {
			path := filepath.Join(zooDir, stem+".gguf")
			if _, err := os.Stat(path); err != nil {
				t.Skipf("%s not in the zoo: %v", path, err)
			}
			prompt, llamaTokens := zooPromptTokens(t, stem)
			base := startServeModel(t, path)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			body, _ := json.Marshal(map[string]any{"content": prompt})
			hr, err := http.Post(base+"/tokenize", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			var tok struct {
				Tokens []int32 `json:"tokens"`
				Count  int     `json:"count"`
			}
			err = json.NewDecoder(hr.Body).Decode(&tok)
			hr.Body.Close()
			if err != nil || hr.StatusCode != http.StatusOK {
				t.Fatalf("/tokenize: status %d, %v", hr.StatusCode, err)
			}
			if !slices.Equal(tok.Tokens, llamaTokens) {
				t.Errorf("/tokenize %q = %v, llama.cpp %v", prompt, tok.Tokens, llamaTokens)
			}

			c := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
			resp, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: "zoo",
				Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
				MaxTokens: openai.Int(4), Temperature: openai.Float(0)})
			if err != nil {
				t.Fatalf("completion: %v", err)
			}
			if len(resp.Choices) != 1 || resp.Choices[0].Text == "" {
				t.Errorf("completion: choices %+v, want one non-empty text", resp.Choices)
			}
			if resp.Usage.PromptTokens != int64(tok.Count) {
				t.Errorf("completion usage.prompt_tokens = %d, /tokenize counts %d", resp.Usage.PromptTokens, tok.Count)
			}
			if resp.Usage.CompletionTokens < 1 || resp.Usage.CompletionTokens > 4 {
				t.Errorf("completion usage.completion_tokens = %d, want 1..4", resp.Usage.CompletionTokens)
			}
			t.Logf("completion %q -> %q (prompt_tokens %d, completion_tokens %d)", prompt, resp.Choices[0].Text, resp.Usage.PromptTokens, resp.Usage.CompletionTokens)

			chat, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "zoo",
				Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
				MaxTokens: openai.Int(4), Temperature: openai.Float(0)})
			if hasChatTemplate(t, path) {
				if err != nil {
					t.Fatalf("chat completion on a file with a template: %v", err)
				}
				if len(chat.Choices) != 1 || chat.Choices[0].Message.Content == "" {
					t.Errorf("chat completion: choices %+v, want one non-empty message", chat.Choices)
				}
				return
			}
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("chat completion on a file without a template: %v, want a 400", err)
			}
			if apiErr.StatusCode != http.StatusBadRequest || apiErr.Code != "chat_template_missing" ||
				!strings.Contains(apiErr.Message, "tokenizer.chat_template") {
				t.Errorf("chat without a template: status %d code %q message %q; want 400 chat_template_missing naming tokenizer.chat_template",
					apiErr.StatusCode, apiErr.Code, apiErr.Message)
			}
			t.Logf("chat refused: %d %s: %s", apiErr.StatusCode, apiErr.Code, apiErr.Message)
		})
	}
}
