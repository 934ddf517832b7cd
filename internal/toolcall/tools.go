package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
)

// Tool is one function a request offers the model.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments ({} when not given).
	Parameters json.RawMessage
	Strict     bool
}

// FieldError names the request field (a path like tools[1].function.name)
// a tool definition or choice was refused for.
type FieldError struct {
	Path string
	Msg  string
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Msg }

// OpenAI's rule for function names.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ParseTools reads a request's tools: each {"type": "function", "function":
// {"name", "description"?, "parameters"?, "strict"?}}, names unique, the
// parameters a JSON schema object. Unknown keys are refused, not ignored.
func ParseTools(raw json.RawMessage) ([]Tool, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, &FieldError{"tools", "must be an array of tool objects"}
	}
	var tools []Tool
	seen := map[string]bool{}
	for i, it := range items {
		path := fmt.Sprintf("tools[%d]", i)
		var t struct {
			Type     string          `json:"type"`
			Function json.RawMessage `json:"function"`
		}
		if err := strictDecode(it, &t); err != nil {
			return nil, &FieldError{path, err.Error()}
		}
		if t.Type != "function" {
			return nil, &FieldError{path + ".type", fmt.Sprintf(`type %q: only "function" tools are supported`, t.Type)}
		}
		var fn struct {
			Name        *string         `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      *bool           `json:"strict"`
		}
		if len(t.Function) == 0 {
			return nil, &FieldError{path + ".function", "missing"}
		}
		if err := strictDecode(t.Function, &fn); err != nil {
			return nil, &FieldError{path + ".function", err.Error()}
		}
		switch {
		case fn.Name == nil:
			return nil, &FieldError{path + ".function.name", "missing"}
		case !toolName.MatchString(*fn.Name):
			return nil, &FieldError{path + ".function.name", fmt.Sprintf("%q must be 1 to 64 of a-z, A-Z, 0-9, _ and -", *fn.Name)}
		case seen[*fn.Name]:
			return nil, &FieldError{path + ".function.name", fmt.Sprintf("%q is defined twice", *fn.Name)}
		}
		seen[*fn.Name] = true
		params := bytes.TrimSpace(fn.Parameters)
		if len(params) == 0 || string(params) == "null" {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		if err := checkParameters(params); err != nil {
			return nil, &FieldError{path + ".function.parameters", err.Error()}
		}
		tools = append(tools, Tool{Name: *fn.Name, Description: fn.Description, Parameters: params,
			Strict: fn.Strict != nil && *fn.Strict})
	}
	return tools, nil
}

// checkParameters wants a schema of an object, as OpenAI does: arguments
// are always a JSON object.
func checkParameters(p json.RawMessage) error {
	var s map[string]json.RawMessage
	if json.Unmarshal(p, &s) != nil {
		return fmt.Errorf("must be a JSON schema object")
	}
	if t, ok := s["type"]; ok && string(bytes.TrimSpace(t)) != `"object"` {
		return fmt.Errorf(`the arguments are a JSON object: type must be "object", not %s`, t)
	}
	if pr, ok := s["properties"]; ok {
		var m map[string]json.RawMessage
		if json.Unmarshal(pr, &m) != nil {
			return fmt.Errorf("properties must be an object")
		}
	}
	return nil
}

func strictDecode(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// Choice is a request's tool_choice.
type Choice struct {
	Mode string // "auto", "none", "required", or "function" for a named one
	Name string // the function, for Mode "function"
}

// Forced reports whether the output must be a call.
func (c Choice) Forced() bool { return c.Mode == "required" || c.Mode == "function" }

// ParseChoice reads tool_choice against the request's tools. Absent, it is
// "auto" with tools and "none" without, as OpenAI's default.
func ParseChoice(raw json.RawMessage, tools []Tool) (Choice, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		if len(tools) > 0 {
			return Choice{Mode: "auto"}, nil
		}
		return Choice{Mode: "none"}, nil
	}
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		switch {
		case mode == "none":
			return Choice{Mode: mode}, nil
		case (mode == "auto" || mode == "required") && len(tools) == 0:
			return Choice{}, &FieldError{"tool_choice", fmt.Sprintf("%q needs at least one tool in tools", mode)}
		case mode == "auto" || mode == "required":
			return Choice{Mode: mode}, nil
		}
		return Choice{}, &FieldError{"tool_choice", fmt.Sprintf(`%q: use "none", "auto", "required" or {"type": "function", "function": {"name": ...}}`, mode)}
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := strictDecode(raw, &named); err != nil || named.Type != "function" {
		return Choice{}, &FieldError{"tool_choice", `must be "none", "auto", "required" or {"type": "function", "function": {"name": ...}}`}
	}
	for _, t := range tools {
		if t.Name == named.Function.Name {
			return Choice{Mode: "function", Name: t.Name}, nil
		}
	}
	return Choice{}, &FieldError{"tool_choice", fmt.Sprintf("function %q is not among the request's tools", named.Function.Name)}
}
