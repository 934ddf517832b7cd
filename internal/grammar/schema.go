package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// JSON text as GBNF. ws allows what formatted JSON uses between tokens
// but bounds it, so a sampler cannot spend its budget on blanks.
const jsonPrims = `ws ::= ( " " | "\n" [ \t]{0,20} )?
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" hex4 )
hex4 ::= [0-9a-cA-Ce-fE-F] hex hex hex | [dD] [0-7] hex hex
hex ::= [0-9a-fA-F]
integer ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
number ::= integer ( "." [0-9]{1,15} )? ( [eE] [-+]? [0-9]{1,3} )?
boolean ::= "true" | "false"
null ::= "null"
value ::= object | array | string | number | boolean | null
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
`

// hex4 excludes surrogates (\uD800-\uDFFF), so every escape decodes to one
// character and string lengths count as the schema means.

// JSONObject is the grammar of any JSON object (response_format
// json_object).
// It is one shared grammar, so its mask memo serves every request.
func JSONObject() *Grammar { return jsonObject() }

var jsonObject = sync.OnceValue(func() *Grammar {
	g, err := ParseGBNF("root ::= object\n" + jsonPrims)
	if err != nil {
		panic(err) // a constant grammar
	}
	g.spec = Spec{Kind: KindJSONObject}
	return g
})

// SchemaError names the schema location and keyword a schema was refused
// for.
type SchemaError struct {
	Path string // JSON pointer into the schema
	Msg  string
}

func (e *SchemaError) Error() string {
	p := e.Path
	if p == "" {
		p = "/"
	}
	return fmt.Sprintf("json schema at %s: %s", p, e.Msg)
}

// supported lists the keywords the compiler enforces; annotations are
// accepted and ignore nothing, since they do not constrain.
var (
	supported = []string{"type", "properties", "required", "additionalProperties", "items",
		"enum", "const", "anyOf", "minItems", "maxItems", "minLength", "maxLength"}
	annotations = []string{"title", "description", "$schema", "$comment", "examples", "default"}
)

// CompileSchema compiles a JSON schema to GBNF and then to a grammar. With
// strict (OpenAI's strict: true) every object must say
// additionalProperties: false. Keywords it cannot enforce are refused by
// name rather than ignored.
func CompileSchema(schema []byte, strict bool) (*Grammar, string, error) {
	c := &schemaCompiler{strict: strict}
	root, err := c.compile(schema, "")
	if err != nil {
		return nil, "", err
	}
	src := "root ::= " + root + "\n" + strings.Join(c.rules, "") + jsonPrims
	g, err := ParseGBNF(src)
	if err != nil {
		return nil, src, fmt.Errorf("json schema: compiled grammar: %w", err)
	}
	return g, src, nil
}

type schemaCompiler struct {
	strict bool
	rules  []string
}

func (c *schemaCompiler) rule(body string) string {
	name := fmt.Sprintf("s%d", len(c.rules))
	c.rules = append(c.rules, name+" ::= "+body+"\n")
	return name
}

func (c *schemaCompiler) compile(raw []byte, path string) (string, error) {
	raw = bytes.TrimSpace(raw)
	switch string(raw) {
	case "true":
		return "value", nil
	case "false":
		return "", &SchemaError{path, "the schema false admits no value"}
	}
	keys, fields, err := orderedObject(raw)
	if err != nil {
		return "", &SchemaError{path, "a schema must be an object or a boolean: " + err.Error()}
	}
	for _, k := range keys {
		if !slices.Contains(supported, k) && !slices.Contains(annotations, k) {
			return "", &SchemaError{path, fmt.Sprintf("keyword %q is not supported (supported: %s)", k, strings.Join(supported, ", "))}
		}
	}
	if v, ok := fields["const"]; ok {
		return literal(v)
	}
	if v, ok := fields["enum"]; ok {
		var vals []json.RawMessage
		if json.Unmarshal(v, &vals) != nil || len(vals) == 0 {
			return "", &SchemaError{path + "/enum", "enum must be a non-empty array"}
		}
		var alts []string
		for _, x := range vals {
			l, err := literal(x)
			if err != nil {
				return "", err
			}
			alts = append(alts, l)
		}
		return "( " + strings.Join(alts, " | ") + " )", nil
	}
	if v, ok := fields["anyOf"]; ok {
		var subs []json.RawMessage
		if json.Unmarshal(v, &subs) != nil || len(subs) == 0 {
			return "", &SchemaError{path + "/anyOf", "anyOf must be a non-empty array"}
		}
		if _, typed := fields["type"]; typed {
			return "", &SchemaError{path, `"type" next to "anyOf" is not supported; move it into the alternatives`}
		}
		var alts []string
		for i, s := range subs {
			e, err := c.compile(s, fmt.Sprintf("%s/anyOf/%d", path, i))
			if err != nil {
				return "", err
			}
			alts = append(alts, e)
		}
		return "( " + strings.Join(alts, " | ") + " )", nil
	}
	var types []string
	if v, ok := fields["type"]; ok {
		var one string
		if json.Unmarshal(v, &one) == nil {
			types = []string{one}
		} else if json.Unmarshal(v, &types) != nil || len(types) == 0 {
			return "", &SchemaError{path + "/type", "type must be a string or a non-empty array of strings"}
		}
	} else {
		switch {
		case fields["properties"] != nil || fields["additionalProperties"] != nil || fields["required"] != nil:
			types = []string{"object"}
		case fields["items"] != nil || fields["minItems"] != nil || fields["maxItems"] != nil:
			types = []string{"array"}
		case fields["minLength"] != nil || fields["maxLength"] != nil:
			types = []string{"string"}
		default:
			return "value", nil
		}
	}
	var alts []string
	for _, t := range types {
		var e string
		var err error
		switch t {
		case "string":
			e, err = c.str(fields, path)
		case "number", "integer", "boolean", "null":
			e = t
		case "object":
			e, err = c.object(keys, fields, path)
		case "array":
			e, err = c.array(fields, path)
		default:
			return "", &SchemaError{path + "/type", fmt.Sprintf("unknown type %q", t)}
		}
		if err != nil {
			return "", err
		}
		alts = append(alts, e)
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return "( " + strings.Join(alts, " | ") + " )", nil
}

func bound(fields map[string]json.RawMessage, key, path string) (int, bool, error) {
	v, ok := fields[key]
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.Atoi(string(bytes.TrimSpace(v)))
	if err != nil || n < 0 || n > maxRepeat {
		return 0, false, &SchemaError{path + "/" + key, fmt.Sprintf("must be an integer in [0, %d]", maxRepeat)}
	}
	return n, true, nil
}

// repeat is GBNF for min..max (max < 0: unbounded) copies of x.
func repeat(x string, lo, hi int) string {
	if hi < 0 {
		return fmt.Sprintf("%s{%d,}", x, lo)
	}
	return fmt.Sprintf("%s{%d,%d}", x, lo, hi)
}

func minMax(fields map[string]json.RawMessage, lo, hi, path string) (int, int, error) {
	mn, _, err := bound(fields, lo, path)
	if err != nil {
		return 0, 0, err
	}
	mx, has, err := bound(fields, hi, path)
	if err != nil {
		return 0, 0, err
	}
	if !has {
		mx = -1
	} else if mx < mn {
		return 0, 0, &SchemaError{path, fmt.Sprintf("%s %d is below %s %d", hi, mx, lo, mn)}
	}
	return mn, mx, nil
}

func (c *schemaCompiler) str(fields map[string]json.RawMessage, path string) (string, error) {
	mn, mx, err := minMax(fields, "minLength", "maxLength", path)
	if err != nil {
		return "", err
	}
	if mn == 0 && mx < 0 {
		return "string", nil
	}
	return c.rule(`"\"" ` + repeat("char", mn, mx) + ` "\""`), nil
}

func (c *schemaCompiler) array(fields map[string]json.RawMessage, path string) (string, error) {
	item := "value"
	if v, ok := fields["items"]; ok {
		var err error
		if item, err = c.compile(v, path+"/items"); err != nil {
			return "", err
		}
	}
	mn, mx, err := minMax(fields, "minItems", "maxItems", path)
	if err != nil {
		return "", err
	}
	it := c.rule(item + " ws")
	var body string
	switch {
	case mx == 0:
		body = ""
	case mn == 0:
		body = "( " + it + " " + repeat(`( "," ws `+it+` )`, 0, dec(mx)) + " )?"
	default:
		body = it + " " + repeat(`( "," ws `+it+` )`, mn-1, dec(mx))
	}
	return c.rule(`"[" ws ` + body + ` "]"`), nil
}

func dec(n int) int {
	if n < 0 {
		return n
	}
	return n - 1
}

func (c *schemaCompiler) object(keys []string, fields map[string]json.RawMessage, path string) (string, error) {
	closed := false
	if v, ok := fields["additionalProperties"]; ok {
		switch string(bytes.TrimSpace(v)) {
		case "false":
			closed = true
		case "true":
		default:
			return "", &SchemaError{path + "/additionalProperties", "only true or false is supported"}
		}
	}
	if c.strict && !closed {
		return "", &SchemaError{path, "strict schemas must set additionalProperties: false on every object"}
	}
	var names []string
	var props map[string]json.RawMessage
	if v, ok := fields["properties"]; ok {
		var err error
		if names, props, err = orderedObject(v); err != nil {
			return "", &SchemaError{path + "/properties", "must be an object"}
		}
	}
	var required []string
	if v, ok := fields["required"]; ok && json.Unmarshal(v, &required) != nil {
		return "", &SchemaError{path + "/required", "must be an array of strings"}
	}
	for _, r := range required {
		if _, ok := props[r]; !ok {
			return "", &SchemaError{path + "/required", fmt.Sprintf("%q is required but not in properties", r)}
		}
	}
	if len(names) == 0 && !closed {
		return "object", nil
	}
	kvs := make([]string, len(names))
	for i, n := range names {
		e, err := c.compile(props[n], path+"/properties/"+n)
		if err != nil {
			return "", err
		}
		key, _ := json.Marshal(n)
		kvs[i] = c.rule(quote(string(key)) + ` ws ":" ws ` + e + " ws")
	}
	// tail[i][first] lists properties i.. given whether one was written.
	tail := make([][2]string, len(names)+1)
	for i := len(names) - 1; i >= 0; i-- {
		for first := range 2 {
			sep := `"," ws `
			if first == 1 {
				sep = ""
			}
			with := sep + kvs[i] + " " + tail[i+1][0]
			switch {
			case slices.Contains(required, names[i]):
				tail[i][first] = c.rule(with)
			case tail[i+1][first] == "":
				tail[i][first] = c.rule("( " + with + " )?")
			default:
				tail[i][first] = c.rule(with + " | " + tail[i+1][first])
			}
		}
	}
	return c.rule(`"{" ws ` + tail[0][1] + ` "}"`), nil
}

// literal is GBNF matching exactly the compact JSON encoding of v.
func literal(v json.RawMessage) (string, error) {
	var x any
	if err := json.Unmarshal(v, &x); err != nil {
		return "", &SchemaError{"", "bad enum/const value"}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x); err != nil {
		return "", &SchemaError{"", "bad enum/const value"}
	}
	return quote(strings.TrimSuffix(b.String(), "\n")), nil
}

// quote is a GBNF literal for s.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// orderedObject decodes a JSON object keeping its key order.
func orderedObject(raw []byte) ([]string, map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, fmt.Errorf("not an object")
	}
	var keys []string
	m := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if _, dup := m[k]; !dup {
			keys = append(keys, k)
		}
		m[k] = v
	}
	return keys, m, nil
}
