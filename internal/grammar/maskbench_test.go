package grammar

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/tokenizer"
)

// BenchmarkMaskWalk is one uncached mask (a whole trie walk) over GPT-2's
// vocabulary in states that do not recur: inside a string with maxLength
// (each length left is its own state), and between an object's members.
func BenchmarkMaskWalk(b *testing.B) {
	path := filepath.Join("..", "..", "..", "shared", "testdata", "vocab", "ggml-vocab-gpt-2.gguf")
	if _, err := os.Stat(path); err != nil {
		b.Skipf("vocabulary %s absent (the shared test data is not mounted): %v", path, err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		b.Fatal(err)
	}
	v := NewTokenVocab(tok).Vocab()
	g, _, err := CompileSchema([]byte(`{"type":"object","additionalProperties":false,"required":["name","notes"],"properties":{
 "name":{"type":"string","maxLength":40},"notes":{"type":"array","items":{"type":"string","maxLength":80},"maxItems":8}}}`), false)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, prefix string }{
		{"in_bounded_string", `{"name": "ab`},
		{"after_member", `{"name": "ab"`},
	} {
		b.Run(c.name, func(b *testing.B) {
			m := NewMatcher(g)
			if !m.Advance([]byte(c.prefix)) {
				b.Fatalf("prefix %q refused", c.prefix)
			}
			out := make(Mask, (v.n+63)/64)
			for b.Loop() {
				clear(out)
				m.walk(v, 0, &m.cur, m.steps.row(m.cur.key), out)
				m.steps.reset()
			}
		})
	}
}
