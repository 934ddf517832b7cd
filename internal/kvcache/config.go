package kvcache

import (
	"fmt"
	"math"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// DefaultPageSize is the number of token slots per page unless configured.
const DefaultPageSize = 16

// maxLayerElems bounds one layer's K block (2^40 elements, terabytes).
const maxLayerElems = 1 << 40

// MaxPageSize bounds Config.PageSize; larger pages waste memory on tails.
const MaxPageSize = 4096

// Config sizes a pool. Exactly one of Tokens and MemoryBytes is set: the pool
// holds at least Tokens token slots, or as many pages as MemoryBytes pays for
// (the sentinel page included).
type Config struct {
	PageSize    int       // token slots per page; 0 means DefaultPageSize
	DType       gguf.Type // gguf.F16 or gguf.F32; callers choose F16 by default
	Layers      int       // transformer layers, each with its own K and V
	KVDim       int       // n_kv_heads × head_dim: elements per token per K or V
	Tokens      int       // capacity in tokens (rounded up to whole pages)
	MemoryBytes int64     // memory budget for K and V of all layers
	PoisonFreed bool      // debug: fill freed pages with NaN
}

// pageSize returns the configured page size with the default applied.
func (c Config) pageSize() int {
	if c.PageSize == 0 {
		return DefaultPageSize
	}
	return c.PageSize
}

func (c Config) elemBytes() int64 {
	if c.DType == gguf.F16 {
		return 2
	}
	return 4
}

// TokenBytes is the memory one token occupies: K and V rows in every layer.
func (c Config) TokenBytes() int64 {
	return 2 * int64(c.Layers) * int64(c.KVDim) * c.elemBytes()
}

// PageBytes is the memory one page occupies across all layers.
func (c Config) PageBytes() int64 { return c.TokenBytes() * int64(c.pageSize()) }

// Validate reports the first field that is out of range, by name.
func (c Config) Validate() error {
	ps := c.pageSize()
	switch {
	case ps < 1 || ps > MaxPageSize:
		return fmt.Errorf("kvcache: PageSize %d out of range [1, %d]", c.PageSize, MaxPageSize)
	case c.DType != gguf.F16 && c.DType != gguf.F32:
		return fmt.Errorf("kvcache: DType %s not supported: want F16 or F32", c.DType)
	case c.Layers < 1 || c.Layers > 1<<16:
		return fmt.Errorf("kvcache: Layers %d out of range [1, %d]", c.Layers, 1<<16)
	case c.KVDim < 1 || c.KVDim > 1<<20:
		return fmt.Errorf("kvcache: KVDim %d out of range [1, %d]", c.KVDim, 1<<20)
	case c.Tokens < 0 || c.MemoryBytes < 0:
		return fmt.Errorf("kvcache: Tokens %d and MemoryBytes %d must not be negative", c.Tokens, c.MemoryBytes)
	case (c.Tokens == 0) == (c.MemoryBytes == 0):
		return fmt.Errorf("kvcache: set exactly one of Tokens (%d) and MemoryBytes (%d)", c.Tokens, c.MemoryBytes)
	}
	n, err := c.NumPages()
	if err != nil {
		return err
	}
	// Each layer's K (and V) block is one slice of (n+1) pages.
	if elems := int64(n+1) * int64(ps) * int64(c.KVDim); elems > maxLayerElems {
		return fmt.Errorf("kvcache: %d pages of %d×%d elements exceed one layer's addressable size", n, ps, c.KVDim)
	}
	return nil
}

// NumPages is the number of pages the pool hands out, the sentinel excluded.
func (c Config) NumPages() (int, error) {
	ps := int64(c.pageSize())
	var n int64
	if c.Tokens > 0 {
		n = (int64(c.Tokens) + ps - 1) / ps
	} else {
		pb := c.PageBytes()
		if pb <= 0 {
			return 0, fmt.Errorf("kvcache: page size in bytes is %d", pb)
		}
		n = c.MemoryBytes/pb - 1 // the sentinel page costs memory too
		if n < 1 {
			return 0, fmt.Errorf("kvcache: MemoryBytes %d holds no page beyond the sentinel (a page is %d bytes)", c.MemoryBytes, pb)
		}
	}
	if n+1 > math.MaxInt32 {
		return 0, fmt.Errorf("kvcache: %d pages exceed the page-number range", n)
	}
	return int(n), nil
}
