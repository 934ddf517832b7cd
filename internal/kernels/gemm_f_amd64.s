//go:build amd64 && !noasm

#include "textflag.h"

// gemmF16x8 / gemmBF16x8 / gemmF32x8: six float weight rows × eight tokens
// with AVX-512, the prefill tile (see gemm_amd64.go).
//
// A zmm holds one row and one token pair: lanes 0..7 token 2p, 8..15 token
// 2p+1, lane l accumulating columns ≡ l (mod 8) exactly as dotFloatRef's
// acc[l]. Per eight columns the four activation pairs (pre-packed by
// gemmPackF, 256 bytes) are loaded once; each row's eight weights are
// widened to float into both halves of a zmm and meet the four pairs in
// four FMAs: 24 FMAs per 6 weight loads and 4 activation loads.
//
// Registers: Z0..Z23 accumulators (row r, pair p → Z(4r+p)), Z24..Z27 the
// activation pairs, Z28/Z29 weights, Z30/Z31 epilogue temporaries.

// Weight loaders: eight weights at ADDR into both halves of Z.
#define LOADF16(ADDR, Y, Z) \
	VBROADCASTI32X4 ADDR, Y \
	VCVTPH2PS       Y, Z

#define LOADBF16(ADDR, Y, Z) \
	VBROADCASTI32X4 ADDR, Y \
	VPMOVZXWD       Y, Z    \
	VPSLLD          $16, Z, Z

#define LOADF32(ADDR, Y, Z) \
	VBROADCASTF32X8 ADDR, Z

#define ROW(LOAD, ADDR, Y, Z, A0, A1, A2, A3) \
	LOAD(ADDR, Y, Z)            \
	VFMADD231PS Z24, Z, A0      \
	VFMADD231PS Z25, Z, A1      \
	VFMADD231PS Z26, Z, A2      \
	VFMADD231PS Z27, Z, A3

// HS(Y, X): hsum8 of the eight lanes of Y into X's low float, the order
// of hsum8 (fma.go).
#define HS(Y, X) \
	VEXTRACTF32X4 $1, Y, X31  \
	VADDPS        X31, X, X   \
	VMOVHLPS      X, X, X31   \
	VADDPS        X31, X, X   \
	VMOVSHDUP     X, X31      \
	VADDSS        X31, X, X

// EPI(Z, Y, X, PTR): both tokens of accumulator Z to (PTR), (PTR)(R10*1).
#define EPI(Z, Y, X, PTR) \
	VEXTRACTF32X8 $1, Z, Y30      \
	HS(Y, X)                      \
	VMOVSS        X, (PTR)        \
	HS(Y30, X30)                  \
	VMOVSS        X30, (PTR)(R10*1)

#define EPIROW(A0, Y0_, X0_, A1, Y1_, X1_, A2, Y2_, X2_, A3, Y3_, X3_) \
	MOVQ DI, R11                   \
	EPI(A0, Y0_, X0_, R11)         \
	ADDQ R12, R11                  \
	EPI(A1, Y1_, X1_, R11)         \
	ADDQ R12, R11                  \
	EPI(A2, Y2_, X2_, R11)         \
	ADDQ R12, R11                  \
	EPI(A3, Y3_, X3_, R11)         \
	ADDQ $4, DI

// ROWS4(A, B, C, D, R): the hsum8 of rows 0..3 (accumulators A..D, one
// token pair each) for both tokens, in hsum8's order but eight sums at a
// time: the halves' blocks are regrouped (VSHUFF32X4, VSHUFPS) so each add
// is one level of hsum8's tree for eight results. R's lanes 4k and 4k+2
// hold them: block 0 rows 0 and 2 of the first token, block 1 the same of
// the second, blocks 2 and 3 rows 1 and 3 of the first and second.
// Z24 and Z25 are temporaries.
#define ROWS4(A, B, C, D, R) \
	VSHUFF32X4 $0x88, B, A, Z24 \
	VSHUFF32X4 $0xdd, B, A, Z25 \
	VADDPS     Z25, Z24, Z24    \
	VSHUFF32X4 $0x88, D, C, Z25 \
	VSHUFF32X4 $0xdd, D, C, R   \
	VADDPS     R, Z25, Z25      \
	VSHUFPS    $0x44, Z25, Z24, R \
	VSHUFPS    $0xee, Z25, Z24, Z24 \
	VADDPS     Z24, R, R        \
	VMOVSHDUP  R, Z24           \
	VADDPS     Z24, R, R

// EPIQUAD stores two token pairs' results for rows 0..3: ROWS4 of each,
// then one VPERMT2PS (index Z31) gathers token t's four rows into lanes
// 4t..4t+3, one 16-byte store per token at DI + t*R10; DI moves on four
// tokens. It replaced a scalar hsum8 and store per result (EPI), which
// were about a quarter of the 4×12 tile's work at 576 columns:
// BenchmarkGemm F16 130–132 → 141–143 GFLOP/cpu-s.
#define EPIQUAD(A0, B0, C0, D0, A1, B1, C1, D1) \
	ROWS4(A0, B0, C0, D0, Z26)         \
	ROWS4(A1, B1, C1, D1, Z27)         \
	VPERMT2PS     Z27, Z31, Z26        \
	VMOVUPS       X26, (DI)            \
	VEXTRACTF32X4 $1, Z26, (DI)(R10*1) \
	VEXTRACTF32X4 $2, Z26, (DI)(R12*1) \
	VEXTRACTF32X4 $3, Z26, (DI)(R13*1) \
	LEAQ          (DI)(R10*4), DI

// GEMMFARGS loads the float tiles' arguments (one signature): SI the
// first row, R9 the row stride, R8 the packed activations, CX the steps of
// eight columns, DI out, R10 the token stride, R11 row 2.
#define GEMMFARGS \
	MOVQ w+0(FP), SI \
	MOVQ rowBytes+8(FP), R9 \
	MOVQ xp+16(FP), R8 \
	MOVQ n8+24(FP), CX \
	MOVQ out+32(FP), DI \
	MOVQ stride+40(FP), R10 \
	SHRQ $3, CX \
	LEAQ (SI)(R9*2), R11

// ZERO24 clears the tiles' 24 accumulators Z0..Z23.
#define ZERO24 \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7 \
	VPXORD Z8, Z8, Z8 \
	VPXORD Z9, Z9, Z9 \
	VPXORD Z10, Z10, Z10 \
	VPXORD Z11, Z11, Z11 \
	VPXORD Z12, Z12, Z12 \
	VPXORD Z13, Z13, Z13 \
	VPXORD Z14, Z14, Z14 \
	VPXORD Z15, Z15, Z15 \
	VPXORD Z16, Z16, Z16 \
	VPXORD Z17, Z17, Z17 \
	VPXORD Z18, Z18, Z18 \
	VPXORD Z19, Z19, Z19 \
	VPXORD Z20, Z20, Z20 \
	VPXORD Z21, Z21, Z21 \
	VPXORD Z22, Z22, Z22 \
	VPXORD Z23, Z23, Z23 

// GEMMF(NAME, LOAD, WSTEP): func(w *byte, rowBytes int, xp *float32, n8 int, out *float32, stride int)
// Rows w + r*rowBytes (r < 6), n8 columns (a multiple of 8, > 0), out
// byte-addressed as out + t*stride + 4r.
#define GEMMF(NAME, LOAD, WSTEP) \
TEXT NAME(SB), NOSPLIT, $0-48 \
	GEMMFARGS \
	ADDQ R9, R11 \
	ZERO24 \
loop: \
	VMOVUPS 0(R8), Z24 \
	VMOVUPS 64(R8), Z25 \
	VMOVUPS 128(R8), Z26 \
	VMOVUPS 192(R8), Z27 \
	ROW(LOAD, (SI), Y28, Z28, Z0, Z1, Z2, Z3) \
	ROW(LOAD, (SI)(R9*1), Y29, Z29, Z4, Z5, Z6, Z7) \
	ROW(LOAD, (SI)(R9*2), Y28, Z28, Z8, Z9, Z10, Z11) \
	ROW(LOAD, (R11), Y29, Z29, Z12, Z13, Z14, Z15) \
	ROW(LOAD, (R11)(R9*1), Y28, Z28, Z16, Z17, Z18, Z19) \
	ROW(LOAD, (R11)(R9*2), Y29, Z29, Z20, Z21, Z22, Z23) \
	ADDQ $WSTEP, SI \
	ADDQ $WSTEP, R11 \
	ADDQ $256, R8 \
	DECQ CX \
	JNZ  loop \
	LEAQ (R10)(R10*1), R12 \
	LEAQ (R12)(R10*1), R13 \
	VMOVUPS ·gemmQuadIdx(SB), Z31 \
	EPIQUAD(Z0, Z4, Z8, Z12, Z1, Z5, Z9, Z13) \
	EPIQUAD(Z2, Z6, Z10, Z14, Z3, Z7, Z11, Z15) \
	MOVQ out+32(FP), DI \
	ADDQ $16, DI \
	EPIROW(Z16, Y16, X16, Z17, Y17, X17, Z18, Y18, X18, Z19, Y19, X19) \
	EPIROW(Z20, Y20, X20, Z21, Y21, X21, Z22, Y22, X22, Z23, Y23, X23) \
	VZEROUPPER \
	RET

// func gemmF16x8(w *byte, rowBytes int, xp *float32, n8 int, out *float32, stride int)
GEMMF(·gemmF16x8, LOADF16, 16)

// func gemmBF16x8(w *byte, rowBytes int, xp *float32, n8 int, out *float32, stride int)
GEMMF(·gemmBF16x8, LOADBF16, 16)

// func gemmF32x8(w *byte, rowBytes int, xp *float32, n8 int, out *float32, stride int)
GEMMF(·gemmF32x8, LOADF32, 32)

// gemmF16x12 / gemmBF16x12 / gemmF32x12: four float weight rows × twelve
// tokens, the same per-output lanes as the six-row tile with six token
// pairs per row: each row's eight widened weights meet six pairs in six
// FMAs (the six-row tile: four), so F16's conversion (two micro-ops on
// Intel's 512-bit ports) costs a sixth of the FMAs instead of a quarter.
// The activation pairs are pre-packed six per eight columns (384 bytes).
//
// Registers: Z0..Z23 accumulators (row r, pair p → Z(6r+p)), Z24..Z29 the
// pairs, Z30/Z31 weights (then the epilogue's temporaries).

#define ROW6(LOAD, ADDR, Y, Z, A0, A1, A2, A3, A4, A5) \
	LOAD(ADDR, Y, Z)            \
	VFMADD231PS Z24, Z, A0      \
	VFMADD231PS Z25, Z, A1      \
	VFMADD231PS Z26, Z, A2      \
	VFMADD231PS Z27, Z, A3      \
	VFMADD231PS Z28, Z, A4      \
	VFMADD231PS Z29, Z, A5

// GEMMF12(NAME, LOAD, WSTEP): func(w *byte, rowBytes int, xp *float32, n8 int, out *float32, stride int)
// Rows w + r*rowBytes (r < 4), n8 columns (a multiple of 8, > 0), out
// byte-addressed as out + t*stride + 4r.
#define GEMMF12(NAME, LOAD, WSTEP) \
TEXT NAME(SB), NOSPLIT, $0-48 \
	GEMMFARGS \
	ZERO24 \
loop12: \
	VMOVUPS 0(R8), Z24 \
	VMOVUPS 64(R8), Z25 \
	VMOVUPS 128(R8), Z26 \
	VMOVUPS 192(R8), Z27 \
	VMOVUPS 256(R8), Z28 \
	VMOVUPS 320(R8), Z29 \
	ROW6(LOAD, (SI), Y30, Z30, Z0, Z1, Z2, Z3, Z4, Z5) \
	ROW6(LOAD, (SI)(R9*1), Y31, Z31, Z6, Z7, Z8, Z9, Z10, Z11) \
	ROW6(LOAD, (R11), Y30, Z30, Z12, Z13, Z14, Z15, Z16, Z17) \
	ROW6(LOAD, (R11)(R9*1), Y31, Z31, Z18, Z19, Z20, Z21, Z22, Z23) \
	ADDQ $WSTEP, SI \
	ADDQ $WSTEP, R11 \
	ADDQ $384, R8 \
	DECQ CX \
	JNZ  loop12 \
	LEAQ (R10)(R10*1), R12 \
	LEAQ (R12)(R10*1), R13 \
	VMOVUPS ·gemmQuadIdx(SB), Z31 \
	EPIQUAD(Z0, Z6, Z12, Z18, Z1, Z7, Z13, Z19) \
	EPIQUAD(Z2, Z8, Z14, Z20, Z3, Z9, Z15, Z21) \
	EPIQUAD(Z4, Z10, Z16, Z22, Z5, Z11, Z17, Z23) \
	VZEROUPPER \
	RET

// func gemmF16x12(w *byte, rowBytes int, xp *float32, n8 int, out *float32, stride int)
GEMMF12(·gemmF16x12, LOADF16, 16)

// func gemmBF16x12(w *byte, rowBytes int, xp *float32, n8 int, out *float32, stride int)
GEMMF12(·gemmBF16x12, LOADBF16, 16)

// func gemmF32x12(w *byte, rowBytes int, xp *float32, n8 int, out *float32, stride int)
GEMMF12(·gemmF32x12, LOADF32, 32)

// gemmQuadIdx gathers EPIQUAD's two ROWS4 results token by token:
// token 2p rows 0..3 are R lanes 0, 8, 2, 10; token 2p+1 lanes 4, 12, 6, 14;
// the second pair the same in the second table (+16).
DATA ·gemmQuadIdx+0(SB)/4, $0
DATA ·gemmQuadIdx+4(SB)/4, $8
DATA ·gemmQuadIdx+8(SB)/4, $2
DATA ·gemmQuadIdx+12(SB)/4, $10
DATA ·gemmQuadIdx+16(SB)/4, $4
DATA ·gemmQuadIdx+20(SB)/4, $12
DATA ·gemmQuadIdx+24(SB)/4, $6
DATA ·gemmQuadIdx+28(SB)/4, $14
DATA ·gemmQuadIdx+32(SB)/4, $16
DATA ·gemmQuadIdx+36(SB)/4, $24
DATA ·gemmQuadIdx+40(SB)/4, $18
DATA ·gemmQuadIdx+44(SB)/4, $26
DATA ·gemmQuadIdx+48(SB)/4, $20
DATA ·gemmQuadIdx+52(SB)/4, $28
DATA ·gemmQuadIdx+56(SB)/4, $22
DATA ·gemmQuadIdx+60(SB)/4, $30
GLOBL ·gemmQuadIdx(SB), RODATA|NOPTR, $64
