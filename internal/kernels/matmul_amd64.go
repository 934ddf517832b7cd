//go:build amd64 && !noasm

package kernels

import (
	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// tile is the token count of the four-token kernels (q8Dot4, f16Dot4, …).
// Whatever tile a token lands in, its (row, token) products go through the
// same operations as in the one-token kernels.
const tile = 4

// rowsFast picks the assembly row kernel for t, or the reference where
// there is none.
func rowsFast(t gguf.Type, cols int) rowKernel {
	if cols == 0 {
		return rowsRef
	}
	switch t {
	case gguf.Q8_0:
		return rowsQ8P
	case gguf.Q4_0:
		return rowsQ8
	case gguf.Q4_K, gguf.Q6_K:
		return rowsK
	case gguf.Q4_1, gguf.Q5_0, gguf.Q5_1, gguf.IQ4_NL:
		return rowsQ32
	case gguf.Q2_K, gguf.Q3_K, gguf.Q5_K, gguf.IQ4_XS:
		return rowsKx
	case gguf.F16:
		return rowsFloat
	case gguf.BF16:
		return rowsFloat
	case gguf.F32:
		return rowsFloat
	}
	return rowsRef
}
