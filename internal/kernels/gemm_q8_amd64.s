//go:build amd64 && !noasm

#include "textflag.h"

// gemmQ40x16: two Q4_0 weight rows × sixteen tokens with AVX-512 VNNI (and
// gemmQ40x8, the same over eight tokens for a batched decode step), the
// prefill tile (see gemm_amd64.go for the layouts and why it is bit-equal
// to dotQ32Ref).
//
// Lane layout: a zmm holds one row and one token pair, dword 2l+k being
// lane l of token 2p+k. VPDPBUSD multiplies unsigned by signed bytes, so
// the activations arrive offset by 128 (x^0x80 = x+128, pair-interleaved
// per dword by gemmPackQ8) and the weights stay signed; the integer lane
// sum is Σ(x+128)w, corrected exactly by starting from C = −128·Σw (per
// dword lane, computed once per row block and reused by all eight pairs).
//
// Registers: Z0..Z7 row 0 float accumulators (pair p), Z8..Z15 row 1,
// Z16/Z17 the two rows' weights dword-duplicated, Z18/Z19 their C,
// Z20..Z27 the eight activation pairs of the block, Z28..Z31 temporaries.
// The sixteen scale products d_w×d_x of each row are one VMULPS kept at
// 0(SP) / 64(SP); each pair broadcasts its two with VBROADCASTSD.

// ROWSETUP(OFF, W, C, SOFF): weights of the row at OFF(SI)-relative block,
// their correction and scale products.
#define ROWSETUP(LOADW, WADDR, DADDR, W, C, SOFF) \
	LOADW(WADDR)                        \
	VMOVDQU32     ·gemmDupIdx(SB), Z29  \
	VPERMD        Z28, Z29, W           \
	VPBROADCASTD  ·gemmBias(SB), Z29    \
	VPXORD        Z30, Z30, Z30         \
	VPDPBUSD      W, Z29, Z30           \
	VPXORD        C, C, C               \
	VPSUBD        Z30, C, C             \
	VPBROADCASTW  DADDR, Y30            \
	VCVTPH2PS     Y30, Z30              \
	VMULPS        (DX), Z30, Z30        \
	VMOVUPS       Z30, SOFF(SP)

// Weight loader: the block's 32 signed values into Y28 (Z29..Z31 free).
// Q4_0: 16 bytes of nibbles at 2, low nibbles elements 0..15, high
// 16..31, value nibble−8. (The tiles served Q8_0 too until Q8_0 took
// dotQ32Blocks' order and its packed kernels.)
#define LOADQ40W(ADDR) \
	VMOVDQU32      ADDR, X28             \
	VPSRLW         $4, X28, X29          \
	VINSERTI32X4   $1, X29, Y28, Y28     \
	VPBROADCASTD   ·gemmNib(SB), Y29     \
	VPANDD         Y29, Y28, Y28         \
	VPBROADCASTD   ·gemmNib+4(SB), Y29   \
	VPSUBB         Y29, Y28, Y28

// PAIR(W, C, X, SOFF, ACC, T, S): one row × one token pair × one block.
#define PAIR(W, C, X, SOFF, ACC, T, S) \
	VMOVDQA64    C, T           \
	VPDPBUSD     W, X, T        \
	VCVTDQ2PS    T, T           \
	VBROADCASTSD SOFF(SP), S    \
	VFMADD231PS  S, T, ACC

// EPI(Z, Y, PTR): hsum8 of both tokens of accumulator Z in dotQ32Ref's
// order, stored at (PTR) and (PTR)(R10*1).
#define EPI(Z, Y, PTR) \
	VEXTRACTF32X8 $1, Z, Y28       \
	VADDPS        Y28, Y, Y28      \
	VEXTRACTF32X4 $1, Y28, X29     \
	VADDPS        X29, X28, X28    \
	VMOVHLPS      X28, X28, X29    \
	VADDPS        X29, X28, X28    \
	VMOVSS        X28, (PTR)       \
	VEXTRACTPS    $1, X28, (PTR)(R10*1)

// PAIRS4(W, C, XA, XB, XC, XD, SOFF, A0, A1, A2, A3): one row against
// four token pairs (activations XA..XD, scale products from SOFF(SP)).
#define PAIRS4(W, C, XA, XB, XC, XD, SOFF, A0, A1, A2, A3) \
	PAIR(W, C, XA, SOFF, A0, Z28, Z30)      \
	PAIR(W, C, XB, (SOFF+8), A1, Z29, Z31)  \
	PAIR(W, C, XC, (SOFF+16), A2, Z28, Z30) \
	PAIR(W, C, XD, (SOFF+24), A3, Z29, Z31)

#define ZERO4(A0, A1, A2, A3) \
	VPXORD A0, A0, A0 \
	VPXORD A1, A1, A1 \
	VPXORD A2, A2, A2 \
	VPXORD A3, A3, A3

// EPI4(A0, Y0, …, A3, Y3): four token pairs' results from R11 on, R12
// bytes (two tokens) apart; R11 ends past the last.
#define EPI4(A0, B0, A1, B1, A2, B2, A3, B3) \
	EPI(A0, B0, R11) \
	ADDQ R12, R11    \
	EPI(A1, B1, R11) \
	ADDQ R12, R11    \
	EPI(A2, B2, R11) \
	ADDQ R12, R11    \
	EPI(A3, B3, R11) \
	ADDQ R12, R11

#define GEMMQARGS \
	MOVQ w+0(FP), SI           \
	MOVQ rowBytes+8(FP), R9    \
	MOVQ xp+16(FP), R8         \
	MOVQ d16+24(FP), DX        \
	MOVQ nb+32(FP), CX         \
	MOVQ out+40(FP), DI        \
	MOVQ stride+48(FP), R10    \
	LEAQ (R10)(R10*1), R12

#define ROWSETUP2(LOADW) \
	ROWSETUP(LOADW, 2(SI), (SI), Z16, Z18, 0) \
	ROWSETUP(LOADW, 2(SI)(R9*1), (SI)(R9*1), Z17, Z19, 64)

#define XLOAD4(OFF, XA, XB, XC, XD) \
	VMOVDQU64 OFF(R8), XA      \
	VMOVDQU64 (OFF+64)(R8), XB  \
	VMOVDQU64 (OFF+128)(R8), XC \
	VMOVDQU64 (OFF+192)(R8), XD

// GEMMQ(NAME, LOADW, BSTEP): func(w *byte, rowBytes int, xp *byte, d16 *float32, nb int, out *float32, stride int)
// Rows at w and w+rowBytes; xp the group's packed activations (512 bytes
// per block), d16 its sixteen scales per block; out[t*stride + r] (bytes:
// stride is the byte distance between tokens) for t < 16, r < 2.
#define GEMMQ(NAME, LOADW, BSTEP) \
TEXT NAME(SB), NOSPLIT, $128-56 \
	GEMMQARGS \
	ZERO4(Z0, Z1, Z2, Z3) \
	ZERO4(Z4, Z5, Z6, Z7) \
	ZERO4(Z8, Z9, Z10, Z11) \
	ZERO4(Z12, Z13, Z14, Z15) \
 \
loop: \
	ROWSETUP2(LOADW) \
	XLOAD4(0, Z20, Z21, Z22, Z23) \
	XLOAD4(256, Z24, Z25, Z26, Z27) \
	PAIRS4(Z16, Z18, Z20, Z21, Z22, Z23, 0, Z0, Z1, Z2, Z3) \
	PAIRS4(Z16, Z18, Z24, Z25, Z26, Z27, 32, Z4, Z5, Z6, Z7) \
	PAIRS4(Z17, Z19, Z20, Z21, Z22, Z23, 64, Z8, Z9, Z10, Z11) \
	PAIRS4(Z17, Z19, Z24, Z25, Z26, Z27, 96, Z12, Z13, Z14, Z15) \
	ADDQ $BSTEP, SI \
	ADDQ $512, R8 \
	ADDQ $64, DX \
	DECQ CX \
	JNZ  loop \
 \
	MOVQ DI, R11 \
	EPI4(Z0, Y0, Z1, Y1, Z2, Y2, Z3, Y3) \
	EPI4(Z4, Y4, Z5, Y5, Z6, Y6, Z7, Y7) \
	LEAQ 4(DI), R11 \
	EPI4(Z8, Y8, Z9, Y9, Z10, Y10, Z11, Y11) \
	EPI4(Z12, Y12, Z13, Y13, Z14, Y14, Z15, Y15) \
	VZEROUPPER \
	RET

// GEMMQ8(NAME, LOADW, BSTEP): GEMMQ for a group of eight tokens (a
// batched decode step): 256 bytes of activations per block; d16 keeps
// sixteen slots per block, the last eight unused (zero).
#define GEMMQ8(NAME, LOADW, BSTEP) \
TEXT NAME(SB), NOSPLIT, $128-56 \
	GEMMQARGS \
	ZERO4(Z0, Z1, Z2, Z3) \
	ZERO4(Z8, Z9, Z10, Z11) \
 \
loop: \
	ROWSETUP2(LOADW) \
	XLOAD4(0, Z20, Z21, Z22, Z23) \
	PAIRS4(Z16, Z18, Z20, Z21, Z22, Z23, 0, Z0, Z1, Z2, Z3) \
	PAIRS4(Z17, Z19, Z20, Z21, Z22, Z23, 64, Z8, Z9, Z10, Z11) \
	ADDQ $BSTEP, SI \
	ADDQ $256, R8 \
	ADDQ $64, DX \
	DECQ CX \
	JNZ  loop \
 \
	MOVQ DI, R11 \
	EPI4(Z0, Y0, Z1, Y1, Z2, Y2, Z3, Y3) \
	LEAQ 4(DI), R11 \
	EPI4(Z8, Y8, Z9, Y9, Z10, Y10, Z11, Y11) \
	VZEROUPPER \
	RET

// func gemmQ40x16(w *byte, rowBytes int, xp *byte, d16 *float32, nb int, out *float32, stride int)
GEMMQ(·gemmQ40x16, LOADQ40W, 18)

// func gemmQ40x8(w *byte, rowBytes int, xp *byte, d16 *float32, nb int, out *float32, stride int)
GEMMQ8(·gemmQ40x8, LOADQ40W, 18)

// gemmDupIdx duplicates each dword: [0,0,1,1,…,7,7].
DATA ·gemmDupIdx+0(SB)/4, $0
DATA ·gemmDupIdx+4(SB)/4, $0
DATA ·gemmDupIdx+8(SB)/4, $1
DATA ·gemmDupIdx+12(SB)/4, $1
DATA ·gemmDupIdx+16(SB)/4, $2
DATA ·gemmDupIdx+20(SB)/4, $2
DATA ·gemmDupIdx+24(SB)/4, $3
DATA ·gemmDupIdx+28(SB)/4, $3
DATA ·gemmDupIdx+32(SB)/4, $4
DATA ·gemmDupIdx+36(SB)/4, $4
DATA ·gemmDupIdx+40(SB)/4, $5
DATA ·gemmDupIdx+44(SB)/4, $5
DATA ·gemmDupIdx+48(SB)/4, $6
DATA ·gemmDupIdx+52(SB)/4, $6
DATA ·gemmDupIdx+56(SB)/4, $7
DATA ·gemmDupIdx+60(SB)/4, $7
GLOBL ·gemmDupIdx(SB), RODATA|NOPTR, $64

// gemmBias is the byte 128 four times (the activation offset).
DATA ·gemmBias+0(SB)/4, $0x80808080
GLOBL ·gemmBias(SB), RODATA|NOPTR, $4

// gemmNib is the Q4_0 nibble mask and offset.
DATA ·gemmNib+0(SB)/4, $0x0f0f0f0f
DATA ·gemmNib+4(SB)/4, $0x08080808
GLOBL ·gemmNib(SB), RODATA|NOPTR, $8
