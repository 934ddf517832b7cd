package tokenizer

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

// byteLevelVocabs are the vocabularies whose Decode(Encode(s)) must be s
// exactly for every valid UTF-8 s.
var byteLevelVocabs = []string{"gpt-2", "llama-bpe", "qwen2"}

// spmRoundTrips reports whether s is expected to survive an SPM round trip:
// "▁" reads back as a space, and text after a user-defined token gets the
// space prefix llama.cpp adds after every special token.
func spmRoundTrips(tok *Tokenizer, s string) bool {
	if strings.Contains(s, "\u2581") {
		return false
	}
	for _, id := range tok.specials {
		if tok.types[id] == typeUserDefined && strings.Contains(s, tok.tokens[id]) {
			return false
		}
	}
	return true
}

// fataler is what checkRoundTrip needs of *testing.T and *rapid.T.
type fataler interface {
	Fatalf(format string, args ...any)
}

// checkRoundTrip asserts the Encode/Decode and streaming invariants for s.
func checkRoundTrip(t fataler, tok *Tokenizer, s string) {
	for _, addSpecial := range []bool{false, true} {
		for _, parse := range []bool{false, true} {
			ids := tok.Encode(s, addSpecial, parse)
			for _, id := range ids {
				if id < 0 || int(id) >= tok.VocabSize() {
					t.Fatalf("Encode(%q) produced id %d outside the vocabulary", s, id)
				}
			}
			_ = tok.Decode(ids)
		}
	}
	if !utf8.ValidString(s) {
		return
	}
	ids := tok.Encode(s, false, false)
	if tok.kind == kindBPE || spmRoundTrips(tok, s) {
		if got := tok.Decode(ids); got != s {
			t.Fatalf("Decode(Encode(%q)) = %q (ids %v)", s, got, ids)
		}
		if tok.kind == kindSPM || tok.addBOS {
			withBOS := tok.Encode(s, true, false)
			if got := tok.Decode(withBOS); got != s {
				t.Fatalf("Decode(Encode(%q, addSpecial)) = %q (ids %v)", s, got, withBOS)
			}
		}
	}
	// Streaming yields valid UTF-8 at every step and, joined, the same text.
	d := tok.NewDecoder()
	var sb strings.Builder
	for _, id := range ids {
		out := d.Add(id)
		if !utf8.ValidString(out) {
			t.Fatalf("Decoder.Add emitted invalid UTF-8 %q for %q", out, s)
		}
		sb.WriteString(out)
	}
	sb.WriteString(d.Flush())
	if want := rawText(tok, ids); sb.String() != want {
		t.Fatalf("streamed %q, want %q", sb.String(), want)
	}
}

// rawText is the shown pieces of ids joined, without Decode's
// leading-space rule.
func rawText(tok *Tokenizer, ids []int32) string {
	var b []byte
	for _, id := range ids {
		if tok.shown[id] {
			b = append(b, tok.pieces[id]...)
		}
	}
	return string(b)
}

// textGen draws strings mixing ASCII, whitespace, accents, CJK, emoji
// (multi-byte and joined), digits and apostrophes: the classes the
// pre-tokenizers treat differently.
func textGen() *rapid.Generator[string] {
	parts := []string{"a", "Z", "hello", " ", "  ", "\n", "\r\n", "\t", "é", "ß", "Ω", "中文", "한", "🚀", "👩‍💻",
		"1", "234", "'s", "'LL", "!", "...", "$", "<", "|", "\u00a0", "\u3000", "\u0301", "x\u200d"}
	return rapid.Custom(func(t *rapid.T) string {
		n := rapid.IntRange(0, 12).Draw(t, "n")
		var sb strings.Builder
		for range n {
			sb.WriteString(rapid.SampledFrom(parts).Draw(t, "part"))
		}
		return sb.String()
	})
}

func TestRoundTripHandMadeSPM(t *testing.T) {
	tok := newSmallSPM(t)
	rapid.Check(t, func(rt *rapid.T) {
		checkRoundTrip(rt, tok, textGen().Draw(rt, "text"))
	})
}

func TestRoundTripRealVocabularies(t *testing.T) {
	names := append([]string{"llama-spm", "phi-3"}, byteLevelVocabs...)
	if os.Getenv("BULKHEAD_SHORT") == "1" {
		names = []string{"llama-spm", "gpt-2"}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			tok := loadVocab(t, name)
			rapid.Check(t, func(rt *rapid.T) {
				checkRoundTrip(rt, tok, textGen().Draw(rt, "text"))
			})
		})
	}
}

func TestDecoderNeverSplitsACharacter(t *testing.T) {
	tok := newSmallSPM(t)
	rapid.Check(t, func(rt *rapid.T) {
		ids := rapid.SliceOf(rapid.Int32Range(0, int32(tok.VocabSize()-1))).Draw(rt, "ids")
		d := tok.NewDecoder()
		var sb strings.Builder
		for _, id := range ids {
			out := d.Add(id)
			if !utf8.ValidString(out) {
				rt.Fatalf("Add(%d) emitted invalid UTF-8 %q", id, out)
			}
			sb.WriteString(out)
		}
		sb.WriteString(d.Flush())
		if want := validText([]byte(rawText(tok, ids))); sb.String() != want {
			rt.Fatalf("streamed %q, want %q", sb.String(), want)
		}
	})
}

func TestDecoderHoldsBackPartialCharacters(t *testing.T) {
	tok := newSmallSPM(t)
	byteTok := func(b byte) int32 { return 3 + int32(b) }
	d := tok.NewDecoder()
	steps := []struct {
		id   int32
		want string
	}{
		{byteTok(0xF0), ""}, {byteTok(0x9F), ""}, {byteTok(0x9A), ""}, {byteTok(0x80), "🚀"},
		{260, "a"},                            // "a"
		{byteTok(0xC3), ""}, {259, "\uFFFD "}, // a lead byte followed by "▁" can never complete
		{byteTok(0xE2), ""},
	}
	for i, s := range steps {
		if got := d.Add(s.id); got != s.want {
			t.Fatalf("step %d Add(%d) = %q, want %q", i, s.id, got, s.want)
		}
	}
	if got := d.Flush(); got != "\uFFFD" {
		t.Fatalf("Flush = %q, want U+FFFD for the dangling lead byte", got)
	}
	if got := d.Add(260); got != "a" {
		t.Fatalf("after Flush, Add = %q", got)
	}
}

// FuzzEncodeDecode: nothing panics on arbitrary bytes, every id is in the
// vocabulary, valid UTF-8 round-trips (exactly for byte-level BPE, modulo
// the "▁" and after-special-token rules for SentencePiece), and streaming
// never emits half a character.
func FuzzEncodeDecode(f *testing.F) {
	toks := []*Tokenizer{newSmallSPM(f)}
	if _, err := os.Stat(testdataDir); err == nil {
		for _, name := range []string{"llama-spm", "gpt-2"} {
			toks = append(toks, loadVocab(f, name))
		}
		if inp, err := os.ReadFile(filepath.Join(testdataDir, "vocab", "ggml-vocab-gpt-2.gguf.inp")); err == nil {
			for _, s := range strings.Split(string(inp), "\n__ggml_vocab_test__\n") {
				f.Add(s)
			}
		}
	}
	for _, s := range []string{"", " ", "ab", "aKEYb", "<s>x</s>", "\xff\xfe", "\xe2\x96", "🚀 1234", "I'M ok"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range toks {
			checkRoundTrip(t, tok, s)
		}
	})
}

// A Tokenizer is shared by every request of a server: concurrent use must
// give the same ids as sequential use (run with -race to check for races).
func TestConcurrentEncodeDecodeAgree(t *testing.T) {
	tok := newSmallSPM(t)
	texts := []string{"ab abc", "z\né", "aKEYb", "  ab  ", "🚀 1234"}
	want := make([][]int32, len(texts))
	for i, s := range texts {
		want[i] = tok.Encode(s, true, true)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(texts))
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, s := range texts {
				got := tok.Encode(s, true, true)
				if !slices.Equal(got, want[i]) {
					errs <- fmt.Sprintf("Encode(%q) = %v, want %v", s, got, want[i])
				}
				if d := tok.Decode(got); d != tok.Decode(want[i]) {
					errs <- fmt.Sprintf("Decode differs for %q", s)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
