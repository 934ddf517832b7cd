package model

import (
	"fmt"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// SimpleKV is a KVStore with all pages of all layers in one allocation. It
// does no ownership tracking (that is the engine's kvcache); it serves
// tests, the generate command and benchmarks.
type SimpleKV struct {
	pageSize, pages, kvDim int
	dtype                  gguf.Type
	f16                    []uint16
	f32                    []float32
}

var _ KVStore = (*SimpleKV)(nil)

// NewSimpleKV allocates pages pages of pageSize slots for every layer of a
// model with configuration c, holding F16 or F32 keys and values.
func NewSimpleKV(c *Config, pages, pageSize int, dtype gguf.Type) (*SimpleKV, error) {
	if pages <= 0 || pageSize <= 0 {
		return nil, fmt.Errorf("model: KV store of %d pages of %d slots: both must be positive", pages, pageSize)
	}
	kv := &SimpleKV{pageSize: pageSize, pages: pages, kvDim: c.KVDim(), dtype: dtype}
	n := 2 * c.Layers * pages * pageSize * kv.kvDim
	switch dtype {
	case gguf.F16:
		kv.f16 = make([]uint16, n)
	case gguf.F32:
		kv.f32 = make([]float32, n)
	default:
		return nil, fmt.Errorf("%w: KV cache type %s (want F16 or F32)", ErrUnsupported, dtype)
	}
	return kv, nil
}

// PageSize is the number of token slots in a page.
func (kv *SimpleKV) PageSize() int { return kv.pageSize }

// Pages is the number of pages per layer.
func (kv *SimpleKV) Pages() int { return kv.pages }

// DType is the element type of keys and values.
func (kv *SimpleKV) DType() gguf.Type { return kv.dtype }

// block returns the offsets of page p's key and value blocks in layer l.
func (kv *SimpleKV) block(layer, page int) (k, v, n int) {
	n = kv.pageSize * kv.kvDim
	k = (layer*kv.pages + page) * 2 * n
	return k, k + n, n
}

// PageF16 returns page p's key and value blocks in layer l.
func (kv *SimpleKV) PageF16(layer, page int) (k, v []uint16) {
	ko, vo, n := kv.block(layer, page)
	return kv.f16[ko : ko+n : ko+n], kv.f16[vo : vo+n : vo+n]
}

// PageF32 returns page p's key and value blocks in layer l.
func (kv *SimpleKV) PageF32(layer, page int) (k, v []float32) {
	ko, vo, n := kv.block(layer, page)
	return kv.f32[ko : ko+n : ko+n], kv.f32[vo : vo+n : vo+n]
}
