package kvcache

import (
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

func TestConfigValidateNamesTheBadField(t *testing.T) {
	ok := Config{PageSize: 16, DType: gguf.F16, Layers: 2, KVDim: 8, Tokens: 64}
	cases := []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"negative page size", func(c *Config) { c.PageSize = -1 }, "PageSize"},
		{"huge page size", func(c *Config) { c.PageSize = MaxPageSize + 1 }, "PageSize"},
		{"quantized dtype", func(c *Config) { c.DType = gguf.Q8_0 }, "DType"},
		{"no layers", func(c *Config) { c.Layers = 0 }, "Layers"},
		{"no kv dim", func(c *Config) { c.KVDim = 0 }, "KVDim"},
		{"neither size", func(c *Config) { c.Tokens = 0 }, "exactly one"},
		{"both sizes", func(c *Config) { c.MemoryBytes = 1 << 20 }, "exactly one"},
		{"negative tokens", func(c *Config) { c.Tokens = -5 }, "negative"},
		{"budget below two pages", func(c *Config) { c.Tokens, c.MemoryBytes = 0, 1024 }, "MemoryBytes"},
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Validate() = %v, want an error naming %q", err, tc.field)
			}
		})
	}
}

func TestConfigSizesPoolFromMemoryBudget(t *testing.T) {
	// 2 layers × (K+V) × 8 elements × 2 bytes = 64 bytes a token, 1 KiB a page.
	c := Config{PageSize: 16, DType: gguf.F16, Layers: 2, KVDim: 8, MemoryBytes: 10*1024 + 1000}
	if got := c.TokenBytes(); got != 64 {
		t.Fatalf("TokenBytes = %d, want 64", got)
	}
	n, err := c.NumPages()
	if err != nil || n != 9 { // 10 whole pages fit, one is the sentinel
		t.Fatalf("NumPages = %d, %v; want 9", n, err)
	}
	c.DType = gguf.F32
	if n, _ := c.NumPages(); n != 4 { // 2 KiB pages: 5 fit
		t.Fatalf("F32 NumPages = %d, want 4", n)
	}
}

func TestConfigSizesPoolFromTokensRoundingUp(t *testing.T) {
	p, err := New(Config{DType: gguf.F16, Layers: 1, KVDim: 4, Tokens: 33})
	if err != nil {
		t.Fatal(err)
	}
	if p.PageSize() != DefaultPageSize || p.UsablePages() != 3 || p.Tokens() != 48 {
		t.Fatalf("page size %d, pages %d, tokens %d; want 16, 3, 48", p.PageSize(), p.UsablePages(), p.Tokens())
	}
}
