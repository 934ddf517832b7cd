//go:build amd64 && !noasm

#include "textflag.h"

// func transpose8x8Blocks(dst *uint16, dstStride int, src *uint16, srcStride int, rowBlocks, colBlocks int)
//
// Transposes rowBlocks×colBlocks blocks of 8×8 16-bit values: src row j,
// column d (byte offset j*srcStride + 2d) goes to dst row d, column j
// (byte offset d*dstStride + 2j). Strides are in bytes. SSE2 only, which
// every amd64 CPU has: eight unaligned 16-byte loads, three rounds of
// unpacks (16-, 32-, 64-bit lanes), eight stores per block.
TEXT ·transpose8x8Blocks(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ dstStride+8(FP), DX
	MOVQ src+16(FP), R11
	MOVQ srcStride+24(FP), BX
	MOVQ rowBlocks+32(FP), R10
	MOVQ colBlocks+40(FP), R9
	TESTQ R10, R10
	JLE  done
	TESTQ R9, R9
	JLE  done
	MOVQ BX, R8
	SHLQ $3, R8 // 8 source rows
	MOVQ DX, SI
	SHLQ $3, SI // 8 destination rows
	MOVQ DI, R12

rowloop:
	MOVQ R11, R13
	MOVQ R12, R14
	MOVQ R9, CX

colloop:
	MOVQ  R13, AX
	MOVOU (AX), X0
	ADDQ  BX, AX
	MOVOU (AX), X1
	ADDQ  BX, AX
	MOVOU (AX), X2
	ADDQ  BX, AX
	MOVOU (AX), X3
	ADDQ  BX, AX
	MOVOU (AX), X4
	ADDQ  BX, AX
	MOVOU (AX), X5
	ADDQ  BX, AX
	MOVOU (AX), X6
	ADDQ  BX, AX
	MOVOU (AX), X7

	// Rows a..h. 16-bit interleave: X0 = a0 b0 a1 b1 a2 b2 a3 b3, X8 = a4 b4 … a7 b7, …
	MOVO      X0, X8
	PUNPCKLWL X1, X0
	PUNPCKHWL X1, X8
	MOVO      X2, X9
	PUNPCKLWL X3, X2
	PUNPCKHWL X3, X9
	MOVO      X4, X10
	PUNPCKLWL X5, X4
	PUNPCKHWL X5, X10
	MOVO      X6, X11
	PUNPCKLWL X7, X6
	PUNPCKHWL X7, X11

	// 32-bit interleave: X0 = abcd0 abcd1, X1 = abcd2 abcd3, X8 = abcd4 abcd5, X3 = abcd6 abcd7,
	// X4 = efgh0 efgh1, X5 = efgh2 efgh3, X10 = efgh4 efgh5, X7 = efgh6 efgh7.
	MOVO      X0, X1
	PUNPCKLLQ X2, X0
	PUNPCKHLQ X2, X1
	MOVO      X8, X3
	PUNPCKLLQ X9, X8
	PUNPCKHLQ X9, X3
	MOVO      X4, X5
	PUNPCKLLQ X6, X4
	PUNPCKHLQ X6, X5
	MOVO      X10, X7
	PUNPCKLLQ X11, X10
	PUNPCKHLQ X11, X7

	// 64-bit interleave: output rows 0..7 in X0 X2 X1 X6 X8 X9 X3 X11.
	MOVO       X0, X2
	PUNPCKLQDQ X4, X0
	PUNPCKHQDQ X4, X2
	MOVO       X1, X6
	PUNPCKLQDQ X5, X1
	PUNPCKHQDQ X5, X6
	MOVO       X8, X9
	PUNPCKLQDQ X10, X8
	PUNPCKHQDQ X10, X9
	MOVO       X3, X11
	PUNPCKLQDQ X7, X3
	PUNPCKHQDQ X7, X11

	MOVQ  R14, AX
	MOVOU X0, (AX)
	ADDQ  DX, AX
	MOVOU X2, (AX)
	ADDQ  DX, AX
	MOVOU X1, (AX)
	ADDQ  DX, AX
	MOVOU X6, (AX)
	ADDQ  DX, AX
	MOVOU X8, (AX)
	ADDQ  DX, AX
	MOVOU X9, (AX)
	ADDQ  DX, AX
	MOVOU X3, (AX)
	ADDQ  DX, AX
	MOVOU X11, (AX)

	ADDQ $16, R13 // next 8 source columns
	ADDQ SI, R14  // next 8 destination rows
	DECQ CX
	JNZ  colloop

	ADDQ R8, R11  // next 8 source rows
	ADDQ $16, R12 // next 8 destination columns
	DECQ R10
	JNZ  rowloop

done:
	RET
