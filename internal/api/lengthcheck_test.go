package api

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
	"github.com/bulkhead-llm/bulkhead/internal/sched"
)

// TestContextLengthMessageIsTheScheduler pins that the API refuses an
// oversized prompt with the one length check the scheduler and gateway
// use: its 400 says exactly what sched.ContextLengthError says, both
// numbers included, so the wording cannot drift between the layers.
func TestContextLengthMessageIsTheScheduler(t *testing.T) {
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
	want := sched.CheckPromptLength(41, sched.Limits{MaxContext: 16}).Error()
	if apiErr.Message != want {
		t.Fatalf("message %q, want the scheduler's %q", apiErr.Message, want)
	}
}
