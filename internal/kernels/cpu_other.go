//go:build !amd64 || noasm

package kernels

func quantizeBlocks(block int, x []float32, qs []int8, d []float32) {
	quantizeBlocksRef(block, x, qs, d)
}
