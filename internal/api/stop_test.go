package api

import (
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
)

func TestStopMatcherHoldsBackPartialStopAcrossPieces(t *testing.T) {
	cases := []struct {
		name   string
		stops  []string
		pieces []string
		want   []string // output per piece
		final  string   // text after the stop or at the end
	}{
		{"no stops passes through", nil, []string{"ab", "c"}, []string{"ab", "c"}, "abc"},
		{"partial prefix held then released", []string{"END"}, []string{"xE", "N", "d"}, []string{"x", "", "ENd"}, "xENd"},
		{"stop split over three pieces", []string{"END"}, []string{"aE", "N", "Dzz"}, []string{"a", "", ""}, "a"},
		{"earliest of several stops wins", []string{"cd", "b"}, []string{"abcd"}, []string{"a"}, "a"},
		{"stop completing first wins over one starting earlier", []string{"abcd", "bc"}, []string{"abcd"}, []string{"a"}, "a"},
		{"of two completing together the longer wins", []string{"b", "ab"}, []string{"xab"}, []string{"x"}, "x"},
		{"stop inside one piece", []string{"\n\n"}, []string{"line\n\nnext"}, []string{"line"}, "line"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newStopMatcher(c.stops)
			var all strings.Builder
			stopped := false
			for i, p := range c.pieces {
				out, s := m.Feed(p)
				if out != c.want[i] {
					t.Errorf("piece %d %q: out %q, want %q", i, p, out, c.want[i])
				}
				all.WriteString(out)
				stopped = stopped || s
			}
			if !stopped {
				all.WriteString(m.Flush())
			}
			if all.String() != c.final {
				t.Errorf("total %q, want %q", all.String(), c.final)
			}
		})
	}
}

// Whatever the split, the streamed text is the generated text cut at the
// first stop string, and every prefix streamed is a prefix of that result:
// nothing is ever sent that later turns out to be part of a stop string.
func TestStopMatcherStreamsOnlyPrefixesOfTheFinalText(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		alphabet := rapid.SampledFrom([]string{"a", "b", "c", "é", "\n"})
		word := func(label string, minLen int) string {
			parts := rapid.SliceOfN(alphabet, minLen, 6).Draw(t, label)
			return strings.Join(parts, "")
		}
		text := word("text", 0) + word("text2", 0)
		stops := []string{word("stop1", 1)}
		if rapid.Bool().Draw(t, "twoStops") {
			stops = append(stops, word("stop2", 1))
		}
		want := firstStopCut(text, stops)
		m := newStopMatcher(stops)
		var got strings.Builder
		rest := text
		stopped := false
		for len(rest) > 0 && !stopped {
			n := rapid.IntRange(1, len(rest)).Draw(t, "cut")
			var out string
			out, stopped = m.Feed(rest[:n])
			rest = rest[n:]
			got.WriteString(out)
			if !strings.HasPrefix(want, got.String()) {
				t.Fatalf("streamed %q is not a prefix of the final %q (stops %q)", got.String(), want, stops)
			}
		}
		if !stopped {
			got.WriteString(m.Flush())
		}
		if got.String() != want {
			t.Fatalf("got %q, want %q (text %q stops %q)", got.String(), want, text, stops)
		}
	})
}

// firstStopCut is the reference: grow the text a byte at a time and cut
// before the first stop string that appears (the longest if several end there).
func firstStopCut(text string, stops []string) string {
	for e := 1; e <= len(text); e++ {
		cut := -1
		for _, s := range stops {
			if strings.HasSuffix(text[:e], s) && (cut < 0 || e-len(s) < cut) {
				cut = e - len(s)
			}
		}
		if cut >= 0 {
			return text[:cut]
		}
	}
	return text
}

// Decoding byte tokens one at a time yields exactly the text, and every
// piece is valid UTF-8 even though characters span several tokens.
func TestStreamDecoderEmitsWholeCharacters(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := rapid.StringOf(rapid.RuneFrom([]rune("aZ é€😀\n"))).Draw(t, "text")
		tok := apitest.ByteTokenizer{}
		d := newStreamDecoder(tok.Decode)
		var got strings.Builder
		for _, id := range tok.Encode(text, false, false) {
			piece := d.Add(id)
			if !utf8.ValidString(piece) {
				t.Fatalf("piece %q is not valid UTF-8", piece)
			}
			got.WriteString(piece)
		}
		got.WriteString(d.Flush())
		if got.String() != text {
			t.Fatalf("decoded %q, want %q", got.String(), text)
		}
	})
}

// spaceTokenizer imitates SentencePiece: a token decodes with a leading
// space, which Decode strips from the first token of its input.
type spaceTokenizer struct{}

func (spaceTokenizer) Decode(ids []int32) string {
	var sb strings.Builder
	for _, id := range ids {
		sb.WriteString(" w")
		sb.WriteByte(byte('0' + id))
	}
	return strings.TrimPrefix(sb.String(), " ")
}

func TestStreamDecoderKeepsSpacesThatDecodeStripsAtTheStart(t *testing.T) {
	d := newStreamDecoder(spaceTokenizer{}.Decode)
	var got strings.Builder
	for _, id := range []int32{1, 2, 3} {
		got.WriteString(d.Add(id))
	}
	got.WriteString(d.Flush())
	if got.String() != "w1 w2 w3" {
		t.Fatalf("got %q, want %q", got.String(), "w1 w2 w3")
	}
}
