package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// testdataDir is the shared test data, outside the repository.
const testdataDir = "../../../shared/testdata"

func needTestdata(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(testdataDir); err != nil {
		t.Skipf("shared test data not found at %s (repo-root ../shared/testdata): %v", testdataDir, err)
	}
	return testdataDir
}

var (
	vocabMu    sync.Mutex
	vocabCache = map[string]*Tokenizer{}
)

// openVocab opens a vocab-only GGUF from the shared test data, once per
// test binary (the large BPE vocabularies take a moment to load). The
// Tokenizer keeps no reference to the file, so it is closed at once.
func openVocab(t testing.TB, name string) (*Tokenizer, error) {
	t.Helper()
	dir := needTestdata(t)
	vocabMu.Lock()
	defer vocabMu.Unlock()
	if tok, ok := vocabCache[name]; ok {
		return tok, nil
	}
	f, err := gguf.Open(filepath.Join(dir, "vocab", "ggml-vocab-"+name+".gguf"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tok, err := FromGGUF(f)
	if err != nil {
		return nil, err
	}
	vocabCache[name] = tok
	return tok, nil
}

func loadVocab(t testing.TB, name string) *Tokenizer {
	t.Helper()
	tok, err := openVocab(t, name)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// vectorCase is one text of a .inp file and its expected ids from .out.
type vectorCase struct {
	text string
	want []int32
}

// readVectors parses llama.cpp's test-tokenizer-0 format: texts separated
// by "\n__ggml_vocab_test__\n", one line of ids per text.
func readVectors(t testing.TB, path string) []vectorCase {
	t.Helper()
	inp, err := os.ReadFile(path + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(path + ".out")
	if err != nil {
		t.Fatal(err)
	}
	texts := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	if texts[len(texts)-1] != "" {
		t.Fatalf("%s.inp does not end with a separator", path)
	}
	texts = texts[:len(texts)-1]
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(texts) {
		t.Fatalf("%s: %d texts but %d id lines", path, len(texts), len(lines))
	}
	cases := make([]vectorCase, len(texts))
	for i, text := range texts {
		var ids []int32
		for _, f := range strings.Fields(lines[i]) {
			n, err := strconv.ParseInt(f, 10, 32)
			if err != nil {
				t.Fatalf("%s.out line %d: %v", path, i+1, err)
			}
			ids = append(ids, int32(n))
		}
		cases[i] = vectorCase{text: text, want: ids}
	}
	return cases
}

// mustPass are the vocabularies whose every vector must match; the others
// are reported.
var mustPass = map[string]bool{"llama-spm": true, "phi-3": true, "gpt-2": true, "llama-bpe": true, "qwen2": true}

func TestEncodeMatchesReferenceVectors(t *testing.T) {
	dir := needTestdata(t)
	paths, _ := filepath.Glob(filepath.Join(dir, "vocab", "ggml-vocab-*.gguf.inp"))
	if len(paths) == 0 {
		t.Skip("no .inp vectors in the shared test data")
	}
	for _, p := range paths {
		base := strings.TrimSuffix(p, ".inp")
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(base), "ggml-vocab-"), ".gguf")
		t.Run(name, func(t *testing.T) {
			tok, err := openVocab(t, name)
			if err != nil {
				if mustPass[name] {
					t.Fatal(err)
				}
				t.Skipf("not supported: %v", err)
			}
			cases := readVectors(t, base)
			pass := 0
			for i, c := range cases {
				got := tok.Encode(c.text, false, false)
				if slices.Equal(got, c.want) {
					pass++
					continue
				}
				if mustPass[name] {
					t.Errorf("text %d %q:\n got %v\nwant %v", i, c.text, got, c.want)
				} else {
					t.Logf("text %d %q:\n got %v\nwant %v", i, c.text, got, c.want)
				}
			}
			t.Logf("%s: %d/%d vectors match", name, pass, len(cases))
		})
	}
}
