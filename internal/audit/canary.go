package audit

import (
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
)

// naturalAlphabet avoids look-alike characters (0/O, 1/I, 5/S, 2/Z, 8/B)
// so a model that retrieves the code has no excuse to alter it.
const naturalAlphabet = "ACDEFGHJKLMNPQRTUVWXY34679"

// naturalGroups and naturalGroupLen shape a code such as QX7-49K-T3M-6RD.
const (
	naturalGroups   = 4
	naturalGroupLen = 3
)

// canaryBook issues canaries that are distinct from each other: no two
// share a consecutive pair of words when the vocabulary allows it, and
// words are drawn least-used first so that many words belong to a single
// canary. Both properties make a fragment in the wrong output attributable.
type canaryBook struct {
	mu      sync.Mutex
	style   Style
	vocab   []string
	rng     *rand.Rand
	uses    map[string]int
	bigrams map[[2]string]bool
}

func newCanaryBook(style Style, vocab []string, rng *rand.Rand) *canaryBook {
	return &canaryBook{style: style, vocab: vocab, rng: rng, uses: map[string]int{}, bigrams: map[[2]string]bool{}}
}

// issue returns a fresh canary as its words (copy style) or code groups
// (natural style).
func (b *canaryBook) issue() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var words []string
	for try := 0; try < 32; try++ {
		if b.style == StyleNatural {
			words = b.naturalCode()
		} else {
			words = b.copyWords()
		}
		if !b.sharesBigram(words) {
			break
		}
	}
	for i, w := range words {
		b.uses[w]++
		if i > 0 {
			b.bigrams[[2]string{words[i-1], w}] = true
		}
	}
	return words
}

func (b *canaryBook) sharesBigram(words []string) bool {
	for i := 1; i < len(words); i++ {
		if b.bigrams[[2]string{words[i-1], words[i]}] {
			return true
		}
	}
	return false
}

// copyWords picks copyCanaryLen distinct words, least used first, in a
// random order.
func (b *canaryBook) copyWords() []string {
	order := b.rng.Perm(len(b.vocab))
	slices.SortStableFunc(order, func(x, y int) int { return b.uses[b.vocab[x]] - b.uses[b.vocab[y]] })
	words := make([]string, copyCanaryLen)
	for i := range words {
		words[i] = b.vocab[order[i]]
	}
	b.rng.Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
	return words
}

// naturalCode draws groups that each hold a letter and a digit, so no
// group is an English word that a model might produce on its own.
func (b *canaryBook) naturalCode() []string {
	groups := make([]string, naturalGroups)
	for i := range groups {
		for {
			var g [naturalGroupLen]byte
			for j := range g {
				g[j] = naturalAlphabet[b.rng.IntN(len(naturalAlphabet))]
			}
			s := string(g[:])
			if strings.ContainsAny(s, "34679") && strings.Trim(s, "34679") != "" {
				groups[i] = s
				break
			}
		}
	}
	return groups
}

// render writes a canary as it appears in a prompt.
func render(style Style, words []string) string {
	if style == StyleNatural {
		return strings.Join(words, "-")
	}
	return strings.Join(words, " ")
}

// outputFields splits model output into the units canaries are made of:
// whitespace-separated words for copy style, runs of letters and digits
// for natural style (so "QX7-49K" and "QX7 49K" both match).
func outputFields(style Style, text string) []string {
	if style == StyleNatural {
		return strings.FieldsFunc(text, func(r rune) bool {
			return !('A' <= r && r <= 'Z' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9')
		})
	}
	return strings.Fields(text)
}

// containsRun reports whether seq occurs contiguously in fields.
func containsRun(fields, seq []string) bool {
	if len(seq) == 0 {
		return true
	}
	for i := 0; i+len(seq) <= len(fields); i++ {
		if slices.Equal(fields[i:i+len(seq)], seq) {
			return true
		}
	}
	return false
}
