// Package engine joins the scheduler, the model and the paged KV cache. Its
// core, Machine, is a single-threaded state machine stepped by typed
// messages (messages.go) whose outputs are Ready values (ready.go); Engine
// is its shell, one goroutine behind the concurrency-safe Submit, Reserve
// and Prefill API (loop.go).
package engine

import (
	"errors"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/sample"
	"github.com/bulkhead-llm/bulkhead/internal/sched"
)

// Request is one generation request, already tokenized and authenticated.
type Request struct {
	ID     string // unique, for logs and metrics
	Tenant string // tenant id; scheduling fair share is per tenant
	// CacheSalt scopes prefix-cache entries to the tenant (DESIGN I6).
	CacheSalt []byte
	Prompt    []int32
	MaxTokens int // > 0
	Sampling  Sampling
	// Logprobs asks for the chosen token's logprob and the TopLogprobs most
	// likely alternatives at every step (0: chosen token only when Logprobs is set).
	Logprobs    bool
	TopLogprobs int
	// StopTokens end generation when sampled (in addition to the model's end
	// of generation tokens unless IgnoreEOS).
	StopTokens []int32
	IgnoreEOS  bool
	// PromptLogprobs asks for the log-probability of every prompt token
	// after the first (and TopLogprobs alternatives), as echo with logprobs
	// needs. Such a request computes its whole prompt itself: the prefix
	// cache is not consulted, since a cached position has no logits.
	PromptLogprobs bool
}

// Sampling holds the sampler settings. Temperature 0 is greedy.
type Sampling struct {
	Temperature float32
	TopK        int
	TopP        float32 // 0 or 1 disables
	MinP        float32
	Seed        uint64
	// Adjustments applied to the logits before the filters (see
	// sample.Params): per-token bias, OpenAI's presence and frequency
	// penalties over the generated tokens, the multiplicative repetition
	// penalty over prompt and output, and MinTokens, before which the
	// stop and end-of-generation tokens cannot be drawn.
	LogitBias         map[int32]float32
	PresencePenalty   float32
	FrequencyPenalty  float32
	RepetitionPenalty float32 // 0 or 1 disables
	MinTokens         int
	// Constraint, when set, masks the logits after the adjustments
	// (structured output). It is stateful: one per request, never shared,
	// and lives in this process only: it does not cross the worker wire.
	Constraint sample.Constraint `json:"-"`
}

// TokenLogprob is one candidate token and its natural-log probability.
type TokenLogprob struct {
	Token   int32
	Logprob float32
}

// PromptLogprob scores one prompt token: its log-probability and the
// most likely alternatives at its position.
type PromptLogprob struct {
	Logprob float32
	Top     []TokenLogprob
}

// FinishReason says why generation ended.
type FinishReason string

// Finish reasons as in the OpenAI API.
const (
	FinishStop   FinishReason = "stop"   // end-of-generation or stop token
	FinishLength FinishReason = "length" // MaxTokens reached or context full
)

// Usage counts the tokens of a finished request.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	CachedTokens     int // prompt tokens served from the prefix cache
}

// Event is one item of a request's stream: a token, the finish, or an
// error. Exactly one of the final two ends every stream, after which the
// channel is closed.
type Event struct {
	Token       int32
	Logprob     float32
	TopLogprobs []TokenLogprob
	// Prompt is set on the first token's event of a PromptLogprobs
	// request: entry i scores prompt token i given the ones before it
	// (entry 0, the first token, has no context and is zero).
	Prompt []PromptLogprob
	// Finish is set on the last event of a successful request.
	Finish *Finish
	// Err is set on the last event of a failed request (aborted, internal
	// error, ownership check failure). No token follows an error.
	Err error

	handoff *sched.Handoff // Prefill's result, inside the engine only
	ready   chan int       // with handoff: layers computed, see Handoff.Ready
}

// Finish ends a successful stream.
type Finish struct {
	Reason FinishReason
	Usage  Usage
}

// ContextLengthError rejects a prompt that cannot be served, before any KV
// page is allocated (DESIGN I4); it is sched's one type, see there.
type ContextLengthError = sched.ContextLengthError

// OverloadedError says the engine has no room now (every page in use and
// the wait bounded, or the wait queue full); the request was never
// started. Callers retry elsewhere or answer 503 with Retry-After.
type OverloadedError struct {
	Reason     string
	RetryAfter time.Duration
}

func (e *OverloadedError) Error() string { return "engine overloaded: " + e.Reason }

// Sentinel errors callers branch on.
var (
	ErrInvalidRequest = errors.New("invalid request") // wrapped with the reason
	ErrShuttingDown   = errors.New("engine is shutting down")
	ErrAborted        = errors.New("request aborted")
	ErrInternal       = errors.New("internal error") // wrapped; e.g. an ownership check failure
)

// Stats is a snapshot of the engine for metrics and readiness.
type Stats struct {
	Running, Waiting int
	// ReservationsWaiting counts Reserve calls queued for pages.
	ReservationsWaiting int
	PagesTotal          int // usable pages (the sentinel page excluded)
	PagesFree           int
	PagesCached         int // unreferenced pages kept for the prefix cache
	PrefixQueries       uint64
	PrefixQueryTokens   uint64 // tokens those lookups covered (restarts included)
	PrefixHitTokens     uint64
	OwnershipFailures   uint64
	Preemptions         uint64
}
