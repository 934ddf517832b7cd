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

// WrapTokenizer adapts the model's tokenizer to the server's Tokenizer so
// that it streams with the tokenizer's own Decoder, which keeps the leading
// space of a first SentencePiece token, as continuing text must. NewServer
// applies it to a *tokenizer.Tokenizer by itself.
func WrapTokenizer(t *tokenizer.Tokenizer) Tokenizer { return tokenizerAdapter{t} }

type tokenizerAdapter struct{ *tokenizer.Tokenizer }

var (
	_ Tokenizer           = tokenizerAdapter{}
	_ streamDecoderSource = tokenizerAdapter{}
	_ vocabSizer          = tokenizerAdapter{}
)

func (a tokenizerAdapter) NewStreamDecoder() StreamDecoder { return a.NewDecoder() }
