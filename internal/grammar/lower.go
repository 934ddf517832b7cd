package grammar

import (
	"fmt"
	"slices"
)

// elemKind is what one element of the program does.
type elemKind uint8

const (
	eEnd elemKind = iota // end of an alternative: pop
	eSet                 // consume one byte in set
	eRef                 // expand rule ref
)

type elem struct {
	kind elemKind
	ref  int32
	set  [4]uint64
}

func (e *elem) has(b byte) bool { return e.set[b>>6]&(1<<(b&63)) != 0 }

// Grammar is a compiled grammar: the rules' alternatives laid out in one
// element array, each alternative ending with eEnd. It is immutable and
// safe to share between matchers; it memoises token masks (see Mask).
type Grammar struct {
	elems []elem
	alts  [][]int32 // rule → start positions of its alternatives
	names []string
	root  int32
	masks maskCache
	spec  Spec // what it was compiled from, when known (spec.go)
}

// maxElems bounds a program's size (about 40 bytes per element).
const maxElems = 1 << 20

// ParseGBNF compiles GBNF text whose start rule is "root".
func ParseGBNF(src string) (*Grammar, error) {
	p, err := parseGBNF(src)
	if err != nil {
		return nil, err
	}
	l := &lowerer{index: map[string]int{}}
	for _, n := range p.order {
		l.rule(n)
	}
	for _, n := range p.order {
		var alts [][]item
		for _, a := range p.rules[n] {
			seq, err := l.seq(a, nil)
			if err != nil {
				return nil, err
			}
			alts = append(alts, seq)
		}
		l.rules[l.index[n]] = alts
	}
	if l.undefined != "" {
		return nil, fmt.Errorf("grammar: rule %q is used but not defined", l.undefined)
	}
	root, ok := l.index["root"]
	if !ok {
		return nil, fmt.Errorf("grammar: no rule named root")
	}
	return l.build(root)
}

// item is an element before layout.
type item struct {
	ref int // -1 for a byte set
	set [4]uint64
}

type lowerer struct {
	rules     [][][]item
	names     []string
	index     map[string]int
	undefined string
	size      int
}

func (l *lowerer) rule(name string) int {
	if i, ok := l.index[name]; ok {
		return i
	}
	l.index[name] = len(l.rules)
	l.rules = append(l.rules, nil)
	l.names = append(l.names, name)
	return len(l.rules) - 1
}

// anon adds a rule with the given alternatives.
func (l *lowerer) anon(alts [][]item) int {
	l.rules = append(l.rules, alts)
	l.names = append(l.names, fmt.Sprintf("_%d", len(l.rules)-1))
	return len(l.rules) - 1
}

func (l *lowerer) grow(n int) error {
	if l.size += n; l.size > maxElems {
		return fmt.Errorf("grammar: program larger than %d elements", maxElems)
	}
	return nil
}

func (l *lowerer) seq(ts []term, out []item) ([]item, error) {
	for _, t := range ts {
		var err error
		if out, err = l.term(t, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (l *lowerer) term(t term, out []item) ([]item, error) {
	if t.min == 1 && t.max == 1 {
		return l.atom(t, out)
	}
	body, err := l.atom(t, nil)
	if err != nil {
		return nil, err
	}
	if err := l.grow(len(body) * max(t.min, 1)); err != nil {
		return nil, err
	}
	for range t.min {
		out = append(out, body...)
	}
	switch {
	case t.max < 0: // R ::= body R | ε
		r := l.anon(nil)
		l.rules[r] = [][]item{append(slices.Clone(body), item{ref: r}), nil}
		out = append(out, item{ref: r})
	case t.max > t.min: // R_k ::= body R_{k-1} | ε, R_1 ::= body | ε
		r := l.anon([][]item{slices.Clone(body), nil})
		for range t.max - t.min - 1 {
			r = l.anon([][]item{append(slices.Clone(body), item{ref: r}), nil})
		}
		out = append(out, item{ref: r})
	}
	return out, nil
}

func (l *lowerer) atom(t term, out []item) ([]item, error) {
	switch t.kind {
	case tLit:
		if err := l.grow(len(t.lit)); err != nil {
			return nil, err
		}
		for _, b := range t.lit {
			var it item
			it.ref = -1
			it.set[b>>6] |= 1 << (b & 63)
			out = append(out, it)
		}
	case tRef:
		i, ok := l.index[t.name]
		if !ok {
			l.undefined = t.name
			i = l.rule(t.name)
		}
		out = append(out, item{ref: i})
	case tGroup:
		var alts [][]item
		for _, a := range t.group {
			seq, err := l.seq(a, nil)
			if err != nil {
				return nil, err
			}
			alts = append(alts, seq)
		}
		out = append(out, item{ref: l.anon(alts)})
	case tClass:
		seqs := classSeqs(t.ranges, t.negated)
		single := item{ref: -1}
		var multi [][]item
		for _, s := range seqs {
			if len(s) == 1 {
				setRange(&single.set, s[0])
				continue
			}
			seq := make([]item, len(s))
			for i, br := range s {
				seq[i].ref = -1
				setRange(&seq[i].set, br)
			}
			multi = append(multi, seq)
		}
		if err := l.grow(len(multi)*4 + 1); err != nil {
			return nil, err
		}
		switch {
		case len(multi) == 0:
			out = append(out, single) // an empty set matches nothing, as it should
		default:
			if single.set != ([4]uint64{}) {
				multi = append(multi, []item{single})
			}
			out = append(out, item{ref: l.anon(multi)})
		}
	}
	return out, nil
}

func setRange(s *[4]uint64, r byteRange) {
	for b := int(r.lo); b <= int(r.hi); b++ {
		s[b>>6] |= 1 << (b & 63)
	}
}

// build lays the rules out and refuses left recursion, which the
// recogniser would expand forever.
func (l *lowerer) build(root int) (*Grammar, error) {
	g := &Grammar{alts: make([][]int32, len(l.rules)), names: l.names, root: int32(root)}
	for r, alts := range l.rules {
		for _, a := range alts {
			g.alts[r] = append(g.alts[r], int32(len(g.elems)))
			for _, it := range a {
				if it.ref < 0 {
					g.elems = append(g.elems, elem{kind: eSet, set: it.set})
				} else {
					g.elems = append(g.elems, elem{kind: eRef, ref: int32(it.ref)})
				}
			}
			g.elems = append(g.elems, elem{kind: eEnd})
		}
	}
	if len(g.elems) > maxElems {
		return nil, fmt.Errorf("grammar: program larger than %d elements", maxElems)
	}
	if name := l.leftRecursive(); name != "" {
		return nil, fmt.Errorf("grammar: rule %q is left-recursive (it can reach itself without consuming input)", name)
	}
	return g, nil
}

// leftRecursive returns a rule that can reach itself through a nullable
// prefix, or "".
func (l *lowerer) leftRecursive() string {
	n := len(l.rules)
	nullable := make([]bool, n)
	for changed := true; changed; {
		changed = false
		for r, alts := range l.rules {
			if nullable[r] {
				continue
			}
			for _, a := range alts {
				if l.allNullable(a, nullable) {
					nullable[r], changed = true, true
					break
				}
			}
		}
	}
	// edges r → s when s can be the first thing r expands.
	edges := make([][]int, n)
	for r, alts := range l.rules {
		for _, a := range alts {
			for _, it := range a {
				if it.ref < 0 {
					break
				}
				edges[r] = append(edges[r], it.ref)
				if !nullable[it.ref] {
					break
				}
			}
		}
	}
	const (
		white = iota
		grey
		black
	)
	colour := make([]uint8, n)
	var found string
	var visit func(int) bool
	visit = func(r int) bool {
		colour[r] = grey
		for _, s := range edges[r] {
			if colour[s] == grey {
				found = l.names[s]
				return true
			}
			if colour[s] == white && visit(s) {
				return true
			}
		}
		colour[r] = black
		return false
	}
	for r := range n {
		if colour[r] == white && visit(r) {
			return found
		}
	}
	return ""
}

func (l *lowerer) allNullable(a []item, nullable []bool) bool {
	for _, it := range a {
		if it.ref < 0 || !nullable[it.ref] {
			return false
		}
	}
	return true
}
