package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/tokenizer"
)

const tinyRandom = "../../../shared/testdata/models/llama-2-tiny-random.gguf"

func TestTokenizeJSONMatchesLlamaCpp(t *testing.T) {
	if _, err := os.Stat(tinyRandom); err != nil {
		t.Skipf("shared test data not found (%v)", err)
	}
	// Ids from llama-2-tiny-random.reference.json ("Hello, my name is").
	tests := []struct {
		name string
		args []string
		want []int32
	}{
		{"BOS added by default", nil, []int32{1, 15043, 29892, 590, 1024, 338}},
		{"--no-bos adds no special tokens", []string{"--no-bos"}, []int32{15043, 29892, 590, 1024, 338}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := append([]string{"--model", tinyRandom, "--text", "Hello, my name is", "--json"}, tc.args...)
			if err := runTokenize(args, &out, &errOut); err != nil {
				t.Fatalf("runTokenize: %v (stderr %q)", err, errOut.String())
			}
			var got struct{ Tokens []int32 }
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatalf("output %q is not JSON: %v", out.String(), err)
			}
			if !slices.Equal(got.Tokens, tc.want) {
				t.Fatalf("tokens %v, want %v", got.Tokens, tc.want)
			}
		})
	}
}

func TestTokenizeHumanOutputShowsIDsAndPieces(t *testing.T) {
	if _, err := os.Stat(tinyRandom); err != nil {
		t.Skipf("shared test data not found (%v)", err)
	}
	var out bytes.Buffer
	if err := runTokenize([]string{"--model", tinyRandom, "--text", "Hello 🚀"}, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 3 || !strings.Contains(lines[0], "<s>") || !strings.Contains(lines[1], `" Hello"`) {
		t.Fatalf("unexpected output:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "<0xF0>") {
		t.Fatalf("byte tokens of the emoji should show as <0xXX>:\n%s", out.String())
	}
}

func TestTokenizeErrors(t *testing.T) {
	dir := t.TempDir()
	notGGUF := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notGGUF, []byte("hello, not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	noVocab := filepath.Join(dir, "novocab.gguf")
	w := gguf.NewWriter()
	if err := w.Set("general.architecture", "llama"); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(noVocab); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		is      error
		message string
	}{
		{"missing --model", []string{"--text", "x"}, nil, "--model is required"},
		{"missing file", []string{"--model", filepath.Join(dir, "absent.gguf"), "--text", "x"}, os.ErrNotExist, "absent.gguf"},
		{"not a GGUF file", []string{"--model", notGGUF, "--text", "x"}, gguf.ErrFormat, "not a GGUF file"},
		{"GGUF without a tokenizer", []string{"--model", noVocab, "--text", "x"}, tokenizer.ErrNoTokenizer, "no tokenizer"},
		{"invalid UTF-8 text", []string{"--model", noVocab, "--text", "a\xffb"}, nil, "not valid UTF-8"},
		{"stray argument", []string{"--model", noVocab, "hello"}, nil, "unexpected argument"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := runTokenize(tc.args, &bytes.Buffer{}, &bytes.Buffer{})
			if err == nil {
				t.Fatal("no error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("error %q does not mention %q", err, tc.message)
			}
		})
	}
}
