package grammar

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// CompileRegex compiles a regular expression, anchored at both ends, to a
// grammar. The subset: literals and escapes, ".", classes (ranges,
// negation, \d \w \s and their negations), groups "(...)" and "(?:...)",
// "|", and the quantifiers * + ? {m} {m,} {m,n} (a lazy "?" suffix is
// accepted: it changes no language). "^" and "$" are accepted only at the
// ends. Anything else (backreferences, lookaround, flags) is refused.
func CompileRegex(re string) (*Grammar, error) {
	src := strings.TrimPrefix(re, "^")
	if strings.HasSuffix(src, "$") && !strings.HasSuffix(src, `\$`) {
		src = src[:len(src)-1]
	}
	p := &regexParser{src: src}
	body, err := p.alternation()
	if err != nil {
		return nil, err
	}
	if p.pos < len(p.src) {
		return nil, fmt.Errorf("regex: unexpected %q at byte %d", p.src[p.pos], p.pos)
	}
	g, err := ParseGBNF("root ::= " + body + "\n")
	if err != nil {
		return nil, fmt.Errorf("regex: %w", err)
	}
	return g, nil
}

type regexParser struct {
	src string
	pos int
}

func (p *regexParser) alternation() (string, error) {
	var alts []string
	for {
		seq, err := p.sequence()
		if err != nil {
			return "", err
		}
		alts = append(alts, seq)
		if p.pos >= len(p.src) || p.src[p.pos] != '|' {
			break
		}
		p.pos++
	}
	return "( " + strings.Join(alts, " | ") + " )", nil
}

func (p *regexParser) sequence() (string, error) {
	var parts []string
	for p.pos < len(p.src) && p.src[p.pos] != '|' && p.src[p.pos] != ')' {
		atom, err := p.atom()
		if err != nil {
			return "", err
		}
		q, err := p.quantifier()
		if err != nil {
			return "", err
		}
		parts = append(parts, atom+q)
	}
	return strings.Join(parts, " "), nil
}

func (p *regexParser) atom() (string, error) {
	c := p.src[p.pos]
	switch c {
	case '(':
		p.pos++
		if strings.HasPrefix(p.src[p.pos:], "?:") {
			p.pos += 2
		} else if p.pos < len(p.src) && p.src[p.pos] == '?' {
			return "", fmt.Errorf("regex: group syntax (?%s is not supported", p.src[p.pos+1:min(p.pos+2, len(p.src))])
		}
		inner, err := p.alternation()
		if err != nil {
			return "", err
		}
		if p.pos >= len(p.src) || p.src[p.pos] != ')' {
			return "", fmt.Errorf("regex: missing )")
		}
		p.pos++
		return inner, nil
	case '.':
		p.pos++
		return `[^\n]`, nil
	case '[':
		return p.class()
	case '\\':
		if cls, ok := p.shorthand(); ok {
			return "[" + cls + "]", nil
		}
		r, err := p.escaped()
		if err != nil {
			return "", err
		}
		return quote(string(r)), nil
	case '*', '+', '?', '{':
		return "", fmt.Errorf("regex: quantifier %q at byte %d has nothing to repeat", c, p.pos)
	case '^', '$':
		return "", fmt.Errorf("regex: anchors are only supported at the ends")
	}
	r, n := utf8.DecodeRuneInString(p.src[p.pos:])
	p.pos += n
	return quote(string(r)), nil
}

// shorthand reads \d \w \s \D \W \S as GBNF class contents.
func (p *regexParser) shorthand() (string, bool) {
	if p.pos+1 >= len(p.src) {
		return "", false
	}
	cls, ok := map[byte]string{'d': `0-9`, 'w': `a-zA-Z0-9_`, 's': ` \t\n\r\x0b\x0c`,
		'D': `^0-9`, 'W': `^a-zA-Z0-9_`, 'S': `^ \t\n\r\x0b\x0c`}[p.src[p.pos+1]]
	if ok {
		p.pos += 2
	}
	return cls, ok
}

func (p *regexParser) escaped() (rune, error) {
	p.pos++ // the backslash
	if p.pos >= len(p.src) {
		return 0, fmt.Errorf("regex: dangling backslash")
	}
	c := p.src[p.pos]
	p.pos++
	switch c {
	case 'n':
		return '\n', nil
	case 't':
		return '\t', nil
	case 'r':
		return '\r', nil
	}
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
		return 0, fmt.Errorf(`regex: escape \%c is not supported`, c)
	}
	r, n := utf8.DecodeRuneInString(p.src[p.pos-1:])
	p.pos += n - 1
	return r, nil
}

// class reads [...] into a GBNF class.
func (p *regexParser) class() (string, error) {
	p.pos++
	var b strings.Builder
	b.WriteByte('[')
	if p.pos < len(p.src) && p.src[p.pos] == '^' {
		b.WriteByte('^')
		p.pos++
	}
	first := true
	for {
		if p.pos >= len(p.src) {
			return "", fmt.Errorf("regex: unterminated class")
		}
		c := p.src[p.pos]
		if c == ']' && !first {
			p.pos++
			b.WriteByte(']')
			return b.String(), nil
		}
		first = false
		if c == '-' {
			b.WriteByte('-')
			p.pos++
			continue
		}
		if c == '\\' {
			if cls, ok := p.shorthand(); ok {
				if cls[0] == '^' {
					return "", fmt.Errorf(`regex: negated shorthand inside a class is not supported`)
				}
				b.WriteString(cls)
				continue
			}
			r, err := p.escaped()
			if err != nil {
				return "", err
			}
			b.WriteString(classChar(r))
			continue
		}
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		p.pos += n
		b.WriteString(classChar(r))
	}
}

func classChar(r rune) string {
	switch {
	case r == ']' || r == '\\' || r == '-' || r == '^' || r == '[':
		return `\` + string(r)
	case r < 0x20:
		return fmt.Sprintf(`\x%02x`, r)
	}
	return string(r)
}

func (p *regexParser) quantifier() (string, error) {
	if p.pos >= len(p.src) {
		return "", nil
	}
	var q string
	switch c := p.src[p.pos]; c {
	case '*', '+', '?':
		p.pos++
		q = string(c)
	case '{':
		end := strings.IndexByte(p.src[p.pos:], '}')
		if end < 0 {
			return "", fmt.Errorf("regex: unterminated {")
		}
		q = p.src[p.pos : p.pos+end+1]
		p.pos += end + 1
	default:
		return "", nil
	}
	if p.pos < len(p.src) && p.src[p.pos] == '?' {
		p.pos++ // lazy: same language
	}
	if p.pos < len(p.src) && strings.ContainsRune("*+?{", rune(p.src[p.pos])) {
		return "", fmt.Errorf("regex: nested quantifier at byte %d", p.pos)
	}
	return q, nil
}
