package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"sync"

	"github.com/bulkhead-llm/bulkhead/internal/grammar"
	"github.com/bulkhead-llm/bulkhead/internal/sample"
)

// Structured output: response_format (json_object, json_schema), grammar
// (GBNF, as llama-server accepts it) and regex each compile to a grammar,
// which the sampler applies as a token mask (grammar.Constraint) after the
// logit adjustments. At most one of them per request.

// structuredRequest holds the fields; commonRequest embeds it.
type structuredRequest struct {
	ResponseFormat json.RawMessage `json:"response_format"`
	Grammar        *string         `json:"grammar"`
	Regex          *string         `json:"regex"`
}

type responseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict"`
	} `json:"json_schema"`
}

// compile returns the request's grammar, or nil when output is free.
func (r *structuredRequest) compile(gc *grammarCache) (*grammar.Grammar, *apiError) {
	var g *grammar.Grammar
	given := ""
	set := func(param string, gg *grammar.Grammar) *apiError {
		if given != "" {
			return invalid(param, "invalid_value", "%s and %s cannot both be given: output follows one grammar", given, param)
		}
		given, g = param, gg
		return nil
	}
	if rf := bytes.TrimSpace(r.ResponseFormat); len(rf) > 0 && string(rf) != "null" {
		var f responseFormat
		dec := json.NewDecoder(bytes.NewReader(rf))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return nil, invalid("response_format", "invalid_value", "response_format: %v", err)
		}
		switch f.Type {
		case "text":
		case "json_object":
			if e := set("response_format", grammar.JSONObject()); e != nil {
				return nil, e
			}
		case "json_schema":
			if f.JSONSchema == nil || len(f.JSONSchema.Schema) == 0 {
				return nil, invalid("response_format", "invalid_value", "response_format json_schema needs json_schema.schema")
			}
			strict := f.JSONSchema.Strict != nil && *f.JSONSchema.Strict
			gg, err := gc.get(grammar.Spec{Kind: grammar.KindJSONSchema, Source: string(f.JSONSchema.Schema), Strict: strict})
			if err != nil {
				return nil, invalid("response_format", "invalid_value", "response_format.json_schema.schema: %v", err)
			}
			if e := set("response_format", gg); e != nil {
				return nil, e
			}
		default:
			return nil, invalid("response_format", "invalid_value", `response_format type %q: use "text", "json_object" or "json_schema"`, f.Type)
		}
	}
	if r.Grammar != nil && *r.Grammar != "" {
		gg, err := gc.get(grammar.Spec{Kind: grammar.KindGBNF, Source: *r.Grammar})
		if err != nil {
			return nil, invalid("grammar", "invalid_value", "grammar: %v", err)
		}
		if e := set("grammar", gg); e != nil {
			return nil, e
		}
	}
	if r.Regex != nil {
		gg, err := gc.get(grammar.Spec{Kind: grammar.KindRegex, Source: *r.Regex})
		if err != nil {
			return nil, invalid("regex", "invalid_value", "regex: %v", err)
		}
		if e := set("regex", gg); e != nil {
			return nil, e
		}
	}
	return g, nil
}

// vocabulary is the tokenizer's vocabulary for masks, built on first use.
type vocabulary struct {
	once sync.Once
	v    *grammar.TokenVocab
	err  error
}

func (s *Server) vocab() (*vocabulary, error) {
	vc := &s.gvocab
	vc.once.Do(func() {
		t, ok := s.tok.(grammar.Tokens)
		if !ok {
			vc.err = errors.New("this model's tokenizer does not expose its vocabulary, which structured output needs")
			return
		}
		vc.v = grammar.NewTokenVocab(t)
	})
	return vc, vc.err
}

// applyStructured compiles the request's grammar, if any, into p's sampler
// settings.
func (s *Server) applyStructured(r *structuredRequest, p *genParams) *apiError {
	g, e := r.compile(&s.grammars)
	if e != nil || g == nil {
		return e
	}
	vc, err := s.vocab()
	if err != nil {
		return invalid("response_format", "unsupported_value", "%v", err)
	}
	// The constraint carries its Spec, which a gateway forwards to the
	// decode worker that samples (internal/gateway/structured.go). Each
	// forked choice gets its own: a constraint is stateful.
	p.newConstraint = func() sample.Constraint { return vc.v.Constraint(g) }
	p.sampling.Constraint = p.newConstraint()
	return nil
}

// grammarCache keeps compiled grammars by source, so that requests with
// the same schema or grammar share one Grammar and with it its memo of
// token masks. It holds at most maxCachedGrammars and then starts again.
type grammarCache struct {
	mu sync.Mutex
	m  map[grammar.Spec]*grammar.Grammar
}

const maxCachedGrammars = 256

func (c *grammarCache) get(key grammar.Spec) (*grammar.Grammar, error) {
	c.mu.Lock()
	g, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return g, nil
	}
	g, err := key.Compile()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedGrammars {
		c.m = map[grammar.Spec]*grammar.Grammar{}
	}
	c.m[key] = g
	c.mu.Unlock()
	return g, nil
}
