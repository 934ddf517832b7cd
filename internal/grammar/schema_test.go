package grammar

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

// testVocab is a small byte-level vocabulary: printable ASCII, a few
// UTF-8 pieces (whole and split), JSON punctuation words, and token 0 as
// the end token (empty piece).
func testVocab() [][]byte {
	pieces := [][]byte{nil}
	for c := byte(0x20); c < 0x7f; c++ {
		pieces = append(pieces, []byte{c})
	}
	for _, w := range []string{"\n", "\t", "é", "日本", "\xe6", "\x97\xa5", `{"`, `":`, `",`, `"}`, "true", "false", "null", "na", "me", "\\u00e9", "12", ", "} {
		pieces = append(pieces, []byte(w))
	}
	return pieces
}

// generate draws tokens with random logits under g until the end token or
// limit tokens; it reports the bytes and whether the end token came.
func generate(g *Grammar, v *Vocab, pieces [][]byte, rng *rand.Rand, limit int) ([]byte, bool) {
	c := NewConstraint(g, v, func(id int32) []byte { return pieces[id] }, []int32{0})
	logits := make([]float32, len(pieces))
	var out []byte
	for range limit {
		for i := range logits {
			logits[i] = float32(rng.NormFloat64() * 2)
		}
		c.Mask(logits)
		if c.Accepting() && !math.IsInf(float64(logits[0]), -1) {
			return out, true // the test sampler ends as soon as it may
		}
		best := int32(-1)
		for i, l := range logits {
			if !math.IsInf(float64(l), -1) && (best < 0 || l > logits[best]) {
				best = int32(i)
			}
		}
		if best <= 0 {
			return out, best == 0
		}
		c.Accept(best)
		out = append(out, pieces[best]...)
	}
	return out, false
}

// schemaGen draws random schemas within what CompileSchema supports.
func schemaGen(depth int) *rapid.Generator[map[string]any] {
	return rapid.Custom(func(t *rapid.T) map[string]any {
		kinds := []string{"string", "number", "integer", "boolean", "null", "enum", "const", "types"}
		if depth > 0 {
			kinds = append(kinds, "object", "object", "array", "anyOf")
		}
		switch kind := rapid.SampledFrom(kinds).Draw(t, "kind"); kind {
		case "string":
			s := map[string]any{"type": "string"}
			if rapid.Bool().Draw(t, "bounded") {
				lo := rapid.IntRange(0, 3).Draw(t, "minLength")
				s["minLength"], s["maxLength"] = lo, lo+rapid.IntRange(0, 5).Draw(t, "span")
			}
			return s
		case "enum":
			return map[string]any{"enum": rapid.SliceOfN(scalarGen(), 1, 4).Draw(t, "enum")}
		case "const":
			return map[string]any{"const": scalarGen().Draw(t, "const")}
		case "types":
			return map[string]any{"type": rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"string", "number", "integer", "boolean", "null"}), 1, 3, rapid.ID).Draw(t, "types")}
		case "object":
			n := rapid.IntRange(0, 4).Draw(t, "props")
			props := map[string]any{}
			var req []string
			for i := range n {
				name := rapid.SampledFrom([]string{"a", "name", "x y", "é", `q"`, "id"}).Draw(t, "name") + fmt.Sprint(i)
				props[name] = schemaGen(depth-1).Draw(t, "prop")
				if rapid.Bool().Draw(t, "required") {
					req = append(req, name)
				}
			}
			s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
			if len(req) > 0 {
				s["required"] = req
			}
			return s
		case "array":
			s := map[string]any{"type": "array", "items": schemaGen(depth-1).Draw(t, "items")}
			if rapid.Bool().Draw(t, "bounded") {
				lo := rapid.IntRange(0, 2).Draw(t, "minItems")
				s["minItems"], s["maxItems"] = lo, lo+rapid.IntRange(0, 3).Draw(t, "span")
			}
			return s
		case "anyOf":
			return map[string]any{"anyOf": rapid.SliceOfN(schemaGen(depth-1), 1, 3).Draw(t, "anyOf")}
		default:
			return map[string]any{"type": kind}
		}
	})
}

func scalarGen() *rapid.Generator[any] {
	return rapid.OneOf(
		rapid.Map(rapid.StringMatching(`[a-z"\\é ]{0,6}`), func(s string) any { return s }),
		rapid.Map(rapid.IntRange(-1000, 1000), func(i int) any { return i }),
		rapid.Map(rapid.Float64Range(-10, 10), func(f float64) any { return f }),
		rapid.Just[any](true), rapid.Just[any](nil),
	)
}

// TestSchemaOutputValidates is the property: whatever the logits, output
// constrained by a schema's grammar is JSON that the schema accepts.
func TestSchemaOutputValidates(t *testing.T) {
	if f := flag.Lookup("rapid.checks"); f != nil && f.Value.String() == f.DefValue {
		f.Value.Set("1000") // the issue asks for at least 1,000 schemas
		defer f.Value.Set(f.DefValue)
	}
	pieces := testVocab()
	v := NewVocab(pieces)
	n := 0
	defer func() { t.Logf("%d schemas checked", n) }()
	rapid.Check(t, func(t *rapid.T) {
		schema := schemaGen(3).Draw(t, "schema")
		raw, _ := json.Marshal(schema)
		g, src, err := CompileSchema(raw, true)
		if err != nil {
			t.Fatalf("compile %s: %v", raw, err)
		}
		rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))
		out, ended := generate(g, v, pieces, rng, 20000)
		if !ended {
			t.Fatalf("schema %s: no end after %d bytes: %q\n%s", raw, len(out), out, src)
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		var x any
		if err := dec.Decode(&x); err != nil || dec.More() || !utf8.Valid(out) {
			t.Fatalf("schema %s: output %q does not parse: %v", raw, out, err)
		}
		n++
		if os.Getenv("GRAMMAR_SHOW") != "" && n%100 == 0 {
			fmt.Printf("%s\n  -> %s\n", raw, out)
		}
		var s any
		json.Unmarshal(raw, &s)
		if why := validate(s, x); why != "" {
			t.Fatalf("schema %s: output %s: %s", raw, out, why)
		}
	})
}

// validate is a small JSON-schema validator for the generated keywords;
// it returns why x fails s, or "".
func validate(s, x any) string {
	m := s.(map[string]any)
	if c, ok := m["const"]; ok {
		if !jsonEqual(c, x) {
			return fmt.Sprintf("%v is not const %v", x, c)
		}
		return ""
	}
	if e, ok := m["enum"]; ok {
		for _, c := range e.([]any) {
			if jsonEqual(c, x) {
				return ""
			}
		}
		return fmt.Sprintf("%v not in enum %v", x, e)
	}
	if a, ok := m["anyOf"]; ok {
		var whys []string
		for _, sub := range a.([]any) {
			why := validate(sub, x)
			if why == "" {
				return ""
			}
			whys = append(whys, why)
		}
		return "no anyOf branch: " + strings.Join(whys, "; ")
	}
	var types []any
	switch t := m["type"].(type) {
	case string:
		types = []any{t}
	case []any:
		types = t
	}
	var whys []string
	for _, t := range types {
		why := validateType(m, t.(string), x)
		if why == "" {
			return ""
		}
		whys = append(whys, why)
	}
	return strings.Join(whys, "; ")
}

func validateType(m map[string]any, t string, x any) string {
	switch t {
	case "null":
		if x != nil {
			return "not null"
		}
	case "boolean":
		if _, ok := x.(bool); !ok {
			return "not boolean"
		}
	case "number", "integer":
		n, ok := x.(json.Number)
		if !ok {
			return "not a number"
		}
		if t == "integer" && strings.ContainsAny(n.String(), ".eE") {
			return "not an integer"
		}
	case "string":
		s, ok := x.(string)
		if !ok {
			return "not a string"
		}
		n := utf8.RuneCountInString(s)
		if lo, ok := m["minLength"].(float64); ok && n < int(lo) {
			return "too short"
		}
		if hi, ok := m["maxLength"].(float64); ok && n > int(hi) {
			return "too long"
		}
	case "array":
		a, ok := x.([]any)
		if !ok {
			return "not an array"
		}
		if lo, ok := m["minItems"].(float64); ok && len(a) < int(lo) {
			return "too few items"
		}
		if hi, ok := m["maxItems"].(float64); ok && len(a) > int(hi) {
			return "too many items"
		}
		for _, it := range a {
			if why := validate(m["items"], it); why != "" {
				return "item: " + why
			}
		}
	case "object":
		o, ok := x.(map[string]any)
		if !ok {
			return "not an object"
		}
		props, _ := m["properties"].(map[string]any)
		for k, v := range o {
			sub, ok := props[k]
			if !ok {
				return fmt.Sprintf("additional property %q", k)
			}
			if why := validate(sub, v); why != "" {
				return k + ": " + why
			}
		}
		req, _ := m["required"].([]any)
		for _, r := range req {
			if _, ok := o[r.(string)]; !ok {
				return fmt.Sprintf("missing required %q", r)
			}
		}
	}
	return ""
}

// jsonEqual compares a schema value with a decoded (UseNumber) value.
func jsonEqual(want, got any) bool {
	if n, ok := got.(json.Number); ok {
		f, err := n.Float64()
		w, isNum := want.(float64)
		return err == nil && isNum && f == w
	}
	return reflect.DeepEqual(want, got)
}
