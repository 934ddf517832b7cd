//go:build amd64 && !noasm

#include "textflag.h"

// Activation layouts for the prefill tiles (gemm_amd64.go documents them).

// func gemmPackQ8Pair(dst *byte, s0, s1 *int8, nb, step int)
// One token pair: for each block b, dst[step·b:step·b+64] takes the 32
// bytes of s0 and s1's block b interleaved per dword (s0 at even dwords),
// each byte XOR 0x80.
TEXT ·gemmPackQ8Pair(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ s0+8(FP), SI
	MOVQ s1+16(FP), DX
	MOVQ nb+24(FP), CX
	MOVQ step+32(FP), R8
	VMOVDQU32    ·gemmPairIdx(SB), Z2
	VPBROADCASTD ·gemmBias(SB), Z3

loop:
	VMOVDQU32 (SI), Y0
	VMOVDQU32 (DX), Y1
	VPERMT2D  Z1, Z2, Z0
	VPXORD    Z3, Z0, Z0
	VMOVDQU32 Z0, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DX
	ADDQ      R8, DI
	DECQ      CX
	JNZ       loop
	VZEROUPPER
	RET

// func gemmPackFPair(dst *float32, s0, s1 *float32, n8, step int)
// One token pair of float activations: for each eight columns c,
// dst[step·c/4 : step·c/4+16] (step: the group's bytes per eight columns,
// 64 bytes per pair) takes s0[8c:8c+8] then s1[8c:8c+8].
TEXT ·gemmPackFPair(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ s0+8(FP), SI
	MOVQ s1+16(FP), DX
	MOVQ n8+24(FP), CX
	MOVQ step+32(FP), R8
	SHRQ $3, CX

floop:
	VMOVUPS       (SI), Y0
	VINSERTF32X8  $1, (DX), Z0, Z0
	VMOVUPS       Z0, (DI)
	ADDQ          $32, SI
	ADDQ          $32, DX
	ADDQ          R8, DI
	DECQ          CX
	JNZ           floop
	VZEROUPPER
	RET

// gemmPairIdx interleaves two tables' dwords: [0,16,1,17,…,7,23].
DATA ·gemmPairIdx+0(SB)/4, $0
DATA ·gemmPairIdx+4(SB)/4, $16
DATA ·gemmPairIdx+8(SB)/4, $1
DATA ·gemmPairIdx+12(SB)/4, $17
DATA ·gemmPairIdx+16(SB)/4, $2
DATA ·gemmPairIdx+20(SB)/4, $18
DATA ·gemmPairIdx+24(SB)/4, $3
DATA ·gemmPairIdx+28(SB)/4, $19
DATA ·gemmPairIdx+32(SB)/4, $4
DATA ·gemmPairIdx+36(SB)/4, $20
DATA ·gemmPairIdx+40(SB)/4, $5
DATA ·gemmPairIdx+44(SB)/4, $21
DATA ·gemmPairIdx+48(SB)/4, $6
DATA ·gemmPairIdx+52(SB)/4, $22
DATA ·gemmPairIdx+56(SB)/4, $7
DATA ·gemmPairIdx+60(SB)/4, $23
GLOBL ·gemmPairIdx(SB), RODATA|NOPTR, $64
