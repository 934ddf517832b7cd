//go:build !amd64 || noasm

package model

const haveTranspose8x8 = false

func transpose8x8Blocks(dst *uint16, dstStride int, src *uint16, srcStride int, rowBlocks, colBlocks int) {
	panic("model: transpose8x8Blocks without assembly")
}
