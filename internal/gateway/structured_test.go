package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/api"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

type nopConstraint struct{}

func (nopConstraint) Mask([]float32) {}
func (nopConstraint) Accept(int32)   {}

// A constraint without a source cannot be applied by the decode worker
// (only the source crosses the wire): the gateway refuses it as invalid,
// before any worker hears of it, rather than let decode run unconstrained.
func TestSourcelessConstraintIsRefusedAtTheGateway(t *testing.T) {
	pre, dec := startWorker(t, worker.Prefill, smallPool), startWorker(t, worker.Decode, smallPool)
	g := newGateway(t, []*node{pre}, []*node{dec})
	req := engine.Request{Prompt: []int32{5, 6, 7}, MaxTokens: 2}
	req.Sampling.Constraint = nopConstraint{}
	if _, err := g.Submit(context.Background(), req); !errors.Is(err, engine.ErrInvalidRequest) {
		t.Fatalf("constrained request: %v, want ErrInvalidRequest", err)
	}
	if pre.hits.Load()+dec.hits.Load() != 0 {
		t.Fatalf("workers heard of a refused request: prefill %d, decode %d", pre.hits.Load(), dec.hits.Load())
	}
}

// apiOverGateway serves the OpenAI API over g, as `bulkhead gateway` does.
func apiOverGateway(t *testing.T, g *Gateway) *httptest.Server {
	t.Helper()
	s := api.NewServer(api.Config{ModelID: g.Model()}, g, g.Tokenizer(), nil, quiet)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv
}

func postJSON(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// Structured output works disaggregated: the decode worker compiles the
// request's constraint from its source and masks every token it samples,
// so the text is what the schema, grammar or regex allows. The copy model
// would otherwise echo the prompt's words, which none of them allow.
func TestStructuredOutputThroughTheGateway(t *testing.T) {
	pre, dec := startWorker(t, worker.Prefill, smallPool), startWorker(t, worker.Decode, smallPool)
	g := newGateway(t, []*node{pre}, []*node{dec})
	srv := apiOverGateway(t, g)
	prompt := `"prompt":"the quick brown fox jumps over the lazy dog and the quick brown fox","max_tokens":200`
	cases := []struct {
		name, extra string
		valid       func(string) bool
	}{
		{"json_schema", `"response_format":{"type":"json_schema","json_schema":{"name":"p","strict":true,"schema":{"type":"object","additionalProperties":false,"required":["ok","n"],"properties":{"ok":{"type":"boolean"},"n":{"enum":[1,2,3]}}}}}`,
			func(s string) bool {
				var o struct {
					Ok *bool
					N  *int
				}
				d := json.NewDecoder(strings.NewReader(s))
				d.DisallowUnknownFields()
				return d.Decode(&o) == nil && o.Ok != nil && o.N != nil && *o.N >= 1 && *o.N <= 3
			}},
		{"gbnf", `"grammar":"root ::= \"colour: \" (\"red\" | \"green\" | \"blue\") \".\""`,
			regexp.MustCompile(`^colour: (red|green|blue)\.$`).MatchString},
		{"regex", `"regex":"[0-9]{3}-[a-c]{2}"`, regexp.MustCompile(`^[0-9]{3}-[a-c]{2}$`).MatchString},
	}
	for _, c := range cases {
		before := dec.hits.Load()
		status, body := postJSON(t, srv.URL+"/v1/completions", `{`+prompt+`,`+c.extra+`}`)
		if status != 200 {
			t.Fatalf("%s: %d %s", c.name, status, body)
		}
		var r struct {
			Choices []struct {
				Text         string
				FinishReason string `json:"finish_reason"`
			}
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil || len(r.Choices) != 1 {
			t.Fatalf("%s: %v %s", c.name, err, body)
		}
		if got := r.Choices[0]; !c.valid(got.Text) || got.FinishReason != "stop" {
			t.Errorf("%s: output %q (finish %s) does not validate", c.name, got.Text, got.FinishReason)
		}
		if dec.hits.Load() == before {
			t.Errorf("%s: the decode worker was not asked", c.name)
		}
	}
	pre.drained(t)
	dec.drained(t)
}

// An invalid schema (or grammar) is the client's 400, naming the field,
// answered at the gateway before any worker is asked.
func TestInvalidConstraintIs400AtTheGateway(t *testing.T) {
	pre, dec := startWorker(t, worker.Prefill, smallPool), startWorker(t, worker.Decode, smallPool)
	g := newGateway(t, []*node{pre}, []*node{dec})
	srv := apiOverGateway(t, g)
	for _, c := range []struct{ extra, param string }{
		{`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","required":["b"],"properties":{}}}}`, "response_format"},
		{`"grammar":"root ::= \"a"`, "grammar"},
	} {
		status, body := postJSON(t, srv.URL+"/v1/completions", `{"prompt":"hi there","max_tokens":4,`+c.extra+`}`)
		var e struct{ Error struct{ Param string } }
		json.Unmarshal([]byte(body), &e)
		if status != 400 || e.Error.Param != c.param {
			t.Errorf("%s: %d %s, want 400 param %s", c.extra, status, body, c.param)
		}
	}
	if pre.hits.Load()+dec.hits.Load() != 0 {
		t.Fatalf("workers heard of refused requests: prefill %d, decode %d", pre.hits.Load(), dec.hits.Load())
	}
}
