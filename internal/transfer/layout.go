package transfer

import (
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// Layout is what both ends of a transfer must agree on before any KV moves:
// the model (by digest) and the shape of one page of its KV cache.
type Layout struct {
	ModelDigest [32]byte  // SHA-256 of the model file, or any stable 32-byte identity
	PageSize    int       // token slots per page
	DType       gguf.Type // gguf.F16 or gguf.F32
	Layers      int       // transformer layers
	KVDim       int       // elements per token per K (and per V) row
	// MaxContext is the worker's configured maximum context. It is sent
	// only in HELLO: both ends must admit the same prompts, or decode
	// would cut short what prefill accepted.
	MaxContext int
}

// Limits of a Layout; they keep every frame within MaxPayload.
const (
	maxLayers   = 1<<16 - 1
	maxPageSize = 1 << 16
	maxKVDim    = 1 << 16
)

// Validate reports the first field out of range, by name.
func (l Layout) Validate() error {
	switch {
	case l.PageSize < 1 || l.PageSize > maxPageSize:
		return fmt.Errorf("transfer: layout PageSize %d out of range [1, %d]", l.PageSize, maxPageSize)
	case l.DType != gguf.F16 && l.DType != gguf.F32:
		return fmt.Errorf("transfer: layout DType %v: want F16 or F32", l.DType)
	case l.Layers < 1 || l.Layers > maxLayers:
		return fmt.Errorf("transfer: layout Layers %d out of range [1, %d]", l.Layers, maxLayers)
	case l.KVDim < 1 || l.KVDim > maxKVDim:
		return fmt.Errorf("transfer: layout KVDim %d out of range [1, %d]", l.KVDim, maxKVDim)
	case l.MaxContext < 0 || int64(l.MaxContext) > 1<<32-1:
		return fmt.Errorf("transfer: layout MaxContext %d out of range [0, 2^32)", l.MaxContext)
	case l.blockBytes(l.PageSize) > MaxPayload:
		return fmt.Errorf("transfer: layout page block of %d bytes exceeds the %d-byte frame limit", l.blockBytes(l.PageSize), MaxPayload)
	}
	return nil
}

func (l Layout) elemBytes() int {
	if l.DType == gguf.F16 {
		return 2
	}
	return 4
}

// blockBytes is the size of one layer's K and V rows for slots tokens.
func (l Layout) blockBytes(slots int) int { return 2 * slots * l.KVDim * l.elemBytes() }

// Pages is the number of pages a prompt of tokens occupies.
func (l Layout) Pages(tokens int) int { return (tokens + l.PageSize - 1) / l.PageSize }

// slots is how many token slots of page holds prompt tokens: PageSize for all
// but a partial last page. Slots past the prompt are never sent: they hold
// whatever the previous owner of the physical page left there.
func (l Layout) slots(tokens, page int) int { return min(l.PageSize, tokens-page*l.PageSize) }

// Bytes is the KV payload a prompt of tokens moves: every layer's K and V
// rows of every prompt token.
func (l Layout) Bytes(tokens int) int64 { return int64(l.Layers) * int64(l.blockBytes(tokens)) }

// compare returns a *MismatchError naming the first field where remote
// differs from l, or nil.
func (l Layout) compare(remote Layout) error {
	itoa := strconv.Itoa
	switch {
	case l.ModelDigest != remote.ModelDigest:
		return &MismatchError{"model digest", hex.EncodeToString(l.ModelDigest[:]), hex.EncodeToString(remote.ModelDigest[:])}
	case l.PageSize != remote.PageSize:
		return &MismatchError{"page size", itoa(l.PageSize), itoa(remote.PageSize)}
	case l.DType != remote.DType:
		return &MismatchError{"KV dtype", l.DType.String(), remote.DType.String()}
	case l.Layers != remote.Layers:
		return &MismatchError{"layer count", itoa(l.Layers), itoa(remote.Layers)}
	case l.KVDim != remote.KVDim:
		return &MismatchError{"KV dim", itoa(l.KVDim), itoa(remote.KVDim)}
	case l.MaxContext != remote.MaxContext:
		return &MismatchError{"max context", itoa(l.MaxContext), itoa(remote.MaxContext)}
	}
	return nil
}
