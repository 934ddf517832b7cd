package grammar

// Plain subtrees: inside a JSON string nearly every token is printable
// ASCII without a quote or backslash, and a trie walk spent its time
// stepping through those tokens' bytes one edge at a time only to allow
// them all. A state steps over every such "plain" byte alike when each of
// its stacks' top sets holds all plain bytes or none (the successor of a
// stack depends only on its position, not on which byte matched), so the
// walk can tell, without descending, that a subtree made only of plain
// bytes and no deeper than the chain of live uniform successors is
// allowed whole, and add its tokens from a precomputed list.

// plainSet is printable ASCII except '"' and '\\'.
var plainSet = func() (s [4]uint64) {
	for c := 0x20; c < 0x7f; c++ {
		if c != '"' && c != '\\' {
			s[c>>6] |= 1 << (c & 63)
		}
	}
	return s
}()

func isPlain(c byte) bool { return plainSet[c>>6]&(1<<(c&63)) != 0 }

// plainIndex is a trie's plain-subtree summary: for node i, plainHeight[i]
// is the depth in bytes of its subtree when every edge below it is plain
// (-1 otherwise), and its subtree's tokens are subtree[lo[i]:hi[i]].
type plainIndex struct {
	plainHeight []int32
	lo, hi      []int32
	subtree     []int32
}

func (v *Vocab) indexPlain() {
	n := len(v.nodes)
	p := plainIndex{plainHeight: make([]int32, n), lo: make([]int32, n), hi: make([]int32, n)}
	var visit func(at int32)
	visit = func(at int32) {
		nd := &v.nodes[at]
		p.lo[at] = int32(len(p.subtree))
		p.subtree = append(p.subtree, nd.tokens...)
		h := int32(0)
		for i, c := range nd.bytes {
			child := nd.children[i]
			visit(child)
			switch {
			case h < 0:
			case !isPlain(c) || p.plainHeight[child] < 0:
				h = -1
			default:
				h = max(h, 1+p.plainHeight[child])
			}
		}
		p.plainHeight[at] = h
		p.hi[at] = int32(len(p.subtree))
	}
	visit(0)
	v.plain = p
}

// maxPlainDepth caps the chain of uniform successors the walk looks for;
// no token piece is longer.
const maxPlainDepth = 1 << 10

// plainDepth is how many plain bytes in a row every state from s survives:
// 0 unless s steps over all plain bytes alike to a live state.
func (r *stepRow) plainDepth(m *Matcher, s *State) int32 {
	if r.plainKnown {
		return r.plainLen
	}
	r.plainKnown = true // a cycle back to this row reads 0 until set
	d := int32(0)
	if m.uniformOnPlain(s) {
		next := r.after(m, s, 'a')
		if !next.Dead() {
			d = 1
			if len(next.stacks) > 0 {
				if next.key == s.key {
					d = maxPlainDepth // steps to itself: any length
				} else {
					d = min(maxPlainDepth, 1+r.childRow(&m.steps, 'a', next).plainDepth(m, next))
				}
			}
		}
	}
	r.plainLen = d
	return d
}

// uniformOnPlain reports whether each stack's top set of s holds all plain
// bytes or none.
func (m *Matcher) uniformOnPlain(s *State) bool {
	for _, n := range s.stacks {
		set := &m.g.elems[n.pos].set
		all, none := true, true
		for w := range plainSet {
			x := set[w] & plainSet[w]
			all = all && x == plainSet[w]
			none = none && x == 0
		}
		if !all && !none {
			return false
		}
	}
	return true
}
