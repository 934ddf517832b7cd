package grammar

import (
	"encoding/json"
	"testing"
)

// A Spec survives the wire (JSON) and compiles to the grammar its kind
// names; the constraint built from it reports it back, which is how the
// gateway learns what to send the decode worker.
func TestSpecCompilesAndTravels(t *testing.T) {
	v := NewVocab([][]byte{[]byte("a"), []byte("b")})
	for _, c := range []struct {
		spec     Spec
		yes, not string
	}{
		{Spec{Kind: KindJSONObject}, `{"a": 1}`, `[1]`},
		{Spec{Kind: KindJSONSchema, Source: `{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"boolean"}}}`, Strict: true}, `{"a": true}`, `{"a": 1}`},
		{Spec{Kind: KindGBNF, Source: `root ::= "x" [0-9]+`}, "x12", "x"},
		{Spec{Kind: KindRegex, Source: `a|bc`}, "bc", "b"},
	} {
		b, _ := json.Marshal(c.spec)
		var back Spec
		if err := json.Unmarshal(b, &back); err != nil || back != c.spec {
			t.Fatalf("%+v: JSON round trip gave %+v, %v", c.spec, back, err)
		}
		g, err := back.Compile()
		if err != nil {
			t.Fatalf("%+v: %v", c.spec, err)
		}
		if !g.Match([]byte(c.yes)) || g.Match([]byte(c.not)) {
			t.Errorf("%+v: matches %q %v, %q %v", c.spec, c.yes, g.Match([]byte(c.yes)), c.not, g.Match([]byte(c.not)))
		}
		got, ok := NewConstraint(g, v, func(int32) []byte { return nil }, nil).Spec()
		if !ok || got != c.spec {
			t.Errorf("%+v: constraint reports %+v %v", c.spec, got, ok)
		}
	}
	if _, err := (Spec{Kind: "yaml"}).Compile(); err == nil {
		t.Error("an unknown kind compiled")
	}
	g, _ := ParseGBNF(`root ::= "a"`)
	if _, ok := NewConstraint(g, v, nil, nil).Spec(); ok {
		t.Error("a grammar built without a Spec reports one")
	}
}
