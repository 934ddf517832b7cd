package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// buildPieces precomputes each token's bytes, all in one backing array,
// and whether Decode shows the token.
func (t *Tokenizer) buildPieces() {
	size := 0
	for _, s := range t.tokens {
		size += len(s)
	}
	arena := make([]byte, 0, size)
	t.pieces = make([][]byte, len(t.tokens))
	t.shown = make([]bool, len(t.tokens))
	for id, text := range t.tokens {
		ty := t.types[id]
		t.shown[id] = ty == typeNormal || ty == typeByte || ty == typeUserDefined
		start := len(arena)
		switch {
		case ty == typeByte && t.kind == kindSPM:
			if b, ok := parseByteToken(text); ok {
				arena = append(arena, b)
			} else {
				arena = append(arena, text...)
			}
		case ty == typeNormal && (t.kind == kindSPM || t.kind == kindWPM):
			for len(text) > 0 {
				i := strings.Index(text, "\u2581")
				if i < 0 {
					arena = append(arena, text...)
					break
				}
				arena = append(append(arena, text[:i]...), ' ')
				text = text[i+len("\u2581"):]
			}
		case ty == typeNormal && t.kind == kindBPE:
			arena = appendByteLevelDecoded(arena, text)
		default:
			arena = append(arena, text...)
		}
		t.pieces[id] = arena[start:len(arena):len(arena)]
	}
}

// parseByteToken reads "<0xAB>".
func parseByteToken(s string) (byte, bool) {
	if len(s) != 6 || s[:3] != "<0x" || s[5] != '>' {
		return 0, false
	}
	hex := func(c byte) (byte, bool) {
		switch {
		case c >= '0' && c <= '9':
			return c - '0', true
		case c >= 'A' && c <= 'F':
			return c - 'A' + 10, true
		case c >= 'a' && c <= 'f':
			return c - 'a' + 10, true
		}
		return 0, false
	}
	hi, ok1 := hex(s[3])
	lo, ok2 := hex(s[4])
	return hi<<4 | lo, ok1 && ok2
}

// Decode turns a whole sequence back into text. Control, unknown, unused
// and untyped tokens print nothing, as in llama.cpp. For SentencePiece (and
// WordPiece) vocabularies the space Encode prepended is dropped from the
// first token after an optional BOS, so Decode(Encode(s)) == s. Bytes are
// returned as the tokens spell them: a sequence cut inside a character
// yields invalid UTF-8 (use a Decoder to stream).
func (t *Tokenizer) Decode(ids []int32) string {
	var b []byte
	first := true
	for _, id := range ids {
		b, first = t.appendShown(b, id, first)
	}
	return string(b)
}

// appendShown appends what id prints; first tracks whether the SentencePiece
// leading space is still to be dropped.
func (t *Tokenizer) appendShown(b []byte, id int32, first bool) ([]byte, bool) {
	if id < 0 || int(id) >= len(t.pieces) {
		return b, first
	}
	if !t.shown[id] {
		return b, first && id == t.bos
	}
	p := t.pieces[id]
	if first && (t.kind == kindSPM && t.addSpacePrefix || t.kind == kindWPM) && len(p) > 0 && p[0] == ' ' {
		p = p[1:]
	}
	return append(b, p...), false
}

// Decoder turns a stream of generated tokens into text, holding back the
// bytes of a character until its last byte arrives. Not safe for
// concurrent use.
type Decoder struct {
	t       *Tokenizer
	pending []byte // bytes of an incomplete character
}

// NewDecoder starts a stream of generated tokens. Generated text continues
// the prompt, so unlike Decode it keeps the leading space of the first
// SentencePiece token ("▁Paris" after "The capital of France is" streams
// " Paris").
func (t *Tokenizer) NewDecoder() *Decoder { return &Decoder{t: t} }

// Add feeds one token and returns the text it completes: "" while a
// multi-byte character is still pending. Bytes that can never form a valid
// character come out as U+FFFD, one per byte.
func (d *Decoder) Add(id int32) string {
	d.pending, _ = d.t.appendShown(d.pending, id, false)
	keep := incompleteTail(d.pending)
	out := validText(d.pending[:len(d.pending)-keep])
	d.pending = append(d.pending[:0], d.pending[len(d.pending)-keep:]...)
	return out
}

// Flush returns whatever is still pending (an incomplete character becomes
// U+FFFD) and resets the decoder for the next chunk of the same stream.
func (d *Decoder) Flush() string {
	out := validText(d.pending)
	d.pending = d.pending[:0]
	return out
}

// incompleteTail is how many bytes at the end of b are the start of a
// UTF-8 character whose remaining bytes have not arrived yet.
func incompleteTail(b []byte) int {
	for k := 1; k <= 3 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < 0x80 {
			return 0 // ASCII: nothing pending
		}
		if c >= 0xC0 { // a lead byte: pending if its sequence is longer than what we have
			if utf8Len(c) > k && !utf8.FullRune(b[len(b)-k:]) {
				return k
			}
			return 0
		}
	}
	return 0
}

// validText converts b to a string, replacing each invalid byte by U+FFFD.
func validText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(b[:n])
		}
		b = b[n:]
	}
	return sb.String()
}
