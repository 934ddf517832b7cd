package api

import (
	"strings"
	"unicode/utf8"
)

// streamDecoder turns a stream of token ids into text pieces. Tokenizers
// decode a token differently depending on its neighbours (SentencePiece's
// leading space, byte tokens forming one UTF-8 character), so it decodes a
// short window of recent tokens and emits the difference, holding text back
// while it ends in an incomplete character.
type streamDecoder struct {
	decode func([]int32) string
	ids    []int32
	prefix int // start of the window
	read   int // ids[prefix:read] have been emitted
}

func newStreamDecoder(decode func([]int32) string) *streamDecoder {
	return &streamDecoder{decode: decode}
}

// Add appends a token and returns the new text it completes, maybe "".
func (d *streamDecoder) Add(id int32) string {
	d.ids = append(d.ids, id)
	return d.step(false)
}

// Flush returns text still held back at the end of the stream.
func (d *streamDecoder) Flush() string { return d.step(true) }

func (d *streamDecoder) step(final bool) string {
	if d.read == len(d.ids) {
		return ""
	}
	before := d.decode(d.ids[d.prefix:d.read])
	after := d.decode(d.ids[d.prefix:])
	if !final && (!strings.HasPrefix(after, before) || endsIncomplete(after)) {
		return ""
	}
	var out string
	if strings.HasPrefix(after, before) {
		out = after[len(before):]
	} else {
		out = after
	}
	d.prefix, d.read = d.read, len(d.ids)
	if len(d.ids) > 1024 { // keep the buffer bounded on long generations
		d.ids = append(d.ids[:0:0], d.ids[d.prefix:]...)
		d.read -= d.prefix
		d.prefix = 0
	}
	return out
}

func endsIncomplete(s string) bool {
	// A lone byte of a split character, or the replacement character some
	// tokenizers put in its place.
	r, _ := utf8.DecodeLastRuneInString(s)
	return len(s) > 0 && r == utf8.RuneError
}
