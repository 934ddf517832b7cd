package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// TestInspectMarksUnsupportedTensors: a valid file with a tensor type that
// bulkhead has no kernels for is shown, with that tensor marked.
func TestInspectMarksUnsupportedTensors(t *testing.T) {
	w := gguf.NewWriter()
	w.Set("general.architecture", "llama")
	if err := w.AddTensor("ok", gguf.Q5_0, []uint64{32}, make([]byte, 22)); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("odd", gguf.IQ2_XXS, []uint64{256}, make([]byte, 66)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if err := runInspect([]string{path}, &out, &errb); err != nil {
		t.Fatalf("inspect: %v (%s)", err, errb.String())
	}
	s := out.String()
	if !strings.Contains(s, "IQ2_XXS (unsupported)") || strings.Contains(s, "Q5_0 (unsupported)") {
		t.Errorf("inspect output does not mark exactly the unsupported tensor:\n%s", s)
	}
	out.Reset()
	if err := runInspect([]string{"--json", path}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if strings.Count(out.String(), `"unsupported": true`) != 1 {
		t.Errorf("JSON marks %d tensors unsupported, want 1:\n%s", strings.Count(out.String(), `"unsupported": true`), out.String())
	}
}
