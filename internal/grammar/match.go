package grammar

// node is one entry of a parse stack: the position of the element to match
// next. Stacks are persistent: pushing shares the tail. h hashes the whole
// stack, so equal stacks have equal hashes.
type node struct {
	pos  int32
	next *node
	h    uint64
}

func push(pos int32, next *node) *node {
	h := uint64(pos+1) * 0x9E3779B97F4A7C15
	if next != nil {
		h ^= next.h*0x100000001B3 + 0x632BE59BD9B4E019
	}
	return &node{pos: pos, next: next, h: h}
}

// State is the set of stacks alive after some input. Every stack's top is
// a byte-set element. Accept reports whether the input so far is a whole
// sentence of the grammar.
type State struct {
	stacks []*node
	accept bool
	key    uint64
}

// Dead reports whether no continuation and no end is possible.
func (s *State) Dead() bool { return len(s.stacks) == 0 && !s.accept }

// Accepting reports whether the input so far is a sentence.
func (s *State) Accepting() bool { return s.accept }

// Done reports whether the input is a sentence that cannot be extended.
func (s *State) Done() bool { return s.accept && len(s.stacks) == 0 }

// maxStacks bounds a state: an ambiguous grammar can multiply stacks, and
// the server must not be made to run out of memory by a request's grammar.
const maxStacks = 4096

// builder collects a state, deduplicating stacks by hash.
type builder struct {
	g    *Grammar
	out  State
	seen map[uint64]struct{}
}

func (b *builder) reset() {
	b.out = State{}
	clear(b.seen)
}

func (b *builder) add(n *node) {
	if _, dup := b.seen[n.h]; dup || len(b.out.stacks) >= maxStacks {
		return
	}
	b.seen[n.h] = struct{}{}
	b.out.stacks = append(b.out.stacks, n)
	b.out.key ^= n.h*0xBF58476D1CE4E5B9 + 1
}

// expand adds every stack that matching from pos (then next) leads to,
// with a byte set on top. Rule references are expanded into their
// alternatives; an alternative's end pops. A reference whose continuation
// is an end is not pushed at all, so right recursion (x*) keeps stacks flat.
func (b *builder) expand(pos int32, next *node) {
	g := b.g
	for {
		e := &g.elems[pos]
		switch e.kind {
		case eEnd:
			if next == nil {
				if !b.out.accept {
					b.out.accept = true
					b.out.key ^= 0xA5A5A5A5A5A5A5A5
				}
				return
			}
			pos, next = next.pos, next.next
		case eSet:
			b.add(push(pos, next))
			return
		case eRef:
			cont := next
			if g.elems[pos+1].kind != eEnd {
				cont = push(pos+1, next)
			}
			for _, a := range g.alts[e.ref] {
				b.expand(a, cont)
			}
			return
		}
	}
}

// Matcher is a recogniser's current state over one grammar.
type Matcher struct {
	g     *Grammar
	cur   State
	b     builder
	steps stepMemo // a mask walk's transitions (mask.go)
}

// NewMatcher starts at the beginning of g's root rule.
func NewMatcher(g *Grammar) *Matcher {
	m := &Matcher{g: g, b: builder{g: g, seen: map[uint64]struct{}{}}}
	for _, a := range g.alts[g.root] {
		m.b.expand(a, nil)
	}
	m.cur = m.b.out
	return m
}

// State is the current state; it stays valid after further Advance calls.
func (m *Matcher) State() *State { s := m.cur; return &s }

// step returns the state after b from s.
func (m *Matcher) step(s *State, c byte) State {
	m.b.reset()
	for _, n := range s.stacks {
		if m.g.elems[n.pos].has(c) {
			m.b.expand(n.pos+1, n.next)
		}
	}
	return m.b.out
}

// Advance consumes bytes and reports false (leaving the state unchanged)
// when they cannot continue a sentence.
func (m *Matcher) Advance(bs []byte) bool {
	s := m.cur
	for _, c := range bs {
		s = m.step(&s, c)
		if s.Dead() {
			return false
		}
	}
	m.cur = s
	return true
}

// Accepting reports whether the input so far is a sentence.
func (m *Matcher) Accepting() bool { return m.cur.accept }

// Done reports whether the input so far is a sentence no byte can extend.
func (m *Matcher) Done() bool { return m.cur.Done() }

// Match reports whether s is a sentence of g.
func (g *Grammar) Match(s []byte) bool {
	m := NewMatcher(g)
	return m.Advance(s) && m.Accepting()
}

// Clone returns an independent matcher in the same state.
func (m *Matcher) Clone() *Matcher {
	return &Matcher{g: m.g, cur: m.cur, b: builder{g: m.g, seen: map[uint64]struct{}{}}}
}
