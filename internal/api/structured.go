package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
			gg, err := gc.get(fmt.Sprintf("schema %v %s", strict, f.JSONSchema.Schema), func() (*grammar.Grammar, error) {
				g, _, err := grammar.CompileSchema(f.JSONSchema.Schema, strict)
				return g, err
			})
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
		gg, err := gc.get("gbnf "+*r.Grammar, func() (*grammar.Grammar, error) { return grammar.ParseGBNF(*r.Grammar) })
		if err != nil {
			return nil, invalid("grammar", "invalid_value", "grammar: %v", err)
		}
		if e := set("grammar", gg); e != nil {
			return nil, e
		}
	}
	if r.Regex != nil {
		gg, err := gc.get("regex "+*r.Regex, func() (*grammar.Grammar, error) { return grammar.CompileRegex(*r.Regex) })
		if err != nil {
			return nil, invalid("regex", "invalid_value", "regex: %v", err)
		}
		if e := set("regex", gg); e != nil {
			return nil, e
		}
	}
	return g, nil
}

// vocabulary is the tokenizer's trie for masks, built on first use.
type vocabulary struct {
	once   sync.Once
	v      *grammar.Vocab
	pieces [][]byte
	eog    []int32
	err    error
}

// Control tokens (controlChecker, special.go) are never allowed by a
// grammar: their text is not output text.

func (s *Server) vocab() (*vocabulary, error) {
	vc := &s.gvocab
	vc.once.Do(func() {
		vs, ok := s.tok.(vocabSizer)
		if !ok {
			vc.err = errors.New("this model's tokenizer does not expose its vocabulary, which structured output needs")
			return
		}
		cc, _ := s.tok.(controlChecker)
		n := vs.VocabSize()
		vc.pieces = make([][]byte, n)
		for id := range int32(n) {
			switch {
			case s.tok.IsEOG(id):
				vc.eog = append(vc.eog, id)
			case id == s.tok.BOS() || (cc != nil && cc.IsControl(id)):
			default:
				vc.pieces[id] = s.tok.Piece(id)
			}
		}
		vc.v = grammar.NewVocab(vc.pieces)
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
	p.newConstraint = func() sample.Constraint {
		return grammar.NewConstraint(g, vc.v, func(id int32) []byte {
			if id >= 0 && int(id) < len(vc.pieces) {
				return vc.pieces[id]
			}
			return nil
		}, vc.eog)
	}
	p.sampling.Constraint = p.newConstraint()
	return nil
}

// grammarCache keeps compiled grammars by source, so that requests with
// the same schema or grammar share one Grammar and with it its memo of
// token masks. It holds at most maxCachedGrammars and then starts again.
type grammarCache struct {
	mu sync.Mutex
	m  map[string]*grammar.Grammar
}

const maxCachedGrammars = 256

func (c *grammarCache) get(key string, compile func() (*grammar.Grammar, error)) (*grammar.Grammar, error) {
	c.mu.Lock()
	g, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return g, nil
	}
	g, err := compile()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedGrammars {
		c.m = map[string]*grammar.Grammar{}
	}
	c.m[key] = g
	c.mu.Unlock()
	return g, nil
}
