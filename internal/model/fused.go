package model

import (
	"fmt"

	"github.com/bulkhead-llm/bulkhead/internal/kernels"
)

// fused loads a matrix whose rows are several projections stacked (phi3's
// attn_qkv: Q, K, V rows; its ffn_up: gate rows then up rows) and returns
// one matrix per part, each a view over its rows of the mapped file. Every
// output row's dot product is independent of the others, so the parts
// compute exactly what the fused matrix would, with no copy and no change
// to the forward pass.
func (ld *loader) fused(name string, cols int, parts ...int) []*kernels.Matrix {
	total := 0
	for _, p := range parts {
		total += p
	}
	m := ld.matrix(name, cols, total)
	if m == nil {
		return make([]*kernels.Matrix, len(parts))
	}
	rb, err := m.Type.RowBytes(cols)
	if err != nil {
		ld.err = fmt.Errorf("%w: tensor %q: %v", ErrUnsupported, name, err)
		return make([]*kernels.Matrix, len(parts))
	}
	out := make([]*kernels.Matrix, len(parts))
	r := 0
	for i, p := range parts {
		out[i], err = kernels.NewMatrix(m.Type, p, cols, m.Data[r*rb:(r+p)*rb])
		if err != nil && ld.err == nil {
			ld.err = fmt.Errorf("%w: tensor %q part %d: %v", ErrMalformed, name, i, err)
		}
		r += p
	}
	return out
}
