package grammar

import (
	"math"
	"sync"
)

// Vocab is a byte trie over a vocabulary's token pieces, built once per
// tokenizer and shared by every request.
type Vocab struct {
	n     int
	nodes []trieNode
	plain plainIndex // plain.go
}

type trieNode struct {
	bytes    []byte  // edge labels, in insertion order
	children []int32 // node index per label
	tokens   []int32 // tokens whose piece ends here
}

// NewVocab builds the trie. pieces[id] is the bytes token id stands for;
// an empty or nil piece (control tokens, unused ids) is never allowed by a
// mask, since it would advance no grammar.
func NewVocab(pieces [][]byte) *Vocab {
	v := &Vocab{n: len(pieces), nodes: []trieNode{{}}}
	for id, p := range pieces {
		if len(p) == 0 {
			continue
		}
		cur := int32(0)
		for _, c := range p {
			next := int32(-1)
			for i, b := range v.nodes[cur].bytes {
				if b == c {
					next = v.nodes[cur].children[i]
					break
				}
			}
			if next < 0 {
				next = int32(len(v.nodes))
				v.nodes = append(v.nodes, trieNode{})
				v.nodes[cur].bytes = append(v.nodes[cur].bytes, c)
				v.nodes[cur].children = append(v.nodes[cur].children, next)
			}
			cur = next
		}
		v.nodes[cur].tokens = append(v.nodes[cur].tokens, int32(id))
	}
	v.indexPlain()
	return v
}

// Size is the number of token ids.
func (v *Vocab) Size() int { return v.n }

// Mask is a set of allowed token ids.
type Mask []uint64

// Has reports whether id is allowed.
func (m Mask) Has(id int32) bool { return id >= 0 && int(id>>6) < len(m) && m[id>>6]&(1<<(id&63)) != 0 }

func (m Mask) set(id int32) { m[id>>6] |= 1 << (id & 63) }

// Mask computes the tokens whose whole piece can continue the current
// input, by one walk of the trie: each edge advances the stack set by one
// byte, and an edge that kills every stack prunes its subtree. Results are
// memoised by state key, since a JSON string's interior and similar states
// recur at almost every step.
//
// The memo lives in the Grammar, shared by every matcher (and request) over
// it: a state's key depends only on the grammar's positions, so the masks
// a schema needs are computed about once per server, not once per request.
func (m *Matcher) Mask(v *Vocab) Mask {
	c := &m.g.masks
	c.mu.Lock()
	if c.vocab == v {
		if mk, ok := c.m[m.cur.key]; ok {
			c.mu.Unlock()
			return mk
		}
	}
	c.mu.Unlock()
	out := make(Mask, (v.n+63)/64)
	m.walk(v, 0, &m.cur, m.steps.row(m.cur.key), out)
	m.steps.reset()
	c.mu.Lock()
	if c.m == nil || c.vocab != v || len(c.m) >= maxMemo {
		c.m, c.vocab = map[uint64]Mask{}, v
	}
	c.m[m.cur.key] = out
	c.mu.Unlock()
	return out
}

// maxMemo bounds the masks a grammar keeps (about 6 KB each for a 50k
// vocabulary); past it the memo starts again.
const maxMemo = 1024

// maskCache is a grammar's memo of masks by state key, for one vocabulary.
type maskCache struct {
	mu    sync.Mutex
	vocab *Vocab
	m     map[uint64]Mask
}

func (m *Matcher) walk(v *Vocab, at int32, s *State, row *stepRow, out Mask) {
	n := &v.nodes[at]
	depth := int32(-1) // s's plain depth, looked up on the first plain edge
	for i, c := range n.bytes {
		if h := v.plain.plainHeight[n.children[i]]; h >= 0 && isPlain(c) {
			if depth < 0 {
				depth = row.plainDepth(m, s)
			}
			if depth > h { // the edge and every path below it survive
				for _, id := range v.plain.subtree[v.plain.lo[n.children[i]]:v.plain.hi[n.children[i]]] {
					out.set(id)
				}
				continue
			}
		}
		next := row.after(m, s, c)
		if len(next.stacks) == 0 && !next.accept {
			continue // dead: prune the subtree
		}
		child := &v.nodes[n.children[i]]
		for _, id := range child.tokens {
			out.set(id)
		}
		if len(next.stacks) > 0 && len(child.bytes) > 0 {
			m.walk(v, n.children[i], next, row.childRow(&m.steps, c, next), out)
		}
	}
}

// stepMemo memoises a walk's transitions by state key and byte. A trie
// walk reaches the same few states over and over (inside a string, every
// ASCII byte leads to the same state), but a state that does not recur
// across steps (a string with maxLength: each length left is its own
// state) misses the mask memo, and stepping its dozen stacks afresh for
// every trie edge made such a mask cost a whole trie of work (about half a
// second over GPT-2's vocabulary). With the memo each distinct transition
// is computed once per walk and every other edge is a lookup.
type stepMemo struct {
	rows map[uint64]*stepRow
	free []*stepRow
}

// stepRow is one state's transitions: next[c] is valid when bit c of known
// is set, and rows[c], once looked up, is next[c]'s own row.
type stepRow struct {
	known [4]uint64
	next  [256]State
	rows  [256]*stepRow
	// plainLen is the state's plainDepth (plain.go), once plainKnown.
	plainKnown bool
	plainLen   int32
}

// maxFreeRows bounds the rows a matcher keeps for its next walk (a row is
// about 12 KB; a walk inside a bounded string uses ~150), so an idle
// constrained request holds little.
const maxFreeRows = 32

// reset forgets the walk's transitions, keeping a few rows for reuse.
func (sm *stepMemo) reset() {
	for k, r := range sm.rows {
		if len(sm.free) < maxFreeRows {
			*r = stepRow{}
			sm.free = append(sm.free, r)
		}
		delete(sm.rows, k)
	}
}

func (sm *stepMemo) row(key uint64) *stepRow {
	if r, ok := sm.rows[key]; ok {
		return r
	}
	if sm.rows == nil {
		sm.rows = map[uint64]*stepRow{}
	}
	var r *stepRow
	if n := len(sm.free); n > 0 {
		r, sm.free = sm.free[n-1], sm.free[:n-1]
	} else {
		r = new(stepRow)
	}
	sm.rows[key] = r
	return r
}

// childRow is the row of r.next[c] (which is next).
func (r *stepRow) childRow(sm *stepMemo, c byte, next *State) *stepRow {
	if r.rows[c] == nil {
		r.rows[c] = sm.row(next.key)
	}
	return r.rows[c]
}

// after is the state after byte c from s, whose row r is.
func (r *stepRow) after(m *Matcher, s *State, c byte) *State {
	if r.known[c>>6]&(1<<(c&63)) == 0 {
		r.next[c] = m.step(s, c)
		r.known[c>>6] |= 1 << (c & 63)
	}
	return &r.next[c]
}

// Constraint applies a grammar to a sampler: it masks logits before a draw
// and advances over the drawn token. End-of-generation tokens are allowed
// exactly when the grammar accepts; when nothing else is allowed (the
// grammar is complete, or the vocabulary cannot spell any continuation)
// they are the only choice, so generation ends rather than wanders.
type Constraint struct {
	m      *Matcher
	v      *Vocab
	pieces func(int32) []byte
	eog    []int32
	keep   []float32
}

// NewConstraint returns a fresh constraint for one sequence. pieces gives
// a token's bytes (as given to NewVocab); eog lists the end tokens.
func NewConstraint(g *Grammar, v *Vocab, pieces func(int32) []byte, eog []int32) *Constraint {
	return &Constraint{m: NewMatcher(g), v: v, pieces: pieces, eog: eog}
}

// Mask sets the logits of disallowed tokens to -Inf, in place. An end
// token keeps its logit when the grammar accepts.
func (c *Constraint) Mask(logits []float32) {
	mk := c.m.Mask(c.v)
	c.keep = c.keep[:0]
	for _, id := range c.eog {
		if id >= 0 && int(id) < len(logits) {
			c.keep = append(c.keep, logits[id])
		}
	}
	// Word at a time: a full word (common inside strings) costs one test,
	// an empty one a plain fill.
	any := false
	negInf := float32(math.Inf(-1))
	for w := 0; w*64 < len(logits); w++ {
		bits := uint64(0)
		if w < len(mk) {
			bits = mk[w]
		}
		lo, hi := w*64, min(w*64+64, len(logits))
		switch bits {
		case ^uint64(0):
			any = true
		case 0:
			for i := lo; i < hi; i++ {
				logits[i] = negInf
			}
		default:
			any = true
			for i := lo; i < hi; i++ {
				if bits&(1<<(i-lo)) == 0 {
					logits[i] = negInf
				}
			}
		}
	}
	k := 0
	for _, id := range c.eog {
		if id >= 0 && int(id) < len(logits) {
			switch {
			case c.m.Accepting():
				logits[id] = c.keep[k]
			case !any:
				logits[id] = 0 // dead end: stop rather than emit token 0
			}
			k++
		}
	}
}

// Accept advances over a drawn token. An end token or a token the grammar
// refuses leaves the state as it is.
func (c *Constraint) Accept(tok int32) {
	for _, id := range c.eog {
		if id == tok {
			return
		}
	}
	c.m.Advance(c.pieces(tok))
}

// Accepting reports whether the output so far is a sentence.
func (c *Constraint) Accepting() bool { return c.m.Accepting() }
