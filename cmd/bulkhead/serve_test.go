package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
	"github.com/bulkhead-llm/bulkhead/internal/loader"
)

// startServe runs serve in-process on the copy model and returns its base
// URL and a stop function that drains it like SIGTERM.
func startServe(t *testing.T) (string, func() error) {
	t.Helper()
	base, _, stop := startServeAdmin(t)
	return base, stop
}

// startServeAdmin is startServe with an admin listener; it returns the API
// and the admin base URLs.
func startServeAdmin(t *testing.T) (string, string, func() error) {
	t.Helper()
	return startServeWith(t, serveOptions{threads: 1, tokenBudget: 256, maxRunning: 8, drain: 10 * time.Second,
		logLevel: "error", pool: loader.PoolOptions{MaxContext: 1024, KVTokens: 8192}})
}

// startServeWith runs serve in-process with o on loopback with an admin
// listener and returns the API and admin base URLs and a stop function
// (also run at cleanup) that drains it like SIGTERM.
func startServeWith(t *testing.T, o serveOptions) (string, string, func() error) {
	t.Helper()
	admin := make(chan string, 1)
	o.listen = "127.0.0.1:0"
	o.trust.adminListen, o.trust.onAdmin = "127.0.0.1:0", func(a string) { admin <- a }
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, o, io.Discard, func(a string) { ready <- a }) }()
	select {
	case a := <-ready:
		stop := sync.OnceValue(func() error { cancel(); return <-done })
		t.Cleanup(func() { stop() })
		return "http://" + a, "http://" + <-admin, stop
	case err := <-done:
		cancel()
		t.Fatalf("serve: %v", err)
	}
	return "", "", nil
}

// The real server, real engine and the built-in model, driven by the
// official OpenAI Go client.
func TestServeWithTheOfficialClient(t *testing.T) {
	base, stop := startServe(t)
	c := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	ctx := context.Background()
	words := copymodel.AuditWords()
	prompt, err := copymodel.Prompt(words.Canary[20:28], 40, 900, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := " " + strings.Join(words.Canary[20:28], " ")

	models, err := c.Models.List(ctx)
	if err != nil || len(models.Data) != 1 || models.Data[0].ID != copymodel.Name {
		t.Fatalf("models: %+v %v", models, err)
	}
	resp, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: copymodel.Name,
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)}, MaxTokens: openai.Int(8), Temperature: openai.Float(0)})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Text != want || resp.Usage.PromptTokens != 900 || resp.Usage.CompletionTokens != 8 {
		t.Fatalf("completion %q usage %+v, want %q", resp.Choices[0].Text, resp.Usage, want)
	}

	stream := c.Completions.NewStreaming(ctx, openai.CompletionNewParams{Model: copymodel.Name,
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)}, MaxTokens: openai.Int(8),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
	var text strings.Builder
	var usage openai.CompletionUsage
	for stream.Next() {
		ch := stream.Current()
		if len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Text)
		}
		if ch.Usage.TotalTokens > 0 {
			usage = ch.Usage
		}
	}
	if err := stream.Err(); err != nil || text.String() != want || usage.CompletionTokens != 8 {
		t.Fatalf("stream %q usage %+v err %v", text.String(), usage, err)
	}

	// Oversized: 400 context_length_exceeded naming both numbers.
	long, _ := copymodel.Prompt(words.Canary[:8], 5, 1500, 2)
	_, err = c.Completions.New(ctx, openai.CompletionNewParams{Model: copymodel.Name,
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(long)}, MaxTokens: openai.Int(8)})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "context_length_exceeded" ||
		!strings.Contains(apiErr.Message, "1500") || !strings.Contains(apiErr.Message, "1023") {
		t.Fatalf("oversized prompt: %v", err)
	}

	// Ready, metrics, then a drain that lets an in-flight request finish.
	if code, _ := getBody(t, base+"/ready"); code != 200 {
		t.Fatalf("/ready %d", code)
	}
	if code, body := getBody(t, base+"/metrics"); code != 404 || strings.Contains(body, "bulkhead:") {
		t.Fatalf("/metrics on the tenant listener: %d %.300s (it belongs on --admin-listen)", code, body)
	}
	inflight := make(chan error, 1)
	go func() {
		r, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: copymodel.Name,
			Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
			MaxTokens: openai.Int(100), Temperature: openai.Float(0)})
		if err == nil && r.Usage.CompletionTokens != 100 {
			err = errors.New("in-flight request cut short")
		}
		inflight <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := stop(); err != nil {
		t.Fatalf("drain: %v", err)
	}
	if err := <-inflight; err != nil {
		t.Fatalf("in-flight request during drain: %v", err)
	}
	if _, err := http.Get(base + "/health"); err == nil {
		t.Fatal("still listening after shutdown")
	}
}
