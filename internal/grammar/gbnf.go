package grammar

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// The parse tree of GBNF text, before lowering (lower.go).

type termKind uint8

const (
	tLit   termKind = iota // bytes of a literal
	tClass                 // code point ranges, maybe negated
	tRef                   // a rule by name
	tGroup                 // parenthesised alternatives
)

type term struct {
	kind     termKind
	lit      []byte
	ranges   []cpRange
	negated  bool
	name     string
	group    [][]term
	min, max int // repetition; max -1 means unbounded; 1,1 for none
}

type cpRange struct{ lo, hi rune }

// maxRepeat bounds {m,n} so that a small grammar cannot lower to a huge
// program.
const maxRepeat = 1000

// parser reads GBNF: rules "name ::= alternatives", separated by newlines;
// inside parentheses and after "|" or "::=" newlines are spaces. "#" starts
// a comment to the end of the line.
type parser struct {
	src   string
	pos   int
	rules map[string][][]term
	order []string
}

// ParseError says where GBNF text is malformed.
type ParseError struct {
	Offset int
	Msg    string
}

func (e *ParseError) Error() string { return fmt.Sprintf("grammar: at byte %d: %s", e.Offset, e.Msg) }

func (p *parser) fail(format string, args ...any) error {
	return &ParseError{Offset: p.pos, Msg: fmt.Sprintf(format, args...)}
}

func parseGBNF(src string) (*parser, error) {
	p := &parser{src: src, rules: map[string][][]term{}}
	for {
		p.space(true)
		if p.pos >= len(p.src) {
			break
		}
		if err := p.rule(); err != nil {
			return nil, err
		}
	}
	if len(p.order) == 0 {
		return nil, p.fail("no rules")
	}
	return p, nil
}

// space skips blanks and comments, and newlines when newlines is true.
func (p *parser) space(newlines bool) {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t':
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		case (c == '\n' || c == '\r') && newlines:
			p.pos++
		default:
			return
		}
	}
}

func isNameByte(c byte) bool {
	return c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (p *parser) name() string {
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

func (p *parser) rule() error {
	name := p.name()
	if name == "" {
		return p.fail("expected a rule name")
	}
	p.space(false)
	if !p.eat("::=") {
		return p.fail("expected ::= after rule name %q", name)
	}
	p.space(true)
	alts, err := p.alternatives(false)
	if err != nil {
		return err
	}
	if p.pos < len(p.src) && p.src[p.pos] != '\n' && p.src[p.pos] != '\r' {
		return p.fail("unexpected %q at the end of rule %q", p.src[p.pos], name)
	}
	if _, dup := p.rules[name]; dup {
		return p.fail("rule %q defined twice", name)
	}
	p.rules[name] = alts
	p.order = append(p.order, name)
	return nil
}

func (p *parser) eat(s string) bool {
	if len(p.src)-p.pos >= len(s) && p.src[p.pos:p.pos+len(s)] == s {
		p.pos += len(s)
		return true
	}
	return false
}

func (p *parser) alternatives(nested bool) ([][]term, error) {
	var alts [][]term
	for {
		seq, err := p.sequence(nested)
		if err != nil {
			return nil, err
		}
		alts = append(alts, seq)
		if !p.eat("|") {
			return alts, nil
		}
		p.space(true)
	}
}

func (p *parser) sequence(nested bool) ([]term, error) {
	var seq []term
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		var t term
		switch {
		case c == '"':
			p.pos++
			lit, err := p.literal()
			if err != nil {
				return nil, err
			}
			t = term{kind: tLit, lit: lit}
		case c == '[':
			p.pos++
			rs, neg, err := p.class()
			if err != nil {
				return nil, err
			}
			t = term{kind: tClass, ranges: rs, negated: neg}
		case c == '.':
			p.pos++
			t = term{kind: tClass, negated: true}
		case c == '(':
			p.pos++
			p.space(true)
			alts, err := p.alternatives(true)
			if err != nil {
				return nil, err
			}
			if !p.eat(")") {
				return nil, p.fail("expected )")
			}
			t = term{kind: tGroup, group: alts}
		case isNameByte(c):
			t = term{kind: tRef, name: p.name()}
		default:
			return seq, nil
		}
		t.min, t.max = 1, 1
		p.space(nested)
		if err := p.repetition(&t, nested); err != nil {
			return nil, err
		}
		seq = append(seq, t)
	}
	return seq, nil
}

func (p *parser) repetition(t *term, nested bool) error {
	if p.pos >= len(p.src) {
		return nil
	}
	switch p.src[p.pos] {
	case '*':
		t.min, t.max = 0, -1
	case '+':
		t.min, t.max = 1, -1
	case '?':
		t.min, t.max = 0, 1
	case '{':
		p.pos++
		p.space(nested)
		m, ok := p.number()
		if !ok {
			return p.fail("expected a number after {")
		}
		n := m
		p.space(nested)
		if p.eat(",") {
			p.space(nested)
			if v, ok := p.number(); ok {
				n = v
			} else {
				n = -1
			}
			p.space(nested)
		}
		if !p.eat("}") {
			return p.fail("expected } in repetition")
		}
		if m > maxRepeat || n > maxRepeat || (n >= 0 && n < m) {
			return p.fail("bad repetition {%d,%d} (at most %d)", m, n, maxRepeat)
		}
		t.min, t.max = m, n
		p.space(nested)
		return nil
	default:
		return nil
	}
	p.pos++
	p.space(nested)
	return nil
}

func (p *parser) number() (int, bool) {
	start := p.pos
	for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' && p.pos-start < 6 {
		p.pos++
	}
	if p.pos == start {
		return 0, false
	}
	v, _ := strconv.Atoi(p.src[start:p.pos])
	return v, true
}

// literal reads up to the closing quote; the opening one is consumed.
func (p *parser) literal() ([]byte, error) {
	var out []byte
	for {
		if p.pos >= len(p.src) {
			return nil, p.fail("unterminated literal")
		}
		if p.src[p.pos] == '"' {
			p.pos++
			return out, nil
		}
		r, err := p.char()
		if err != nil {
			return nil, err
		}
		out = utf8.AppendRune(out, r)
	}
}

// class reads up to the closing bracket; the opening one is consumed.
func (p *parser) class() ([]cpRange, bool, error) {
	neg := p.eat("^")
	var rs []cpRange
	for {
		if p.pos >= len(p.src) {
			return nil, false, p.fail("unterminated character class")
		}
		if p.src[p.pos] == ']' {
			p.pos++
			return rs, neg, nil
		}
		lo, err := p.char()
		if err != nil {
			return nil, false, err
		}
		hi := lo
		if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			if hi, err = p.char(); err != nil {
				return nil, false, err
			}
			if hi < lo {
				return nil, false, p.fail("range %q-%q is reversed", lo, hi)
			}
		}
		rs = append(rs, cpRange{lo, hi})
	}
}

// char reads one code point of a literal or class, with its escapes.
func (p *parser) char() (rune, error) {
	c := p.src[p.pos]
	if c != '\\' {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		if r == utf8.RuneError && n <= 1 {
			return 0, p.fail("invalid UTF-8")
		}
		p.pos += n
		return r, nil
	}
	p.pos++
	if p.pos >= len(p.src) {
		return 0, p.fail("dangling backslash")
	}
	e := p.src[p.pos]
	p.pos++
	switch e {
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case '\\', '"', '[', ']', '-', '^', '/', '\'':
		return rune(e), nil
	case 'x':
		return p.hex(2)
	case 'u':
		return p.hex(4)
	case 'U':
		return p.hex(8)
	}
	return 0, p.fail("unknown escape \\%c", e)
}

func (p *parser) hex(n int) (rune, error) {
	if len(p.src)-p.pos < n {
		return 0, p.fail("short \\x/\\u escape")
	}
	v, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
	if err != nil || v > utf8.MaxRune {
		return 0, p.fail("bad hex escape %q", p.src[p.pos:p.pos+n])
	}
	p.pos += n
	return rune(v), nil
}
