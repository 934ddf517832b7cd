package model

import "github.com/bulkhead-llm/bulkhead/internal/gguf"

// KVStore is the paged key/value storage the forward pass writes and reads.
//
// Physical page p of layer l holds PageSize() token slots. A slot is one row
// of KVDim = n_kv_heads × head_dim keys and one such row of values, so a
// page's key block is PageSize()*KVDim elements, slot-major.
//
// The store does not check ownership: the engine verifies a sequence's page
// table against the pool (DESIGN I2) before it hands those pages to Forward.
// The model only ever touches the pages named in a Seq.
type KVStore interface {
	PageSize() int
	// DType is gguf.F16 or gguf.F32.
	DType() gguf.Type
	// PageF16 returns the key and value blocks of page p in layer l when
	// DType() is F16 (IEEE half-precision bit patterns).
	PageF16(layer, page int) (k, v []uint16)
	// PageF32 returns them when DType() is F32.
	PageF32(layer, page int) (k, v []float32)
}

// Seq is one sequence's share of a forward step: a prefill chunk or a
// single decode token.
type Seq struct {
	// Tokens are the new tokens to run, at positions Pos, Pos+1, ...
	Tokens []int32
	// Pos is the position of Tokens[0]; the KV of positions [0, Pos) must
	// already be in the pages.
	Pos int
	// Pages are the physical pages holding positions [0, Pos+len(Tokens)),
	// in logical order: position i lives in Pages[i/PageSize] slot i%PageSize.
	Pages []int32
	// AllLogits asks for logits of every token in Tokens; otherwise only the
	// last token's logits are returned.
	AllLogits bool
}
