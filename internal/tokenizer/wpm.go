package tokenizer

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// wpmModel is WordPiece (BERT) as llama.cpp runs it: text is lowercased,
// accents are stripped (each character replaced by the first character of
// its canonical decomposition), control characters dropped, and split on
// whitespace, punctuation, ASCII symbols and CJK ideographs. Each word,
// prefixed with "▁" (the GGUF spelling of a word start), is covered greedily
// by the longest matching tokens; a word that cannot be covered becomes
// the unknown token.
type wpmModel struct {
	t      *Tokenizer
	maxLen int // longest token, in bytes
}

func newWPM(t *Tokenizer) *wpmModel {
	m := &wpmModel{t: t}
	for _, s := range t.tokens {
		m.maxLen = max(m.maxLen, len(s))
	}
	return m
}

func (m *wpmModel) encode(out []int32, text string) []int32 {
	for _, word := range wpmWords(text) {
		w := "\u2581" + word
		start := len(out)
		for i := 0; i < len(w); {
			j := min(len(w), i+m.maxLen)
			for ; j > i; j-- {
				if id, ok := m.t.ids[w[i:j]]; ok {
					out = append(out, id)
					break
				}
			}
			if j == i { // no token covers position i: the whole word is unknown
				out = out[:start]
				break
			}
			i = j
		}
		if len(out) == start && m.t.unk >= 0 {
			out = append(out, m.t.unk)
		}
	}
	return out
}

// wpmWords normalizes text and splits it into words.
func wpmWords(text string) []string {
	var words []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			words = append(words, cur.String())
			cur.Reset()
		}
	}
	for _, r := range text {
		r = nfdFirst(r)
		switch {
		case isSpace(r):
			flush()
			continue
		case r == 0 || r == utf8.RuneError || unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs):
			continue
		}
		lower := unicode.ToLower(r)
		if isP(r) || r < 0x7F && unicode.IsSymbol(r) || isCJKIdeograph(r) {
			flush()
			words = append(words, string(lower))
			continue
		}
		cur.WriteRune(lower)
	}
	flush()
	return words
}

// nfdFirst is the first character of r's canonical decomposition.
func nfdFirst(r rune) rune {
	i := sort.Search(len(nfdBase), func(i int) bool { return nfdBase[i][1] >= r })
	if i < len(nfdBase) && nfdBase[i][0] <= r {
		return nfdBase[i][2]
	}
	return r
}

// isCJKIdeograph is BERT's notion of a Chinese character, each of which is a
// word on its own.
func isCJKIdeograph(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FFF || r >= 0x3400 && r <= 0x4DBF ||
		r >= 0x20000 && r <= 0x2A6DF || r >= 0x2A700 && r <= 0x2B73F ||
		r >= 0x2B740 && r <= 0x2B81F || r >= 0x2B920 && r <= 0x2CEAF ||
		r >= 0xF900 && r <= 0xFAFF || r >= 0x2F800 && r <= 0x2FA1F
}
