//go:build amd64 && !noasm

#include "textflag.h"

// gemmK16: one unpacked Q4_K row × sixteen tokens with AVX-512 VNNI,
// the K-quant prefill tile (see gemm_k_amd64.go for the layouts).
//
// Per super-block the row's 256 unsigned values (Z16..Z19) and its 16-bit
// scale vectors (Z20..Z23) stay in registers while every token passes:
// VPMADDUBSW forms the exact pair sums q·x of two 32-value groups,
// VPDPWSSD multiplies them by the sub-block scales and accumulates — lane l
// of the low and high halves together is dotKRef's exact A[l] — then
// convert, and the FMA with d_w×d_x into the token's eight lanes (Y0..Y15).
// The min term M of all sixteen tokens is one vector: VPDPWSSD of the
// transposed activation sums with each broadcast pair of the row's min
// multipliers, then accM += float(M)×(dmin_w×d_x) per token lane (Z24).

// TOK(ADDR, SOFF, ACC): token at ADDR (its super-block's 256 int8).
#define TOK(ADDR0, ADDR1, ADDR2, ADDR3, SOFF, ACC) \
	VPMADDUBSW    ADDR0, Z16, Z28  \
	VPXORD        Z26, Z26, Z26    \
	VPDPWSSD      Z20, Z28, Z26    \
	VPMADDUBSW    ADDR1, Z17, Z29  \
	VPDPWSSD      Z21, Z29, Z26    \
	VPMADDUBSW    ADDR2, Z18, Z28  \
	VPDPWSSD      Z22, Z28, Z26    \
	VPMADDUBSW    ADDR3, Z19, Z29  \
	VPDPWSSD      Z23, Z29, Z26    \
	VEXTRACTI64X4 $1, Z26, Y27     \
	VPADDD        Y27, Y26, Y26    \
	VCVTDQ2PS     Y26, Y26         \
	VBROADCASTSS  SOFF(SP), Y27    \
	VFMADD231PS   Y27, Y26, ACC

#define TOK4(B, S0, A0, A1, A2, A3) \
	TOK(0(B), 64(B), 128(B), 192(B), S0, A0) \
	TOK(0(B)(R9*1), 64(B)(R9*1), 128(B)(R9*1), 192(B)(R9*1), S0+4, A1) \
	TOK(0(B)(R9*2), 64(B)(R9*2), 128(B)(R9*2), 192(B)(R9*2), S0+8, A2) \
	TOK(0(B)(AX*1), 64(B)(AX*1), 128(B)(AX*1), 192(B)(AX*1), S0+12, A3)

#define MPAIR(I) \
	VPBROADCASTD (4*I)(R10), Z31 \
	VPDPWSSD     (64*I)(DI), Z31, Z30

// HS(Y, X): hsum8 of Y into X's low float (fma.go's order).
#define HS(Y, X) \
	VEXTRACTF32X4 $1, Y, X31  \
	VADDPS        X31, X, X   \
	VMOVHLPS      X, X, X31   \
	VADDPS        X31, X, X   \
	VMOVSHDUP     X, X31      \
	VADDSS        X31, X, X

#define OUT(Y, X, T) \
	HS(Y, X)                   \
	VSUBSS  (64+4*T)(SP), X, X \
	VMOVSS  X, (R11)           \
	ADDQ    R9, R11

// func gemmK16(q *byte, sv *int16, wm *byte, xq *int8, stride int, xd16 *float32, bsT *int32, nsb int, out *float32, ostride int)
// q: per super-block its 256 values; sv: its 128 int16 scales; wm: per super-block
// 16 int16 min multipliers, then d and the min factor as float32 (40
// bytes); xq: token 0's activations, stride bytes between tokens; xd16 and
// bsT: the group's scales (16 per super-block) and activation sums as
// int16 pairs transposed (8 pairs × 16 tokens per super-block); out + t×ostride.
TEXT ·gemmK16(SB), NOSPLIT, $128-80
	MOVQ q+0(FP), SI
	MOVQ sv+8(FP), R11
	MOVQ wm+16(FP), R10
	MOVQ xq+24(FP), R8
	MOVQ stride+32(FP), R9
	MOVQ xd16+40(FP), DX
	MOVQ bsT+48(FP), DI
	MOVQ nsb+56(FP), CX
	LEAQ (R9)(R9*2), AX
	LEAQ (R8)(R9*4), R12
	LEAQ (R12)(R9*4), R13
	LEAQ (R13)(R9*4), BX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z24, Z24, Z24

loop:
	VMOVDQU64    0(SI), Z16
	VMOVDQU64    64(SI), Z17
	VMOVDQU64    128(SI), Z18
	VMOVDQU64    192(SI), Z19
	VMOVDQU64    0(R11), Z20
	VMOVDQU64    64(R11), Z21
	VMOVDQU64    128(R11), Z22
	VMOVDQU64    192(R11), Z23
	VBROADCASTSS 32(R10), Z25
	VMULPS       (DX), Z25, Z25
	VMOVUPS      Z25, 0(SP)
	VPXORD       Z30, Z30, Z30
	MPAIR(0)
	MPAIR(1)
	MPAIR(2)
	MPAIR(3)
	MPAIR(4)
	MPAIR(5)
	MPAIR(6)
	MPAIR(7)
	VCVTDQ2PS    Z30, Z30
	VBROADCASTSS 36(R10), Z31
	VMULPS       (DX), Z31, Z31
	VFMADD231PS  Z31, Z30, Z24
	TOK4(R8, 0, Y0, Y1, Y2, Y3)
	TOK4(R12, 16, Y4, Y5, Y6, Y7)
	TOK4(R13, 32, Y8, Y9, Y10, Y11)
	TOK4(BX, 48, Y12, Y13, Y14, Y15)
	ADDQ $256, SI
	ADDQ $256, R11
	ADDQ $40, R10
	ADDQ $64, DX
	ADDQ $512, DI
	ADDQ $256, R8
	ADDQ $256, R12
	ADDQ $256, R13
	ADDQ $256, BX
	DECQ CX
	JNZ  loop

	VMOVUPS Z24, 64(SP)
	MOVQ out+64(FP), R11
	MOVQ ostride+72(FP), R9
	OUT(Y0, X0, 0)
	OUT(Y1, X1, 1)
	OUT(Y2, X2, 2)
	OUT(Y3, X3, 3)
	OUT(Y4, X4, 4)
	OUT(Y5, X5, 5)
	OUT(Y6, X6, 6)
	OUT(Y7, X7, 7)
	OUT(Y8, X8, 8)
	OUT(Y9, X9, 9)
	OUT(Y10, X10, 10)
	OUT(Y11, X11, 11)
	OUT(Y12, X12, 12)
	OUT(Y13, X13, 13)
	OUT(Y14, X14, 14)
	OUT(Y15, X15, 15)
	VZEROUPPER
	RET

// gemmK16Q6: gemmK16 for Q6_K in ggml's order (dotKRef): no min vector.
// Each token's offset is folded into its eight integer lanes before the
// conversion: after the two halves are added, VPDPWSSD of the token's
// eight bsum pairs (bsT, per-token layout) with the row's negated offset
// multipliers −32·sc (Y30) gives A[l] − 32·(sc[2l]·bsum[2l] +
// sc[2l+1]·bsum[2l+1]) exactly; then convert and FMA with d_w×d_x.

// TOKQ6(ADDR, BOFF, SOFF, ACC): TOK, plus the offset pairs at BOFF(DI).
#define TOKQ6(ADDR0, ADDR1, ADDR2, ADDR3, BOFF, SOFF, ACC) \
	VPMADDUBSW    ADDR0, Z16, Z28  \
	VPXORD        Z26, Z26, Z26    \
	VPDPWSSD      Z20, Z28, Z26    \
	VPMADDUBSW    ADDR1, Z17, Z29  \
	VPDPWSSD      Z21, Z29, Z26    \
	VPMADDUBSW    ADDR2, Z18, Z28  \
	VPDPWSSD      Z22, Z28, Z26    \
	VPMADDUBSW    ADDR3, Z19, Z29  \
	VPDPWSSD      Z23, Z29, Z26    \
	VEXTRACTI64X4 $1, Z26, Y27     \
	VPADDD        Y27, Y26, Y26    \
	VPDPWSSD      BOFF(DI), Y30, Y26 \
	VCVTDQ2PS     Y26, Y26         \
	VBROADCASTSS  SOFF(SP), Y27    \
	VFMADD231PS   Y27, Y26, ACC

#define TOK4Q6(B, B0, S0, A0, A1, A2, A3) \
	TOKQ6(0(B), 64(B), 128(B), 192(B), B0, S0, A0) \
	TOKQ6(0(B)(R9*1), 64(B)(R9*1), 128(B)(R9*1), 192(B)(R9*1), B0+32, S0+4, A1) \
	TOKQ6(0(B)(R9*2), 64(B)(R9*2), 128(B)(R9*2), 192(B)(R9*2), B0+64, S0+8, A2) \
	TOKQ6(0(B)(AX*1), 64(B)(AX*1), 128(B)(AX*1), 192(B)(AX*1), B0+96, S0+12, A3)

#define OUTQ6(Y, X) \
	HS(Y, X)         \
	VMOVSS  X, (R11) \
	ADDQ    R9, R11

// func gemmK16Q6(q *byte, sv *int16, wm *byte, xq *int8, stride int, xd16 *float32, bsT *int32, nsb int, out *float32, ostride int)
// As gemmK16, but wm's 16 int16 are the negated offset multipliers and
// bsT holds per super-block sixteen tokens' eight bsum pairs each.
TEXT ·gemmK16Q6(SB), NOSPLIT, $64-80
	MOVQ q+0(FP), SI
	MOVQ sv+8(FP), R11
	MOVQ wm+16(FP), R10
	MOVQ xq+24(FP), R8
	MOVQ stride+32(FP), R9
	MOVQ xd16+40(FP), DX
	MOVQ bsT+48(FP), DI
	MOVQ nsb+56(FP), CX
	LEAQ (R9)(R9*2), AX
	LEAQ (R8)(R9*4), R12
	LEAQ (R12)(R9*4), R13
	LEAQ (R13)(R9*4), BX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15

loopq6:
	VMOVDQU64    0(SI), Z16
	VMOVDQU64    64(SI), Z17
	VMOVDQU64    128(SI), Z18
	VMOVDQU64    192(SI), Z19
	VMOVDQU64    0(R11), Z20
	VMOVDQU64    64(R11), Z21
	VMOVDQU64    128(R11), Z22
	VMOVDQU64    192(R11), Z23
	VMOVDQU64    0(R10), Y30
	VBROADCASTSS 32(R10), Z25
	VMULPS       (DX), Z25, Z25
	VMOVUPS      Z25, 0(SP)
	TOK4Q6(R8, 0, 0, Y0, Y1, Y2, Y3)
	TOK4Q6(R12, 128, 16, Y4, Y5, Y6, Y7)
	TOK4Q6(R13, 256, 32, Y8, Y9, Y10, Y11)
	TOK4Q6(BX, 384, 48, Y12, Y13, Y14, Y15)
	ADDQ $256, SI
	ADDQ $256, R11
	ADDQ $40, R10
	ADDQ $64, DX
	ADDQ $512, DI
	ADDQ $256, R8
	ADDQ $256, R12
	ADDQ $256, R13
	ADDQ $256, BX
	DECQ CX
	JNZ  loopq6

	MOVQ out+64(FP), R11
	MOVQ ostride+72(FP), R9
	OUTQ6(Y0, X0)
	OUTQ6(Y1, X1)
	OUTQ6(Y2, X2)
	OUTQ6(Y3, X3)
	OUTQ6(Y4, X4)
	OUTQ6(Y5, X5)
	OUTQ6(Y6, X6)
	OUTQ6(Y7, X7)
	OUTQ6(Y8, X8)
	OUTQ6(Y9, X9)
	OUTQ6(Y10, X10)
	OUTQ6(Y11, X11)
	OUTQ6(Y12, X12)
	OUTQ6(Y13, X13)
	OUTQ6(Y14, X14)
	OUTQ6(Y15, X15)
	VZEROUPPER
	RET
