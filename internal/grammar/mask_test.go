package grammar

import (
	"math/rand/v2"
	"testing"
)

// The memoised trie walk (stepMemo) agrees with advancing over each piece
// on its own, along random allowed paths through a schema with bounded
// strings, where states do not recur and every walk fills the memo anew.
func TestMaskAgreesWithAdvancingInBoundedStrings(t *testing.T) {
	schema, _, err := CompileSchema([]byte(`{"type":"object","additionalProperties":false,"required":["name","notes"],"properties":{
 "name":{"type":"string","maxLength":5},"notes":{"type":"array","items":{"type":"string","minLength":1,"maxLength":3},"maxItems":3}}}`), false)
	if err != nil {
		t.Fatal(err)
	}
	// Stacks that split the plain bytes (not uniform), a plain loop that
	// steps to itself, and one that ends after two.
	mixed, err := ParseGBNF(`root ::= [a-m]+ "." | [ -~]{2} | "q" [ -~]* "."`)
	if err != nil {
		t.Fatal(err)
	}
	var pieces [][]byte
	for c := byte(0x20); c < 0x7f; c++ {
		pieces = append(pieces, []byte{c})
	}
	for _, p := range []string{`"a`, `ab"`, `abc`, `abcdef`, "\u00e9", "\xc3", "\xa9", `\n`, `\u00`, `", "`, `"]`, `"]}`, `{"`, `": "`, `name`, `notes`, `": [`, "\n ", `"\`, `\"`, `qqq`, `q abc`, `am`, `mn`, `a"`} {
		pieces = append(pieces, []byte(p))
	}
	v := NewVocab(pieces)
	for seed := range uint64(60) {
		g := schema
		if seed%2 == 1 {
			g = mixed
		}
		rng := rand.New(rand.NewPCG(seed, 9))
		m := NewMatcher(g)
		for step := 0; step < 60 && !m.Done(); step++ {
			checkMask(t, m, v, pieces)
			mk := m.Mask(v)
			var allowed []int32
			for id := range pieces {
				if mk.Has(int32(id)) {
					allowed = append(allowed, int32(id))
				}
			}
			if len(allowed) == 0 {
				break
			}
			if !m.Advance(pieces[allowed[rng.IntN(len(allowed))]]) {
				t.Fatal("an allowed piece was refused")
			}
		}
	}
}
