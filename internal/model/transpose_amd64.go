//go:build amd64 && !noasm

package model

// transpose8x8Blocks is in transpose_amd64.s.
//
//go:noescape
func transpose8x8Blocks(dst *uint16, dstStride int, src *uint16, srcStride int, rowBlocks, colBlocks int)

const haveTranspose8x8 = true
