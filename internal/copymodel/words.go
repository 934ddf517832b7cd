package copymodel

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Errors of Prompt.
var (
	// ErrPromptShape: the canary does not fit the requested length and
	// position.
	ErrPromptShape = errors.New("copymodel: prompt shape impossible")
	// ErrNotAWord: a canary word is not a single-token word of every copy
	// model vocabulary, or is the key.
	ErrNotAWord = errors.New("copymodel: not a copy-model word")
)

// Words are whole words of the copy model's vocabulary for building audit
// prompts. Each word is one token when preceded by a space (" "+w), and the
// three sets are disjoint. They exist in every vocabulary Build accepts.
type Words struct {
	Key    string
	Canary []string
	Filler []string
}

// Sizes of the audit word sets.
const (
	numCanary = 100
	numFiller = 110
)

// commonWords are the words of two letters or more (the one-letter "▁b"
// are not words) of the smallest vocabulary, hence of every vocabulary.
var commonWords = sync.OnceValue(func() []string {
	v, err := newVocab(MinVocab)
	if err != nil {
		panic(err) // MinVocab is a constant the vocabulary is built for
	}
	var words []string
	for id := v.firstWord; id < len(v.pieces); id++ {
		if w := strings.TrimPrefix(v.pieces[id], wordSpace); len(w) >= 2 {
			words = append(words, w)
		}
	}
	return words
})

var auditWords = sync.OnceValue(func() Words {
	// Shuffled with a fixed seed so canary and filler mix both lengths.
	pool := slices.Clone(commonWords())
	rng := splitMix(0xa0d1_7000)
	for i := len(pool) - 1; i > 0; i-- {
		j := int(rng.next() % uint64(i+1))
		pool[i], pool[j] = pool[j], pool[i]
	}
	return Words{
		Key:    pool[0],
		Canary: pool[1 : 1+numCanary : 1+numCanary],
		Filler: pool[1+numCanary : 1+numCanary+numFiller : 1+numCanary+numFiller],
	}
})

var sortedWords = sync.OnceValue(func() []string {
	w := slices.Clone(commonWords())
	slices.Sort(w)
	return w
})

// AuditWords returns the key, canary and filler words of the audit. The
// caller must not modify the slices.
func AuditWords() Words { return auditWords() }

// Prompt returns an audit prompt that tokenizes (with BOS) to exactly
// length tokens: random filler words, the key at token position pos
// followed by the canary words, more filler, and the key again as the last
// token. Greedy decoding of the copy model then yields the canary. seed
// picks the filler (from AuditWords().Filler). Canary words must be words of
// every copy-model vocabulary other than the key, as AuditWords().Canary
// are; they should also be distinct and not fillers, or the copy may
// wander.
func Prompt(canary []string, pos, length int, seed uint64) (string, error) {
	words := AuditWords()
	for _, c := range canary {
		if _, ok := slices.BinarySearch(sortedWords(), c); !ok || c == words.Key {
			return "", fmt.Errorf("%w: %q", ErrNotAWord, c)
		}
	}
	if pos < 1 || pos+1+len(canary) > length-1 {
		return "", fmt.Errorf("%w: key at %d with %d canary words does not fit before the final key at %d",
			ErrPromptShape, pos, len(canary), length-1)
	}
	rng := splitMix(seed)
	var b strings.Builder
	put := func(w string) { b.WriteByte(' '); b.WriteString(w) }
	filler := func() { put(words.Filler[rng.next()%uint64(len(words.Filler))]) }
	for i := 1; i < pos; i++ {
		filler()
	}
	put(words.Key)
	for _, c := range canary {
		put(c)
	}
	for i := pos + 1 + len(canary); i < length-1; i++ {
		filler()
	}
	put(words.Key)
	return b.String(), nil
}
