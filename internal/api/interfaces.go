package api

import (
	"context"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
)

// Engine is what the server needs from the inference engine.
type Engine interface {
	// Submit admits a request or returns an error synchronously
	// (*engine.ContextLengthError, engine.ErrInvalidRequest,
	// engine.ErrShuttingDown). Cancelling ctx aborts the request and frees
	// its pages. The channel ends with a Finish or an Err event and is then
	// closed; the final event carries no token.
	Submit(ctx context.Context, req engine.Request) (<-chan engine.Event, error)
	MaxContext() int
	Stats() engine.Stats
	Ready() bool
}

// Tokenizer is what the server needs from the model's tokenizer;
// *tokenizer.Tokenizer satisfies it.
type Tokenizer interface {
	Encode(text string, addSpecial, parseSpecial bool) []int32
	Decode(ids []int32) string
	IsEOG(id int32) bool
	ChatTemplate() string
	BOS() int32
	EOS() int32
	// Piece is the raw bytes a token stands for, for logprobs.
	Piece(id int32) []byte
	// TokenText is the vocabulary's spelling of a token ("<s>"), which
	// chat templates receive as bos_token and eos_token.
	TokenText(id int32) string
}

// vocabSizer is optionally implemented by tokenizers; without it prompts
// given as token ids are refused, since they cannot be range-checked.
type vocabSizer interface {
	VocabSize() int
}
