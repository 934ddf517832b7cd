package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
	"github.com/bulkhead-llm/bulkhead/internal/loader"
)

// The exported copy model is the built-in one byte for byte, and loads
// through the same loader a GGUF file from disk takes.
func TestMkmodelCopyRoundTripsThroughTheLoader(t *testing.T) {
	out := filepath.Join(t.TempDir(), "copy.gguf")
	var so, se strings.Builder
	if code := run([]string{"mkmodel", "--shape", "copy", "--context", "768", "--out", out}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := copymodel.Build(copymodel.Options{Context: 768})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("exported file (%d bytes) differs from the built-in model (%d bytes)", len(got), len(want))
	}
	m, err := loader.Load(loader.Options{Path: out, Threads: 1})
	if err != nil {
		t.Fatalf("loading the exported copy model: %v", err)
	}
	defer m.Close()
	if m.Name != copymodel.Name || m.Model.Config.Context != 768 {
		t.Fatalf("loaded name %q context %d, want %q 768", m.Name, m.Model.Config.Context, copymodel.Name)
	}
	w := copymodel.AuditWords()
	canary := w.Canary[:8]
	prompt, err := copymodel.Prompt(canary, 3, 200, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ids := m.Tok.Encode(prompt, true, false); len(ids) != 200 {
		t.Fatalf("the exported tokenizer counts %d tokens, want 200", len(ids))
	}
	for _, bad := range [][]string{{"--context", "1"}, {"--context", "9000"}, {}} {
		args := append([]string{"mkmodel", "--shape", "copy"}, bad...)
		if len(bad) > 0 {
			args = append(args, "--out", out)
		}
		if code := run(args, &so, &se); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
