package loader

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/tokenizer"
)

func loadCopy(t *testing.T) *Model {
	t.Helper()
	var progress bytes.Buffer
	m, err := Load(Options{Threads: 1, Progress: &progress, CopyModel: copymodel.Options{Context: 512}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if m.Name != copymodel.Name || len(m.Digest) != 64 || !strings.Contains(progress.String(), "model ready") {
		t.Fatalf("name %q digest %q progress %q", m.Name, m.Digest, progress.String())
	}
	return m
}

func TestPoolSizing(t *testing.T) {
	m := loadCopy(t)
	c := m.Model.Config
	perToken := int64(2 * c.Layers * c.KVDim() * 2)
	cases := []struct {
		name string
		o    PoolOptions
		want func(cfgTokens int, mem int64) bool
	}{
		{"tokens", PoolOptions{KVTokens: 5000}, func(n int, _ int64) bool { return n == 5000 }},
		{"memory", PoolOptions{KVMemory: 100 * perToken * 16}, func(_ int, mem int64) bool { return mem == 100*perToken*16 }},
		{"default fits 64 sequences of the context", PoolOptions{}, func(n int, mem int64) bool { return n == 64*512 || mem > 0 }},
	}
	for _, tc := range cases {
		pc, err := m.PoolConfig(tc.o)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if pc.DType != gguf.F16 || pc.Layers != c.Layers || pc.KVDim != c.KVDim() || !tc.want(pc.Tokens, pc.MemoryBytes) {
			t.Errorf("%s: %+v", tc.name, pc)
		}
	}
	if pc, _ := m.PoolConfig(PoolOptions{KVTokens: 64, F32: true}); pc.DType != gguf.F32 {
		t.Errorf("--kv-f32 gave %v", pc.DType)
	}
	for _, bad := range []PoolOptions{{KVTokens: -1}, {KVMemory: -1}, {MaxContext: -3}, {KVTokens: 10, KVMemory: 10}, {PageSize: -1}} {
		if _, err := m.PoolConfig(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestEngineRefusesPoolBelowContext(t *testing.T) {
	m := loadCopy(t)
	_, err := m.NewEngine(PoolOptions{MaxContext: 512, KVTokens: 256}, engine.Config{})
	if err == nil || !strings.Contains(err.Error(), "512") || !strings.Contains(err.Error(), "256") {
		t.Fatalf("err = %v, want a refusal naming 512 and 256", err)
	}
	e, err := m.NewEngine(PoolOptions{KVTokens: 512}, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.MaxContext() != 512 || !e.Ready() {
		t.Fatalf("max context %d ready %v", e.MaxContext(), e.Ready())
	}
}

func TestVocabGGUFGivesTheSameTokenizer(t *testing.T) {
	m := loadCopy(t)
	b, err := m.VocabGGUF()
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != 0 || len(b) >= m.File.Size()/2 {
		t.Fatalf("vocab GGUF has %d tensors, %d bytes (model %d)", len(f.Tensors), len(b), m.File.Size())
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	w := copymodel.AuditWords()
	text := " " + strings.Join(append([]string{w.Key}, w.Canary[:10]...), " ") + " and some bytes ü€"
	if a, b := m.Tok.Encode(text, true, false), tok.Encode(text, true, false); !slices.Equal(a, b) {
		t.Fatalf("tokenizers differ: %v vs %v", a, b)
	}
}

func TestLoadReportsBadFiles(t *testing.T) {
	if _, err := Load(Options{Path: "/nonexistent/model.gguf"}); err == nil {
		t.Fatal("loaded a missing file")
	}
}
