package toolcall

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/grammar"
)

var testTools = []Tool{
	{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["city","unit"],
		"properties":{"city":{"type":"string","minLength":1,"maxLength":12},"unit":{"enum":["celsius","fahrenheit"]}}}`)},
	{Name: "add", Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["a","b"],
		"properties":{"a":{"type":"integer"},"b":{"type":"integer"}}}`)},
}

// validArgs checks a call's arguments against testTools' schemas by hand.
func validArgs(c Call) bool {
	dec := json.NewDecoder(strings.NewReader(c.Arguments))
	dec.DisallowUnknownFields()
	switch c.Name {
	case "get_weather":
		var a struct{ City, Unit *string }
		return dec.Decode(&a) == nil && a.City != nil && a.Unit != nil && len(*a.City) >= 1 &&
			(*a.Unit == "celsius" || *a.Unit == "fahrenheit")
	case "add":
		var a struct{ A, B *int64 }
		return dec.Decode(&a) == nil && a.A != nil && a.B != nil
	}
	return false
}

// sample draws an output from g over a byte vocabulary (token b is byte b,
// token 256 is end of generation) with random logits, as a sampler with
// the grammar's mask would.
func sample(t *testing.T, g *grammar.Grammar, rng *rand.Rand) (string, bool) {
	pieces := make([][]byte, 257)
	for i := range 256 {
		pieces[i] = []byte{byte(i)}
	}
	c := grammar.NewConstraint(g, grammar.NewVocab(pieces), func(id int32) []byte {
		if id >= 0 && id < 256 {
			return pieces[id]
		}
		return nil
	}, []int32{256})
	logits := make([]float32, 257)
	var out []byte
	for range 4000 {
		for i := range logits {
			logits[i] = float32(rng.NormFloat64())
		}
		logits[256] += 2 // end soon once allowed, so outputs stay short
		c.Mask(logits)
		best := 0
		for i := range logits {
			if logits[i] > logits[best] {
				best = i
			}
		}
		if math.IsInf(float64(logits[best]), -1) {
			return string(out), false
		}
		if best == 256 {
			return string(out), true
		}
		c.Accept(int32(best))
		out = append(out, byte(best))
	}
	return string(out), false
}

// Every family's forcing grammar yields outputs that its own parser reads
// as calls to the allowed tools, with arguments valid against the schemas.
func TestGrammarForcesParsableValidCalls(t *testing.T) {
	for _, f := range []Family{Hermes, Llama3, Mistral, MistralArgs, Harmony, Functionary, Apriel} {
		for _, c := range []Choice{{Mode: "required"}, {Mode: "function", Name: "add"}} {
			for _, parallel := range []bool{false, true} {
				src, err := Grammar(f, testTools, c, parallel)
				if err != nil {
					t.Fatalf("%s %+v: %v", f, c, err)
				}
				g, err := grammar.ParseGBNF(src)
				if err != nil {
					t.Fatalf("%s %+v: compiling\n%s\n%v", f, c, src, err)
				}
				names := map[string]bool{}
				for seed := range uint64(25) {
					out, ended := sample(t, g, rand.New(rand.NewPCG(seed, uint64(len(f)))))
					if !ended {
						t.Fatalf("%s %+v seed %d: no end within the limit: %q", f, c, seed, out)
					}
					r := Parse(f, out)
					if len(r.Calls) == 0 || strings.TrimSpace(r.Content) != "" || (!parallel && len(r.Calls) != 1) {
						t.Fatalf("%s %+v parallel %v seed %d: %q parsed to %+v", f, c, parallel, seed, out, r)
					}
					for _, call := range r.Calls {
						if !validArgs(call) || (c.Mode == "function" && call.Name != c.Name) {
							t.Fatalf("%s %+v seed %d: call %+v does not validate (output %q)", f, c, seed, call, out)
						}
						names[call.Name] = true
					}
				}
				if c.Mode == "required" && len(names) < 2 {
					t.Errorf("%s required: only %v called in 25 samples; both tools should be reachable", f, names)
				}
			}
		}
	}
}

func TestGrammarRefusesWhatItCannotForce(t *testing.T) {
	if _, err := Grammar(None, testTools, Choice{Mode: "required"}, false); err == nil {
		t.Error("family None: no error")
	}
	bad := []Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object","patternProperties":{}}`)}}
	_, err := Grammar(Hermes, bad, Choice{Mode: "required"}, false)
	if fe, ok := err.(*FieldError); !ok || fe.Path != "tools[0].function.parameters" {
		t.Errorf("unsupported keyword: err = %v, want a FieldError at tools[0].function.parameters", err)
	}
}

// Literal text in a schema that looks like a rule name is not renamed.
func TestRenameRulesLeavesLiteralsAlone(t *testing.T) {
	got := renameRules(`root ::= s0 "s1 root" [s2] x{1,2}`+"\n"+`s0 ::= "\"s3\"" ws`, "t1")
	want := `t1root ::= t1s0 "s1 root" [s2] x{1,2}` + "\n" + `t1s0 ::= "\"s3\"" ws`
	if got != want {
		t.Fatalf("renameRules =\n%s\nwant\n%s", got, want)
	}
}
