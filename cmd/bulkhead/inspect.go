package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kernels"
)

// typeMark is a tensor type's name, marked when bulkhead cannot compute
// with it, so inspect shows why a valid file would be refused.
func typeMark(t gguf.Type) string {
	if kernels.Supports(t) {
		return t.String()
	}
	return t.String() + " (unsupported)"
}

func runInspect(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("inspect", "[--json] [--all] FILE", stderr)
	asJSON := fs.Bool("json", false, "print one JSON object instead of tables")
	all := fs.Bool("all", false, "print every array element instead of the first few")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return &exitCode{2, fmt.Errorf("want exactly one GGUF file, got %d arguments", fs.NArg())}
	}
	f, err := gguf.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	limit := 8
	if *all {
		limit = -1
	}
	if *asJSON {
		return inspectJSON(f, limit, stdout)
	}
	fmt.Fprintf(stdout, "GGUF v%d, %d bytes, %d metadata keys, %d tensors, alignment %d, data at %d\n\n",
		f.Version, f.Size(), len(f.KV), len(f.Tensors), f.Alignment, f.DataStart)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tTYPE\tVALUE")
	for _, kv := range f.KV {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", kv.Key, typeName(kv.Value), formatValue(kv.Value, limit))
	}
	tw.Flush()
	fmt.Fprintln(stdout)
	tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TENSOR\tTYPE\tDIMS\tELEMENTS\tBYTES\tOFFSET")
	var params, bytes uint64
	for _, t := range f.Tensors {
		fmt.Fprintf(tw, "%s\t%s\t%v\t%d\t%d\t%d\n", t.Name, typeMark(t.Type), t.Dims, t.Elems(), t.Size, t.Offset)
		params += t.Elems()
		bytes += t.Size
	}
	tw.Flush()
	fmt.Fprintf(stdout, "\n%d parameters, %d bytes of tensor data\n", params, bytes)
	return nil
}

func typeName(v any) string {
	if a, ok := v.(gguf.Array); ok {
		return fmt.Sprintf("array[%s; %d]", a.Elem, a.Len())
	}
	t := fmt.Sprintf("%T", v)
	return t
}

// formatValue prints scalars in full (strings quoted, long ones cut) and the
// first limit elements of arrays (all of them when limit < 0).
func formatValue(v any, limit int) string {
	switch x := v.(type) {
	case string:
		if limit >= 0 && len(x) > 120 {
			return fmt.Sprintf("%q… (%d bytes)", x[:120], len(x))
		}
		return fmt.Sprintf("%q", x)
	case gguf.Array:
		parts := arrayStrings(x, limit)
		s := "[" + strings.Join(parts, ", ")
		if limit >= 0 && x.Len() > limit {
			s += fmt.Sprintf(", … %d more", x.Len()-limit)
		}
		return s + "]"
	}
	return fmt.Sprint(v)
}

func arrayStrings(a gguf.Array, limit int) []string {
	n := a.Len()
	if limit >= 0 && n > limit {
		n = limit
	}
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, formatValue(arrayElem(a, i), limit))
	}
	return out
}

func arrayElem(a gguf.Array, i int) any {
	switch v := a.Values.(type) {
	case []uint8:
		return v[i]
	case []int8:
		return v[i]
	case []uint16:
		return v[i]
	case []int16:
		return v[i]
	case []uint32:
		return v[i]
	case []int32:
		return v[i]
	case []float32:
		return v[i]
	case []bool:
		return v[i]
	case []string:
		return v[i]
	case []uint64:
		return v[i]
	case []int64:
		return v[i]
	case []float64:
		return v[i]
	case []gguf.Array:
		return v[i]
	}
	return nil
}

func inspectJSON(f *gguf.File, limit int, stdout io.Writer) error {
	type tensor struct {
		Name   string   `json:"name"`
		Type   string   `json:"type"`
		Dims   []uint64 `json:"dims"`
		Offset uint64   `json:"offset"`
		Bytes  uint64   `json:"bytes"`
		// Unsupported is set for a tensor type bulkhead has no kernels for.
		Unsupported bool `json:"unsupported,omitempty"`
	}
	out := struct {
		Version  uint32         `json:"version"`
		Metadata map[string]any `json:"metadata"`
		Tensors  []tensor       `json:"tensors"`
		Digest   string         `json:"sha256"`
	}{Version: f.Version, Metadata: map[string]any{}, Digest: f.Digest()}
	for _, kv := range f.KV {
		out.Metadata[kv.Key] = jsonValue(kv.Value, limit)
	}
	for _, t := range f.Tensors {
		out.Tensors = append(out.Tensors, tensor{t.Name, t.Type.String(), t.Dims, t.Offset, t.Size, !kernels.Supports(t.Type)})
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func jsonValue(v any, limit int) any {
	a, ok := v.(gguf.Array)
	if !ok {
		return v
	}
	n := a.Len()
	if limit >= 0 && n > limit {
		n = limit
	}
	vals := make([]any, n)
	for i := range vals {
		vals[i] = jsonValue(arrayElem(a, i), limit)
	}
	return map[string]any{"type": a.Elem.String(), "len": a.Len(), "values": vals}
}
