package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
)

// Structured output end to end: the real engine samples the copy model
// under a json_object mask and the text returned parses as a JSON object,
// however little the model itself knows of JSON.
func TestServeResponseFormatJSONObject(t *testing.T) {
	base, _ := startServe(t)
	c := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	ctx := context.Background()
	for _, prompt := range []string{"{} {} {", `{"a":1} {"a":1} {"a":1} {`, "{ }"} {
		resp, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: copymodel.Name,
			Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)}, MaxTokens: openai.Int(400), Temperature: openai.Float(0)},
			option.WithJSONSet("response_format", map[string]any{"type": "json_object"}))
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(resp.Choices[0].Text), &obj); err != nil {
			t.Fatalf("prompt %q: output %q (finish %s) is not a JSON object: %v", prompt, resp.Choices[0].Text, resp.Choices[0].FinishReason, err)
		}
		t.Logf("prompt %q → %s", prompt, resp.Choices[0].Text)
	}
	// json_schema with strict, on completions (the copy model has no chat
	// template): the output must validate, not merely parse.
	schema := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "t", "strict": true, "schema": map[string]any{
		"type": "object", "additionalProperties": false, "required": []string{"a"},
		"properties": map[string]any{"a": map[string]any{"type": "integer"}}}}}
	resp, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: copymodel.Name,
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(`{"a":1} {"a":1} {"b":true} {`)}, MaxTokens: openai.Int(400), Temperature: openai.Float(0)},
		option.WithJSONSet("response_format", schema))
	if err != nil {
		t.Fatal(err)
	}
	text := resp.Choices[0].Text
	var got struct {
		A *int `json:"a"`
	}
	dec := json.NewDecoder(stringsReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil || got.A == nil || dec.More() {
		t.Fatalf("json_schema output %q does not validate: %v", text, err)
	}
	t.Logf("json_schema → %s", text)
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
