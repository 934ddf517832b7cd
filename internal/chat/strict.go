package chat

import (
	"fmt"
	"reflect"
	"strings"
	"unsafe"

	"github.com/ardanlabs/jinja"
)

// The Jinja engine (github.com/ardanlabs/jinja) is more lenient than
// Python's jinja2 in a few places that decide whether a template accepts a
// conversation: `a + b` concatenates whenever either side is a string (so
// "x" + None, "x" + [parts] and "x" + undefined_name render), `x in None`
// is false, `undefined | tojson` prints null, and it has a from_json filter
// jinja2 lacks. Measured on the shared reference, these were the main
// remaining differences: templates that jinja2 (so Hugging Face) refuses
// rendered here as if nothing were wrong, and the llama.cpp-normalised
// retry (normalise.go) never ran. The engine has no option for any of it
// and its later releases need a newer Go, so strictify rewrites a compiled
// template's AST: each `+`, `in` and `not in` becomes a call of a filter
// with Python's rules, tojson's input is checked for undefined, and
// from_json is renamed to a filter that refuses. It edits the engine's
// unexported AST through reflection; the node types are taken from probe
// templates the engine itself compiles, and a surprise in their shape
// leaves only the lenient template (Compile), which the reference test's
// floor would catch.

// The filters the rewritten nodes call; the prefix keeps them out of any
// real template's way.
const (
	strictAddFilter      = "__bulkhead_strict_add"
	strictInFilter       = "__bulkhead_strict_in"
	strictNotInFilter    = "__bulkhead_strict_not_in"
	strictDefinedFilter  = "__bulkhead_defined"
	strictIterableFilter = "__bulkhead_iterable"
	noFromJSONFilter     = "__bulkhead_no_from_json"
)

// strictFilters are the variables a strict rendering adds.
var strictFilters = map[string]jinja.Value{
	strictAddFilter:      jinja.NewCallable(strictAddFilter, strictAdd),
	strictInFilter:       jinja.NewCallable(strictInFilter, strictIn(false)),
	strictNotInFilter:    jinja.NewCallable(strictNotInFilter, strictIn(true)),
	strictDefinedFilter:  jinja.NewCallable(strictDefinedFilter, definedForJSON),
	strictIterableFilter: jinja.NewCallable(strictIterableFilter, iterable),
	noFromJSONFilter:     jinja.NewCallable(noFromJSONFilter, noFromJSON),
}

// astTypes are the engine's binary-expression and filter-expression node
// types, read from probe templates.
type astTypes struct {
	bin, filter, loop reflect.Type
}

func probeAST() (astTypes, error) {
	bin, err := firstExpr("{{ a + b }}")
	if err != nil {
		return astTypes{}, err
	}
	filter, err := firstExpr("{{ a | f(b) }}")
	if err != nil {
		return astTypes{}, err
	}
	loop, err := firstNode("{% for x in a %}{% endfor %}")
	if err != nil {
		return astTypes{}, err
	}
	ts := astTypes{bin: bin.Type(), filter: filter.Type(), loop: loop.Type()}
	for _, f := range []struct {
		t    reflect.Type
		name string
		kind reflect.Kind
	}{{ts.bin, "op", reflect.String}, {ts.bin, "left", reflect.Interface}, {ts.bin, "right", reflect.Interface},
		{ts.loop, "iter", reflect.Interface}, {ts.filter, "expr", reflect.Interface}, {ts.filter, "name", reflect.String}, {ts.filter, "args", reflect.Slice}} {
		sf, ok := f.t.Elem().FieldByName(f.name)
		if !ok || sf.Type.Kind() != f.kind {
			return astTypes{}, fmt.Errorf("chat: jinja AST %v has no %s field of kind %v", f.t, f.name, f.kind)
		}
	}
	return ts, nil
}

// firstNode compiles src (one tag) and returns its node.
func firstNode(src string) (reflect.Value, error) {
	t, err := jinja.Compile(src)
	if err != nil {
		return reflect.Value{}, err
	}
	nodes := reflect.ValueOf(t).Elem().FieldByName("nodes")
	if !nodes.IsValid() || nodes.Kind() != reflect.Slice || nodes.Len() != 1 {
		return reflect.Value{}, fmt.Errorf("chat: unexpected jinja AST for %q", src)
	}
	n := nodes.Index(0).Elem()
	if n.Kind() != reflect.Pointer || n.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, fmt.Errorf("chat: unexpected jinja node for %q", src)
	}
	return n, nil
}

// firstExpr compiles src (one output tag) and returns its expression node.
func firstExpr(src string) (reflect.Value, error) {
	out, err := firstNode(src)
	if err != nil {
		return reflect.Value{}, err
	}
	if out.Kind() != reflect.Pointer || out.Elem().Kind() != reflect.Struct || out.Elem().NumField() != 1 {
		return reflect.Value{}, fmt.Errorf("chat: unexpected jinja output node for %q", src)
	}
	e := out.Elem().Field(0)
	if e.Kind() != reflect.Interface || e.IsNil() {
		return reflect.Value{}, fmt.Errorf("chat: unexpected jinja expression for %q", src)
	}
	return e.Elem(), nil
}

// strictify rewrites t as the header comment says.
func strictify(t *jinja.Template, ts astTypes) {
	walkAST(writable(reflect.ValueOf(t).Elem().FieldByName("nodes")), ts)
}

// writable lifts the read-only flag reflection puts on unexported fields,
// so the walk can replace nodes in place. v must be addressable.
func writable(v reflect.Value) reflect.Value {
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}

func walkAST(v reflect.Value, ts astTypes) {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		e := v.Elem()
		switch e.Type() {
		case ts.bin:
			if name, ok := binFilters[writable(e.Elem().FieldByName("op")).String()]; ok {
				v.Set(filterNode(ts, writable(e.Elem().FieldByName("left")), name, writable(e.Elem().FieldByName("right"))))
			}
		case ts.filter:
			name := writable(e.Elem().FieldByName("name"))
			switch name.String() {
			case "tojson":
				input := writable(e.Elem().FieldByName("expr"))
				input.Set(filterNode(ts, input, strictDefinedFilter))
			case "from_json":
				name.SetString(noFromJSONFilter)
			}
		}
		walkAST(v.Elem(), ts)
	case reflect.Pointer:
		if v.Type() == ts.loop && !v.IsNil() {
			iter := writable(v.Elem().FieldByName("iter"))
			iter.Set(filterNode(ts, iter, strictIterableFilter))
		}
		if !v.IsNil() && v.Elem().Kind() == reflect.Struct {
			walkAST(v.Elem(), ts)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[jinja.Value]() {
			return // literals hold no expressions
		}
		for i := range v.NumField() {
			walkAST(writable(v.Field(i)), ts)
		}
	case reflect.Slice:
		for i := range v.Len() {
			walkAST(v.Index(i), ts)
		}
	}
}

// binFilters name the filter that replaces each rewritten operator.
var binFilters = map[string]string{"+": strictAddFilter, "in": strictInFilter, "not in": strictNotInFilter}

// filterNode builds the node `input | name(args...)`.
func filterNode(ts astTypes, input reflect.Value, name string, args ...reflect.Value) reflect.Value {
	f := reflect.New(ts.filter.Elem())
	fe := f.Elem()
	writable(fe.FieldByName("expr")).Set(input)
	writable(fe.FieldByName("name")).SetString(name)
	as := writable(fe.FieldByName("args"))
	as.Set(reflect.MakeSlice(as.Type(), len(args), len(args)))
	for i, a := range args {
		as.Index(i).Set(a)
	}
	return f
}

// strictAdd is `+` with Python's rules: strings with strings, numbers
// (bools count) with numbers, lists with lists; an undefined operand is
// jinja2's UndefinedError, any other mix its TypeError.
func strictAdd(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 2 {
		return jinja.Undefined(), fmt.Errorf("+ takes two operands")
	}
	a, b := args[0], args[1]
	number := func(v jinja.Value) bool { return v.IsNumber() || v.IsBool() }
	switch {
	case a.IsUndefined() || b.IsUndefined():
		return jinja.Undefined(), fmt.Errorf("UndefinedError: an operand of + is undefined")
	case a.IsString() && b.IsString():
		return jinja.NewString(a.AsString() + b.AsString()), nil
	case a.IsList() && b.IsList():
		items := make([]jinja.Value, 0, a.AsList().Len()+b.AsList().Len())
		return jinja.NewList(append(append(items, a.AsList().Items...), b.AsList().Items...)), nil
	case number(a) && number(b):
		if a.IsFloat() || b.IsFloat() {
			return jinja.NewFloat(toFloat(a) + toFloat(b)), nil
		}
		return jinja.NewInt(toInt(a) + toInt(b)), nil
	}
	return jinja.Undefined(), fmt.Errorf("TypeError: unsupported operand types for +: %s and %s", kindName(a), kindName(b))
}

// strictIn is `in` / `not in` with Python's rules: the container must be
// a string, list or dict (an undefined one iterates as empty, as jinja2's
// Undefined does); None or a number is a TypeError.
func strictIn(negate bool) func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
	return func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 2 {
			return jinja.Undefined(), fmt.Errorf("in takes two operands")
		}
		item, c := args[0], args[1]
		var found bool
		switch {
		case c.IsUndefined():
		case c.IsString():
			if !item.IsString() {
				return jinja.Undefined(), fmt.Errorf("TypeError: 'in <string>' requires string as left operand, not %s", kindName(item))
			}
			found = strings.Contains(c.AsString(), item.AsString())
		case c.IsList():
			for _, x := range c.AsList().Items {
				if x.Equals(item) {
					found = true
					break
				}
			}
		case c.IsDict():
			found = item.IsString() && c.AsDict().Has(item.AsString())
		default:
			return jinja.Undefined(), fmt.Errorf("TypeError: argument of type %s is not iterable", kindName(c))
		}
		return jinja.NewBool(found != negate), nil
	}
}

// definedForJSON passes its input to tojson, refusing an undefined one as
// json.dumps does ("Object of type Undefined is not JSON serializable").
func definedForJSON(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 || args[0].IsUndefined() {
		return jinja.Undefined(), fmt.Errorf("TypeError: Object of type Undefined is not JSON serializable")
	}
	return args[0], nil
}

// iterable passes a for loop's sequence through, refusing None and
// numbers as Python does ("'NoneType' object is not iterable"); an undefined
// one iterates as empty, as jinja2's Undefined does.
func iterable(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Undefined(), fmt.Errorf("iterable takes one operand")
	}
	if v := args[0]; v.IsNone() || v.IsNumber() || v.IsBool() {
		return jinja.Undefined(), fmt.Errorf("TypeError: '%s' object is not iterable", kindName(v))
	}
	return args[0], nil
}

func noFromJSON(_ []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	return jinja.Undefined(), fmt.Errorf("TemplateAssertionError: no filter named 'from_json' (jinja2 has none)")
}

func toFloat(v jinja.Value) float64 {
	if v.IsFloat() {
		return v.AsFloat()
	}
	return float64(toInt(v))
}

func toInt(v jinja.Value) int64 {
	if v.IsBool() {
		if v.AsBool() {
			return 1
		}
		return 0
	}
	return v.AsInt()
}

func kindName(v jinja.Value) string {
	switch {
	case v.IsNone():
		return "NoneType"
	case v.IsString():
		return "str"
	case v.IsList():
		return "list"
	case v.IsDict():
		return "dict"
	case v.IsNumber():
		return "number"
	case v.IsBool():
		return "bool"
	}
	return "callable"
}
