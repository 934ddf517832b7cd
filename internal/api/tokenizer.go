package api

import (
	"github.com/bulkhead-llm/bulkhead/internal/tokenizer"
)

// StreamDecoder turns generated tokens into text pieces, holding back the
// bytes of an unfinished character.
type StreamDecoder interface {
	Add(id int32) string
	Flush() string
}

// streamDecoderSource is implemented by tokenizers with their own stream
// decoder; others get the window decoder of detok.go built on Decode.
type streamDecoderSource interface {
	NewStreamDecoder() StreamDecoder
}

func (s *Server) newDecoder() StreamDecoder {
	if src, ok := s.tok.(streamDecoderSource); ok {
		return src.NewStreamDecoder()
	}
	return newStreamDecoder(s.tok.Decode)
}

// WrapTokenizer adapts the model's tokenizer to the server's Tokenizer:
// it streams with the tokenizer's own Decoder (which keeps the leading
// space of a first SentencePiece token, as continuing text must) and
// supplies Piece for logprobs.
func WrapTokenizer(t *tokenizer.Tokenizer) Tokenizer { return tokenizerAdapter{t} }

type tokenizerAdapter struct{ *tokenizer.Tokenizer }

var (
	_ Tokenizer           = tokenizerAdapter{}
	_ streamDecoderSource = tokenizerAdapter{}
	_ vocabSizer          = tokenizerAdapter{}
)

func (a tokenizerAdapter) NewStreamDecoder() StreamDecoder { return a.NewDecoder() }

// Piece is the text one token prints when it continues other text (so a
// SentencePiece "▁Paris" is " Paris"), for logprobs. Bytes of a partial
// character are returned as they are.
func (a tokenizerAdapter) Piece(id int32) []byte {
	if p, ok := any(a.Tokenizer).(interface{ Piece(int32) []byte }); ok {
		return p.Piece(id)
	}
	// Decode drops the SentencePiece space only from the first shown
	// token, so decode after a token that prints a known text.
	const anchor = "a"
	if aid, ok := a.TokenID(anchor); ok {
		return []byte(a.Decode([]int32{aid, id})[len(anchor):])
	}
	return []byte(a.Decode([]int32{id}))
}
