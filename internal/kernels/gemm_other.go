//go:build !amd64 || noasm

package kernels

import "github.com/bulkhead-llm/bulkhead/internal/gguf"

// Without the assembly there are no prefill tiles.
var gemmEnabled = false

func gemmVariant() string { return "" }

func gemmRows(_ gguf.Type, _ *activation, base rowKernel) rowKernel { return base }

func quantizeQ8KFast(x []float32, qs []int8, d []float32) { quantizeQ8KBlocks(x, qs, d) }

// Without the assembly the row kernels have no preferred row multiple.
func rowMultiple(_ gguf.Type, _ *activation) int { return 1 }

const packsQ8 = false

func packsF16(int) bool { return false }

func wantsQ8Sums() bool { return false }

func q8BlockSums([]int8, []int32) {}

func ggmlQ8Rows(out []float32, m *Matrix, a *activation, r0, r1 int) {
	ggmlQ8RowsRef(out, m, a, r0, r1)
}
