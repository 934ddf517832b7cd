package grammar

import (
	"testing"
)

func TestGBNFMatches(t *testing.T) {
	cases := []struct {
		gbnf string
		yes  []string
		no   []string
	}{
		{`root ::= "a" | "b" "c"`, []string{"a", "bc"}, []string{"", "b", "ac", "abc"}},
		{`root ::= [a-c]+ "!"?`, []string{"a", "abc!", "cc"}, []string{"", "!", "ad"}},
		{`root ::= [^a-c]`, []string{"d", "é", "日", "\U0010ffff"}, []string{"a", "", "\xff", "dd", "\xed\xa0\x80", "\xc0\x80", "\xf4\x90\x80\x80"}},
		{`root ::= ( "x" | y ){2,3}
y ::= "\x79" # comment`, []string{"xx", "xyx", "yyy"}, []string{"x", "xxxx"}},
		{`root ::= "q" [0-9]{3}`, []string{"q123"}, []string{"q12", "q1234"}},
		{`root ::= "a"{2,}`, []string{"aa", "aaaaa"}, []string{"a"}},
		{"root ::= (\n  \"a\" |\n  \"b\"\n)* \"\\n\\\"\"", []string{"\n\"", "ab\n\""}, []string{"a"}},
		{`root ::= [а-я]+`, []string{"привет"}, []string{"hello"}},
		{`root ::= .*`, []string{"", "any 日本 text"}, []string{"\xc3"}},
		{`root ::= "\u00e9" [\t-\n]`, []string{"é\t", "é\n"}, []string{"é "}},
	}
	for _, c := range cases {
		g, err := ParseGBNF(c.gbnf)
		if err != nil {
			t.Fatalf("%q: %v", c.gbnf, err)
		}
		pieces := [][]byte{nil, []byte("a"), []byte("ab"), []byte("abc"), []byte("x"), []byte("xy"), []byte("é"), {0xc3}, {0xa9}, []byte("привет"), []byte("при"), []byte("\n\""), []byte("q12"), []byte("3")}
		v := NewVocab(pieces)
		for _, s := range c.yes {
			if !g.Match([]byte(s)) {
				t.Errorf("%q should match %q", c.gbnf, s)
			}
			m := NewMatcher(g)
			for i := range len(s) {
				checkMask(t, m, v, pieces)
				m.Advance([]byte{s[i]})
			}
		}
		for _, s := range c.no {
			if g.Match([]byte(s)) {
				t.Errorf("%q should not match %q", c.gbnf, s)
			}
		}
	}
}

func TestGBNFErrors(t *testing.T) {
	for _, src := range []string{
		``, `root`, `root ::= "a`, `root ::= [a-`, `root ::= x`, `a ::= "x"`,
		`root ::= root "a"`, `root ::= "a"? root`, `root ::= ("a"`, `root ::= "a"{3,1}`,
		`root ::= "a" b ::= "c"`, `root ::= "a"{5000}`, `root ::= "\q"`, `root ::= [z-a]`,
		"root ::= \"a\"\nroot ::= \"b\"",
	} {
		if _, err := ParseGBNF(src); err == nil {
			t.Errorf("%q: accepted", src)
		}
	}
}

func FuzzParseGBNF(f *testing.F) {
	for _, s := range []string{`root ::= "a" | [b-d]* x
x ::= ( "y" | [^z] ){1,3}`, `root ::= "\x41\u00e9"+ .?`, `root ::= [\]\\-]`} {
		f.Add(s, []byte("ab"))
	}
	f.Fuzz(func(t *testing.T, src string, input []byte) {
		g, err := ParseGBNF(src)
		if err != nil {
			return
		}
		m := NewMatcher(g)
		pieces := [][]byte{{'a'}, {'b'}, []byte("ab"), {0xc3}, {0xa9}, nil, []byte("x\n")}
		v := NewVocab(pieces)
		for _, c := range input {
			checkMask(t, m, v, pieces)
			if !m.Advance([]byte{c}) {
				return
			}
		}
	})
}

// checkMask asserts the trie walk agrees with advancing a copy over each
// token's piece on its own.
func checkMask(t *testing.T, m *Matcher, v *Vocab, pieces [][]byte) {
	t.Helper()
	mk := m.Mask(v)
	for id, p := range pieces {
		c := m.Clone()
		want := len(p) > 0 && c.Advance(p)
		if mk.Has(int32(id)) != want {
			t.Fatalf("token %d %q: mask says %v, advancing says %v", id, p, mk.Has(int32(id)), want)
		}
	}
}
