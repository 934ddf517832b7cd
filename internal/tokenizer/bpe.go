package tokenizer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// bpeModel is byte-level BPE as llama.cpp runs it. Strings are interned to
// int32 ids (vocabulary ids first, then strings that occur only in merges),
// so a merge is a map lookup on a pair of ints rather than on two strings.
type bpeModel struct {
	t            *Tokenizer
	preName      string
	pre          preTokenizer
	ignoreMerges bool // a word that is itself a token skips merging (Llama 3)

	nVocab  int32
	extra   map[string]int32 // interned non-token strings, ids from nVocab on
	merges  map[uint64]int32 // (left id, right id) → rank
	byteSym [256]int32       // interned id of each byte's spelling, -1 if unknown
}

func (t *Tokenizer) loadBPE(f *gguf.File, pre string) error {
	merges, err := f.Strings("tokenizer.ggml.merges")
	if errors.Is(err, gguf.ErrNoKey) {
		return fmt.Errorf("%w: gpt2 vocabulary without tokenizer.ggml.merges", ErrInvalid)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	m := &bpeModel{t: t, preName: pre, nVocab: int32(len(t.tokens)), extra: map[string]int32{},
		merges: make(map[uint64]int32, len(merges))}
	var ok bool
	if m.pre, m.ignoreMerges, t.addBOS, ok = preTokenizerFor(pre); !ok {
		return fmt.Errorf("%w: pre-tokenizer %q (tokenizer.ggml.pre)", ErrUnsupported, pre)
	}
	intern := func(s string) int32 {
		if id, ok := t.ids[s]; ok {
			return id
		}
		if id, ok := m.extra[s]; ok {
			return id
		}
		id := m.nVocab + int32(len(m.extra))
		m.extra[s] = id
		return id
	}
	// Walk from the worst rank to the best so that, for a pair listed twice,
	// the best-ranked (first) line is the one left in the map.
	for rank := len(merges) - 1; rank >= 0; rank-- {
		s := merges[rank]
		i := -1
		if len(s) > 1 {
			i = strings.IndexByte(s[1:], ' ')
		}
		if i < 0 {
			continue // llama.cpp stores such a line as an unusable ("", "") pair
		}
		a, b := s[:i+1], s[i+2:]
		m.merges[uint64(uint32(intern(a)))<<32|uint64(uint32(intern(b)))] = int32(rank)
	}
	for b := range m.byteSym {
		m.byteSym[b] = -1
		if id, ok := t.ids[byteString[b]]; ok {
			m.byteSym[b] = id
		} else if id, ok := m.extra[byteString[b]]; ok {
			m.byteSym[b] = id
		}
	}
	t.bpe = m
	return nil
}

// lookup is the interned id of a spelling, -1 if it is neither a token nor
// part of any merge (then it can take part in no further merge).
func (m *bpeModel) lookup(spelling []byte) int32 {
	if id, ok := m.t.ids[string(spelling)]; ok {
		return id
	}
	if id, ok := m.extra[string(spelling)]; ok {
		return id
	}
	return -1
}

// bpeSym is a run of a word's bytes and the interned id of its spelling.
type bpeSym struct {
	start, n   int
	prev, next int
	id         int32
}

type bpePair struct {
	left, right int
	size        int
	rank        int32
}

// bpeBefore orders the queue: lowest merge rank first, then leftmost.
func bpeBefore(a, b bpePair) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.left < b.left)
}

// encode appends the tokens of one raw fragment to out.
func (m *bpeModel) encode(out []int32, text string) []int32 {
	var (
		syms  []bpeSym
		q     = pairQueue[bpePair]{before: bpeBefore}
		spell []byte
	)
	for _, w := range m.pre.split(text, nil) {
		word := text[w[0]:w[1]]
		if m.ignoreMerges {
			spell = appendByteLevel(spell[:0], word)
			if id, ok := m.t.ids[string(spell)]; ok {
				out = append(out, id)
				continue
			}
		}
		syms = syms[:0]
		for i := 0; i < len(word); i++ {
			syms = append(syms, bpeSym{start: i, n: 1, prev: i - 1, next: i + 1, id: m.byteSym[word[i]]})
		}
		syms[len(syms)-1].next = -1
		q.items = q.items[:0]
		try := func(l, r int) {
			if l < 0 || r < 0 || syms[l].id < 0 || syms[r].id < 0 {
				return
			}
			rank, ok := m.merges[uint64(uint32(syms[l].id))<<32|uint64(uint32(syms[r].id))]
			if !ok {
				return
			}
			q.push(bpePair{left: l, right: r, size: syms[l].n + syms[r].n, rank: rank})
		}
		for i := 1; i < len(syms); i++ {
			try(i-1, i)
		}
		for q.len() > 0 {
			p := q.pop()
			l, r := &syms[p.left], &syms[p.right]
			if l.n == 0 || r.n == 0 || l.n+r.n != p.size {
				continue
			}
			l.n += r.n
			spell = appendByteLevel(spell[:0], word[l.start:l.start+l.n])
			l.id = m.lookup(spell)
			r.n = 0
			l.next = r.next
			if r.next >= 0 {
				syms[r.next].prev = p.left
			}
			try(l.prev, p.left)
			try(p.left, l.next)
		}
		for i := 0; i >= 0; i = syms[i].next {
			s := syms[i]
			if s.id >= 0 && s.id < m.nVocab {
				out = append(out, s.id)
				continue
			}
			// Not a token: llama.cpp emits whichever single bytes of the
			// spelling happen to be tokens.
			spell = appendByteLevel(spell[:0], word[s.start:s.start+s.n])
			for _, c := range spell {
				if id, ok := m.t.ids[string([]byte{c})]; ok {
					out = append(out, id)
				}
			}
		}
	}
	return out
}
