package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
)

func TestCompletionEchoesPromptThroughOfficialClient(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	c := env.client("any")
	resp, err := c.Completions.New(context.Background(), openai.CompletionNewParams{
		Model:     testModel,
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("héllo wörld")},
		MaxTokens: openai.Int(100),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 1 || resp.Choices[0].Text != "héllo wörld" {
		t.Fatalf("choices = %+v, want the echoed prompt", resp.Choices)
	}
	if resp.Choices[0].FinishReason != "stop" {
		t.Errorf("finish_reason = %q, want stop (fake engine ends with EOS)", resp.Choices[0].FinishReason)
	}
	// 13 bytes + BOS in the prompt; 13 echoed bytes + EOS generated.
	if resp.Usage.PromptTokens != 14 || resp.Usage.CompletionTokens != 14 || resp.Usage.TotalTokens != 28 {
		t.Errorf("usage = %+v, want 14 prompt + 14 completion", resp.Usage)
	}
}

func TestCompletionStopsAtMaxTokensWithLengthReason(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	resp, err := env.client("k").Completions.New(context.Background(), openai.CompletionNewParams{
		Model: testModel, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("abcdefgh")},
		MaxTokens: openai.Int(3),
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Text != "abc" || resp.Choices[0].FinishReason != "length" || resp.Usage.CompletionTokens != 3 {
		t.Fatalf("got %q %q usage %+v, want \"abc\" length 3", resp.Choices[0].Text, resp.Choices[0].FinishReason, resp.Usage)
	}
	if got := env.eng.LastRequest().MaxTokens; got != 3 {
		t.Errorf("engine MaxTokens = %d, want 3", got)
	}
}

func TestCompletionStopStringEndsTextBeforeIt(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	resp, err := env.client("k").Completions.New(context.Background(), openai.CompletionNewParams{
		Model: testModel, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("one two STOP three")},
		Stop: openai.CompletionNewParamsStopUnion{OfStringArray: []string{"xyz", "STOP"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Text != "one two " || resp.Choices[0].FinishReason != "stop" {
		t.Fatalf("got %q (%s), want %q stop", resp.Choices[0].Text, resp.Choices[0].FinishReason, "one two ")
	}
	if resp.Usage.CompletionTokens != int64(len("one two STOP")) {
		t.Errorf("completion tokens = %d, want %d (tokens up to the end of the stop string)", resp.Usage.CompletionTokens, len("one two STOP"))
	}
}

func TestChatRendersTemplateAndReplies(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	resp, err := env.client("k").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    testModel,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("hi")},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The fake engine echoes the rendered prompt, so the reply shows the template's work.
	want := "[system]be brief[user]hi[assistant]"
	if got := resp.Choices[0].Message.Content; got != want {
		t.Fatalf("content = %q, want %q", got, want)
	}
	if resp.Choices[0].Message.Role != "assistant" || resp.Object != "chat.completion" {
		t.Errorf("role %q object %q", resp.Choices[0].Message.Role, resp.Object)
	}
	if resp.Usage.PromptTokens != int64(len(want)+1) {
		t.Errorf("prompt tokens = %d, want %d (BOS from the template + bytes)", resp.Usage.PromptTokens, len(want)+1)
	}
	if env.eng.LastRequest().Prompt[0] != apitest.BOS || env.eng.LastRequest().Prompt[1] == apitest.BOS {
		t.Errorf("prompt should start with exactly one BOS (the template's): %v", env.eng.LastRequest().Prompt[:2])
	}
}

func TestChatStreamWithIncludeUsage(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	stream := env.client("k").Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         testModel,
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("ü€")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var text strings.Builder
	var finish string
	var usage openai.CompletionUsage
	chunks := 0
	for stream.Next() {
		ch := stream.Current()
		chunks++
		if len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
			if ch.Choices[0].FinishReason != "" {
				finish = ch.Choices[0].FinishReason
			}
		}
		if ch.Usage.TotalTokens > 0 {
			usage = ch.Usage
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	want := "[user]ü€[assistant]"
	if text.String() != want || finish != "stop" {
		t.Fatalf("streamed %q finish %q, want %q stop", text.String(), finish, want)
	}
	if usage.PromptTokens != int64(len(want)+1) || usage.CompletionTokens != int64(len(want)+1) {
		t.Errorf("usage = %+v", usage)
	}
	if chunks < 5 {
		t.Errorf("only %d chunks; expected one per character plus role, finish, usage", chunks)
	}
}

func TestCompletionStreamThroughOfficialClient(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	stream := env.client("k").Completions.NewStreaming(context.Background(), openai.CompletionNewParams{
		Model: testModel, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("stream me")},
		MaxTokens: openai.Int(6),
	})
	var text strings.Builder
	var finish string
	for stream.Next() {
		for _, ch := range stream.Current().Choices {
			text.WriteString(ch.Text)
			if ch.FinishReason != "" {
				finish = string(ch.FinishReason)
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != "stream" || finish != "length" {
		t.Fatalf("got %q %q, want \"stream\" length", text.String(), finish)
	}
}

func TestOfficialClientSeesErrorFields(t *testing.T) {
	eng := apitest.NewFakeEngine()
	eng.MaxCtx.Store(16)
	env := newTestEnv(t, eng, nil)
	_, err := env.client("k").Completions.New(context.Background(), openai.CompletionNewParams{
		Model: testModel, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(strings.Repeat("x", 40))},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *openai.Error", err)
	}
	if apiErr.StatusCode != http.StatusBadRequest || apiErr.Code != "context_length_exceeded" || apiErr.Type != "invalid_request_error" {
		t.Fatalf("error = %d %q %q", apiErr.StatusCode, apiErr.Code, apiErr.Type)
	}
	if !strings.Contains(apiErr.Message, "41") || !strings.Contains(apiErr.Message, "15") {
		t.Errorf("message %q should name the prompt's 41 tokens and the limit 15", apiErr.Message)
	}
	if len(eng.Requests()) != 0 {
		t.Errorf("oversized prompt reached the engine: %d submits", len(eng.Requests()))
	}
}

func TestChatLogprobsHaveChatShape(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	resp, err := env.client("k").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: testModel, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("a")},
		Logprobs: openai.Bool(true), TopLogprobs: openai.Int(2), MaxTokens: openai.Int(2),
	})
	if err != nil {
		t.Fatal(err)
	}
	lp := resp.Choices[0].Logprobs.Content
	if len(lp) != 2 || lp[0].Token != "[" || lp[0].Logprob != -0.5 || len(lp[0].Bytes) != 1 || lp[0].Bytes[0] != '[' {
		t.Fatalf("logprobs content = %+v", lp)
	}
	if len(lp[0].TopLogprobs) != 2 || lp[0].TopLogprobs[1].Token != "z" || lp[0].TopLogprobs[1].Logprob != -1.5 {
		t.Errorf("top_logprobs = %+v", lp[0].TopLogprobs)
	}
}

func TestCompletionLogprobsHaveLegacyShape(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	resp, err := env.client("k").Completions.New(context.Background(), openai.CompletionNewParams{
		Model: testModel, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("xy")},
		Logprobs: openai.Int(1), MaxTokens: openai.Int(2),
	})
	if err != nil {
		t.Fatal(err)
	}
	lp := resp.Choices[0].Logprobs
	if len(lp.Tokens) != 2 || lp.Tokens[1] != "y" || lp.TokenLogprobs[1] != -0.5 || len(lp.TextOffset) != 2 || lp.TextOffset[1] != 1 {
		t.Fatalf("logprobs = %+v", lp)
	}
	if len(lp.TopLogprobs) != 2 || lp.TopLogprobs[0]["x"] != -0.5 || len(lp.TopLogprobs[0]) != 1 {
		t.Errorf("top_logprobs = %+v", lp.TopLogprobs)
	}
}
