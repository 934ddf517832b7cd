package tokenizer

import (
	"fmt"
	"strings"
)

// spmModel is SentencePiece BPE as llama.cpp runs it: start from single
// UTF-8 characters, repeatedly merge the adjacent pair whose concatenation
// is the highest-scoring token (leftmost on ties), then emit each final
// piece as its token or, failing that, as byte tokens.
type spmModel struct {
	t         *Tokenizer
	byteToken [256]int32 // <0xXX> tokens; -1 where the vocabulary has none
}

func newSPM(t *Tokenizer) *spmModel {
	m := &spmModel{t: t}
	for b := range m.byteToken {
		m.byteToken[b] = -1
		if id, ok := t.ids[fmt.Sprintf("<0x%02X>", b)]; ok {
			m.byteToken[b] = id
		} else if id, ok := t.ids[string([]byte{byte(b)})]; ok {
			m.byteToken[b] = id
		}
	}
	return m
}

// symbol is a run of the text being merged; n == 0 marks one merged away.
type symbol struct {
	start, n   int
	prev, next int
}

// spmPair is a candidate merge of symbols left and right into a token with
// the given score; size detects candidates made stale by other merges.
type spmPair struct {
	left, right int
	size        int
	score       float32
}

// spmBefore orders the queue: best score first, then leftmost.
func spmBefore(a, b spmPair) bool {
	return a.score > b.score || (a.score == b.score && a.left < b.left)
}

// utf8Len is the sequence length a UTF-8 lead byte announces; continuation
// and invalid bytes count as one, as llama.cpp does.
func utf8Len(b byte) int {
	switch {
	case b < 0xC0:
		return 1
	case b < 0xE0:
		return 2
	case b < 0xF0:
		return 3
	}
	return 4
}

// encode appends the tokens of one raw fragment to out.
func (m *spmModel) encode(out []int32, raw string, prefixSpace bool) []int32 {
	if prefixSpace {
		raw = " " + raw
	}
	text := strings.ReplaceAll(raw, " ", "\u2581")
	if text == "" {
		return out
	}
	syms := make([]symbol, 0, len(text))
	for off := 0; off < len(text); {
		n := min(utf8Len(text[off]), len(text)-off)
		syms = append(syms, symbol{start: off, n: n, prev: len(syms) - 1, next: len(syms) + 1})
		off += n
	}
	syms[len(syms)-1].next = -1

	q := pairQueue[spmPair]{before: spmBefore}
	try := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		s := text[syms[l].start : syms[r].start+syms[r].n]
		id, ok := m.t.ids[s]
		if !ok {
			return
		}
		q.push(spmPair{left: l, right: r, size: len(s), score: m.t.scores[id]})
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
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = p.left
		}
		try(l.prev, p.left)
		try(p.left, l.next)
	}
	for i := 0; i >= 0; i = syms[i].next {
		s := text[syms[i].start : syms[i].start+syms[i].n]
		if id, ok := m.t.ids[s]; ok {
			out = append(out, id)
			continue
		}
		for j := 0; j < len(s); j++ {
			if id := m.byteToken[s[j]]; id >= 0 {
				out = append(out, id)
			} else if m.t.unk >= 0 {
				out = append(out, m.t.unk)
			}
		}
	}
	return out
}
