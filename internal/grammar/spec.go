package grammar

import "fmt"

// The kinds of constraint a Spec names.
const (
	KindJSONObject = "json_object" // any JSON object
	KindJSONSchema = "json_schema" // Source is the schema
	KindGBNF       = "gbnf"        // Source is the grammar text
	KindRegex      = "regex"       // Source is the expression
)

// Spec is a constraint as the request gave it, before compilation. It is
// what crosses the worker wire: a compiled grammar's masks are tied to the
// process's vocabulary, and a matcher is live state, so a decode worker
// compiles the Spec itself over its own vocabulary. It is comparable, so
// it keys caches of compiled grammars.
type Spec struct {
	Kind   string `json:"kind"`
	Source string `json:"source,omitempty"`
	Strict bool   `json:"strict,omitempty"` // json_schema's "strict"
}

// Compile compiles s; the grammar remembers s (Constraint.Spec).
func (s Spec) Compile() (*Grammar, error) {
	var (
		g   *Grammar
		err error
	)
	switch s.Kind {
	case KindJSONObject:
		return JSONObject(), nil
	case KindJSONSchema:
		g, _, err = CompileSchema([]byte(s.Source), s.Strict)
	case KindGBNF:
		g, err = ParseGBNF(s.Source)
	case KindRegex:
		g, err = CompileRegex(s.Source)
	default:
		return nil, fmt.Errorf("grammar: unknown constraint kind %q", s.Kind)
	}
	if err != nil {
		return nil, err
	}
	g.spec = s
	return g, nil
}

// Spec is the source the constraint's grammar was compiled from; false
// for a grammar built otherwise.
func (c *Constraint) Spec() (Spec, bool) {
	s := c.m.g.spec
	return s, s.Kind != ""
}
