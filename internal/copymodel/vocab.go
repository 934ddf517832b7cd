package copymodel

import "fmt"

// Token types as SentencePiece and GGUF number them.
const (
	typeNormal  int32 = 1
	typeUnknown int32 = 2
	typeControl int32 = 3
	typeByte    int32 = 6
)

// Special token ids.
const (
	unkID = 0
	bosID = 1
	eosID = 2
)

// wordSpace is SentencePiece's visible space, which starts every word piece.
const wordSpace = "▁"

// Letters of the generated words: words alternate consonant and vowel, so
// "▁bako", "▁tisum" and the like are all pronounceable.
const (
	consonants = "bdfghklmnprstvz"
	vowels     = "aeiou"
)

// vocab is the model's vocabulary: pieces with their SentencePiece scores
// and types, indexed by token id.
type vocab struct {
	pieces []string
	scores []float32
	types  []int32
	// firstWord is the id of the first word piece ("▁" plus letters).
	firstWord int
}

// MinVocab is the smallest vocabulary Build accepts: the special, byte and
// letter tokens plus the words of AuditWords.
const MinVocab = 512

// newVocab builds a vocabulary of exactly n tokens: <unk>, <s>, </s>, the
// 256 byte-fallback tokens, "▁" and the letters, then words.
//
// The words form a prefix-closed tree grown breadth first: "▁b", then
// "▁ba", then "▁bab", then "▁baba", … (one letter more per level, consonant
// and vowel alternating), until the vocabulary is full. SentencePiece BPE
// merges an adjacent pair only when the concatenation is a vocabulary
// piece. No piece holds "▁" except at its start, and no piece of two or more
// characters lacks it, so in " bako" the only pair that can ever merge is
// the growing "▁…" prefix with its next letter: the word assembles left to
// right through its prefixes, all of which exist, and ends as one token.
// Words in a space-separated text never merge with each other.
func newVocab(n int) (*vocab, error) {
	if n < MinVocab {
		return nil, fmt.Errorf("copymodel: vocabulary of %d tokens is below the minimum %d", n, MinVocab)
	}
	v := &vocab{}
	add := func(piece string, t int32) {
		v.pieces = append(v.pieces, piece)
		v.types = append(v.types, t)
		// Earlier pieces score higher, as in SentencePiece models; merge
		// order does not depend on it (see above).
		v.scores = append(v.scores, -float32(len(v.pieces)-1))
	}
	add("<unk>", typeUnknown)
	add("<s>", typeControl)
	add("</s>", typeControl)
	for b := 0; b < 256; b++ {
		add(fmt.Sprintf("<0x%02X>", b), typeByte)
	}
	add(wordSpace, typeNormal)
	for c := 'a'; c <= 'z'; c++ {
		add(string(c), typeNormal)
	}
	v.firstWord = len(v.pieces)
	level := []string{wordSpace}
	for len(v.pieces) < n {
		letters := consonants
		if last := level[0][len(level[0])-1]; isConsonant(last) {
			letters = vowels
		}
		var next []string
		for _, parent := range level {
			for i := 0; i < len(letters) && len(v.pieces) < n; i++ {
				w := parent + letters[i:i+1]
				add(w, typeNormal)
				next = append(next, w)
			}
		}
		level = next
	}
	return v, nil
}

func isConsonant(c byte) bool {
	for i := 0; i < len(consonants); i++ {
		if consonants[i] == c {
			return true
		}
	}
	return false
}

// copyable reports whether token id has a code the model can copy and emit:
// every token but <unk>, <s> and </s>.
func (v *vocab) copyable(id int) bool {
	return v.types[id] != typeControl && v.types[id] != typeUnknown
}
