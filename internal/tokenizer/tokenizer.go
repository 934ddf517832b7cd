// Package tokenizer turns text into token ids and back, using the vocabulary
// stored in a GGUF file's tokenizer.ggml.* metadata.
//
// Two vocabulary kinds are supported, matching llama.cpp's behaviour so that
// prompts tokenize to the same ids the model was run with there:
//
//   - "llama": SentencePiece BPE. Merges are driven by the token scores; a
//     space is prepended and spaces become "▁" (U+2581); characters that no
//     token covers fall back to the byte tokens <0x00>…<0xFF>.
//   - "gpt2": byte-level BPE. Text is first split into words by the
//     pre-tokenizer named in tokenizer.ggml.pre (hand-written scanners that
//     reproduce the reference regular expressions), each byte is mapped to a
//     printable character, and merges apply in the order of
//     tokenizer.ggml.merges.
//
// WordPiece ("bert") vocabularies are supported too, for embedding models.
// Unigram ("t5"), RWKV and pre-tokenizers not listed in pretok_table.go are
// refused with ErrUnsupported rather than tokenized approximately.
//
// Control (type 3) and user-defined (type 4) tokens are matched as whole
// strings before any algorithm runs: user-defined tokens always, control
// tokens only when the caller asks to parse special text.
//
// Decoding is byte-exact for byte-level vocabularies (llama.cpp's
// clean-up of spaces before punctuation is not applied); Decoder streams
// text without ever splitting a UTF-8 character.
package tokenizer

import (
	"errors"
	"fmt"
	"slices"
)

// Errors FromGGUF returns; callers branch on them with errors.Is.
var (
	// ErrNoTokenizer means the file carries no tokenizer.ggml.* vocabulary.
	ErrNoTokenizer = errors.New("tokenizer: no tokenizer in GGUF metadata")
	// ErrUnsupported means the vocabulary kind is one this package cannot run.
	ErrUnsupported = errors.New("tokenizer: unsupported tokenizer")
	// ErrInvalid means the vocabulary metadata is malformed.
	ErrInvalid = errors.New("tokenizer: invalid tokenizer metadata")
)

// tokenType is the GGUF token_type value of a token (llama.cpp's
// llama_token_type numbering).
type tokenType uint8

const (
	typeUndefined   tokenType = 0
	typeNormal      tokenType = 1
	typeUnknown     tokenType = 2
	typeControl     tokenType = 3
	typeUserDefined tokenType = 4
	typeUnused      tokenType = 5
	typeByte        tokenType = 6
)

// vocabKind is the tokenization algorithm.
type vocabKind uint8

const (
	kindSPM vocabKind = iota // tokenizer.ggml.model = llama
	kindBPE                  // tokenizer.ggml.model = gpt2
	kindWPM                  // tokenizer.ggml.model = bert
)

// Tokenizer holds one vocabulary. It is immutable after FromGGUF and safe for
// concurrent use.
type Tokenizer struct {
	kind   vocabKind
	tokens []string
	scores []float32
	types  []tokenType
	ids    map[string]int32

	bos, eos, unk, sep     int32
	addBOS, addEOS, addSEP bool
	addSpacePrefix         bool
	eog                    map[int32]bool
	chatTemplate           string

	// specials lists control, user-defined and unknown tokens, longest text
	// first, for whole-string matching; rstrip/lstrip say which of them eat
	// neighbouring whitespace (llama.cpp sets this for a few model families).
	specials []int32
	rstrip   map[int32]bool
	lstrip   map[int32]bool

	// pieces[id] is what the token stands for as bytes (Piece); shown[id]
	// says whether Decode prints it (control and unknown tokens are hidden).
	pieces [][]byte
	shown  []bool

	spm *spmModel
	bpe *bpeModel
	wpm *wpmModel
}

// VocabSize is the number of tokens, including special ones.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// BOS is the beginning-of-sequence token, or -1 if the vocabulary has none.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS is the end-of-sequence token, or -1 if the vocabulary has none.
func (t *Tokenizer) EOS() int32 { return t.eos }

// AddsBOS reports whether Encode with addSpecial prepends BOS.
func (t *Tokenizer) AddsBOS() bool { return t.addBOS && t.bos >= 0 }

// IsEOG reports whether generating id ends generation: EOS, and the
// end-of-turn tokens chat models emit (<|eot_id|>, <|im_end|>, <|end|>, ...).
func (t *Tokenizer) IsEOG(id int32) bool { return t.eog[id] }

// ChatTemplate is tokenizer.chat_template, or "" when the file has none.
func (t *Tokenizer) ChatTemplate() string { return t.chatTemplate }

// TokenID returns the id of the token whose text is exactly piece (the
// vocabulary's own spelling, e.g. "<|im_end|>" or "▁Hello").
func (t *Tokenizer) TokenID(piece string) (int32, bool) {
	id, ok := t.ids[piece]
	return id, ok
}

// TokenText is the vocabulary's spelling of id ("" when out of range).
func (t *Tokenizer) TokenText(id int32) string {
	if id < 0 || int(id) >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// IsControl reports whether id is a control token (BOS, EOS, chat markers).
func (t *Tokenizer) IsControl(id int32) bool {
	return id >= 0 && int(id) < len(t.types) && t.types[id] == typeControl
}

// Piece is the raw bytes token id stands for: byte tokens give their byte,
// SentencePiece "▁" becomes a space, byte-level characters become their
// bytes, and control tokens give their text. Out-of-range ids give nil.
// The result is the caller's to keep or modify.
func (t *Tokenizer) Piece(id int32) []byte {
	if id < 0 || int(id) >= len(t.pieces) {
		return nil
	}
	return slices.Clone(t.pieces[id])
}

func (t *Tokenizer) String() string {
	kind := "llama"
	switch t.kind {
	case kindBPE:
		kind = "gpt2/" + t.bpe.preName
	case kindWPM:
		kind = "bert"
	}
	return fmt.Sprintf("tokenizer(%s, %d tokens)", kind, len(t.tokens))
}
