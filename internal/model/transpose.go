package model

import "unsafe"

// transpose16 copies a rows×cols block of 16-bit values from src (row j at
// src[j*srcStride:]) into dst transposed (column d of src becomes row d at
// dst[d*dstStride:]): dst[d*dstStride+j] = src[j*srcStride+d].
//
// Attention gathers each step's values this way, one page of one KV head
// at a time, into the Vᵀ rows its matmul reads. Element by element that
// copy was a fifth of a 16-sequence decode step; on amd64 whole 8×8 blocks
// go through SSE2 unpacks (transpose_amd64.s) and only the edges are
// copied by transpose16Ref. It is a copy: the bits that reach the matmul
// are the same either way.
func transpose16(dst []uint16, dstStride int, src []uint16, srcStride, rows, cols int) {
	if rows <= 0 || cols <= 0 {
		return
	}
	// The whole block lies inside both slices (checked once, as the
	// assembly cannot).
	_ = src[(rows-1)*srcStride+cols-1]
	_ = dst[(cols-1)*dstStride+rows-1]
	r8, c8 := rows&^7, cols&^7
	if !haveTranspose8x8 || r8 == 0 || c8 == 0 {
		transpose16Ref(dst, dstStride, src, srcStride, rows, cols)
		return
	}
	transpose8x8Blocks(unsafe.SliceData(dst), 2*dstStride, unsafe.SliceData(src), 2*srcStride, r8/8, c8/8)
	if c8 < cols { // columns past the blocks, in the blocks' rows
		transpose16Ref(dst[c8*dstStride:], dstStride, src[c8:], srcStride, r8, cols-c8)
	}
	if r8 < rows { // rows past the blocks, every column
		transpose16Ref(dst[r8:], dstStride, src[r8*srcStride:], srcStride, rows-r8, cols)
	}
}

// transpose16Ref is transpose16 element by element: the reference the
// assembly is tested against, and the edges of a block it does not cover.
func transpose16Ref(dst []uint16, dstStride int, src []uint16, srcStride, rows, cols int) {
	for j := 0; j < rows; j++ {
		for d, x := range src[j*srcStride : j*srcStride+cols] {
			dst[d*dstStride+j] = x
		}
	}
}
