package toolcall

import (
	"fmt"
	"strings"
	"sync"

	"github.com/bulkhead-llm/bulkhead/internal/grammar"
)

// Grammar returns the GBNF that forces an output to be calls in family f's
// syntax, to one of tools (only the one named by c when c is a named
// choice), with arguments valid against the tool's parameters schema.
// With parallel, one or more calls (where the syntax has a form for
// several); otherwise exactly one. It is a pure function of its inputs, so
// any process that has the request (a server, a gateway) can build it.
func Grammar(f Family, tools []Tool, c Choice, parallel bool) (string, error) {
	if f == None {
		return "", fmt.Errorf("toolcall: the chat template shows no tool-call syntax to force")
	}
	var b strings.Builder
	var calls []string
	for i, t := range tools {
		if c.Mode == "function" && t.Name != c.Name {
			continue
		}
		_, src, err := grammar.CompileSchema(t.Parameters, t.Strict)
		if err != nil {
			return "", &FieldError{fmt.Sprintf("tools[%d].function.parameters", i), err.Error()}
		}
		prefix := fmt.Sprintf("t%d", i)
		b.WriteString(renameRules(strings.TrimSuffix(src, jsonPrims()), prefix))
		calls = append(calls, callRule(f, t.Name, prefix+"root"))
	}
	if len(calls) == 0 {
		return "", &FieldError{"tool_choice", "no tool to call"}
	}
	b.WriteString("call ::= " + strings.Join(calls, " | ") + "\n")
	b.WriteString("root ::= " + rootRule(f, parallel) + "\n")
	b.WriteString(jsonPrims())
	return b.String(), nil
}

// callRule is one call of name, arguments per args, in f's syntax.
func callRule(f Family, name, args string) string {
	switch f {
	case Hermes:
		return lit(`<tool_call>`+"\n"+`{"name": "`+name+`", "arguments": `) + " " + args + " " + lit("}\n</tool_call>")
	case Llama3:
		return lit(`{"name": "`+name+`", "parameters": `) + " " + args + " " + lit("}")
	case Mistral:
		return lit(`{"name": "`+name+`", "arguments": `) + " " + args + " " + lit("}")
	case MistralArgs:
		return lit("[TOOL_CALLS]"+name+"[ARGS]") + " " + args
	case Functionary:
		return lit("<function="+name+">") + " " + args + " " + lit("</function>")
	case Apriel:
		return lit(`{"name": "`+name+`", "arguments": `) + " " + args + " " + lit("}")
	default: // Harmony; <|call|> is end-of-generation, which the mask allows once root is done
		return lit("<|channel|>commentary to=functions."+name+" <|constrain|>json<|message|>") + " " + args
	}
}

func rootRule(f Family, parallel bool) string {
	switch {
	case f == Mistral && parallel:
		return lit("[TOOL_CALLS][") + " call ( " + lit(", ") + " call )* " + lit("]")
	case f == Mistral:
		return lit("[TOOL_CALLS][") + " call " + lit("]")
	case f == Apriel && parallel:
		return lit("<tool_calls>[") + " call ( " + lit(", ") + " call )* " + lit("]</tool_calls>")
	case f == Apriel:
		return lit("<tool_calls>[") + " call " + lit("]</tool_calls>")
	case parallel && (f == Hermes || f == Functionary):
		return "call ( " + lit("\n") + " call )*"
	case parallel && f == MistralArgs:
		return "call+"
	}
	return "call" // Llama 3 and Harmony write one call per message
}

// lit quotes s as a GBNF string literal.
func lit(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`, "\r", `\r`)
	return `"` + r.Replace(s) + `"`
}

// jsonPrims is the tail every compiled schema shares (the rules of JSON
// itself), found once from the schema true, which is nothing but it.
var jsonPrims = sync.OnceValue(func() string {
	_, src, err := grammar.CompileSchema([]byte("true"), false)
	if err != nil {
		panic(err) // a constant schema
	}
	return strings.TrimPrefix(src, "root ::= value\n")
})

// renameRules prefixes the schema-specific rule names (root and s0, s1,
// ...) of a compiled schema's GBNF, so that several schemas share one
// grammar. String literals and character classes are copied untouched.
func renameRules(src, prefix string) string {
	var b strings.Builder
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '"' || c == '[':
			end := byte('"')
			if c == '[' {
				end = ']'
			}
			j := i + 1
			for j < len(src) && src[j] != end {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(src))
			b.WriteString(src[i:j])
			i = j
		case isNameByte(c):
			j := i
			for j < len(src) && isNameByte(src[j]) {
				j++
			}
			w := src[i:j]
			if w == "root" || (w[0] == 's' && len(w) > 1 && strings.Trim(w[1:], "0123456789") == "") {
				b.WriteString(prefix)
			}
			b.WriteString(w)
			i = j
		case c == '{': // a repetition count: {m,n}
			j := strings.IndexByte(src[i:], '}')
			if j < 0 {
				j = len(src) - i - 1
			}
			b.WriteString(src[i : i+j+1])
			i += j + 1
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

func isNameByte(c byte) bool {
	return c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
