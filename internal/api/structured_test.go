package api

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
)

// A malformed or unsupported grammar is a 400 naming the field it came in.
func TestStructuredOutputRefusals(t *testing.T) {
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	for _, c := range []struct{ extra, param, msg string }{
		{`"grammar":"root ::= \"a"`, "grammar", "unterminated literal"},
		{`"grammar":"root ::= root \"a\""`, "grammar", "left-recursive"},
		{`"grammar":"start ::= \"a\""`, "grammar", "root"},
		{`"regex":"(a"`, "regex", "missing )"},
		{`"response_format":{"type":"yaml"}`, "response_format", "yaml"},
		{`"response_format":{"type":"json_schema"}`, "response_format", "json_schema.schema"},
		{`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"string","pattern":"a+"}}}`, "response_format", `"pattern"`},
		{`"response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":{"type":"object","properties":{"a":{"type":"string"}}}}}`, "response_format", "additionalProperties"},
		{`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","required":["b"],"properties":{}}}}`, "response_format", `"b" is required`},
		{`"response_format":{"type":"json_object","extra":1}`, "response_format", "extra"},
		{`"response_format":{"type":"json_object"},"grammar":"root ::= \"a\""`, "grammar", "cannot both"},
	} {
		for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
			base := `"prompt":"hi"`
			if strings.Contains(path, "chat") {
				base = `"messages":[{"role":"user","content":"hi"}]`
			}
			status, _, body := env.post(t, path, "", `{`+base+`,`+c.extra+`}`)
			var e struct {
				Error struct{ Param, Message string }
			}
			json.Unmarshal([]byte(body), &e)
			if status != 400 || e.Error.Param != c.param || !strings.Contains(e.Error.Message, c.msg) {
				t.Errorf("%s %s: got %d %s; want 400 param %q mentioning %q", path, c.extra, status, body, c.param, c.msg)
			}
		}
	}
}

// The constraint the handler builds, driven with random logits over the
// server's vocabulary, spells JSON that the request's schema accepts.
func TestStructuredOutputConstraintFromTheAPI(t *testing.T) {
	eng := apitest.NewFakeEngine()
	env := newTestEnv(t, eng, nil)
	for _, c := range []struct {
		rf    string
		check func(string) bool
	}{
		{`{"type":"json_object"}`, func(s string) bool { var o map[string]any; return json.Unmarshal([]byte(s), &o) == nil }},
		{`{"type":"json_schema","json_schema":{"name":"p","strict":true,"schema":{"type":"object","additionalProperties":false,"required":["ok"],"properties":{"ok":{"type":"boolean"}}}}}`,
			func(s string) bool {
				var o struct{ Ok *bool }
				return json.Unmarshal([]byte(s), &o) == nil && o.Ok != nil
			}},
	} {
		for seed := range uint64(20) {
			status, _, body := env.post(t, "/v1/completions", "", `{"prompt":"x","max_tokens":1,"response_format":`+c.rf+`}`)
			if status != 200 {
				t.Fatalf("%s: %d %s", c.rf, status, body)
			}
			out, ended := drive(eng.LastRequest(), rand.New(rand.NewPCG(seed, 2)), 20000)
			if !ended || !c.check(out) {
				t.Fatalf("%s seed %d: output %q (ended %v) does not validate", c.rf, seed, out, ended)
			}
		}
	}
}

// drive samples req's constraint like the engine's sampler would, over
// ByteTokenizer's 259 tokens, with random logits, ending at the first EOS
// the mask allows.
func drive(req engine.Request, rng *rand.Rand, limit int) (string, bool) {
	c := req.Sampling.Constraint
	if c == nil {
		return "", false
	}
	tok := apitest.ByteTokenizer{}
	logits := make([]float32, 259)
	var out []byte
	for range limit {
		for i := range logits {
			logits[i] = float32(rng.NormFloat64())
		}
		c.Mask(logits)
		if !math.IsInf(float64(logits[apitest.EOS]), -1) {
			return string(out), true
		}
		best := 0
		for i := range logits {
			if logits[i] > logits[best] {
				best = i
			}
		}
		if math.IsInf(float64(logits[best]), -1) {
			return string(out), false
		}
		c.Accept(int32(best))
		out = append(out, tok.Piece(int32(best))...)
	}
	return string(out), false
}
