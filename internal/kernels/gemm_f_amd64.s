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
	EPIROW(Z0, Y0, X0, Z1, Y1, X1, Z2, Y2, X2, Z3, Y3, X3) \
	EPIROW(Z4, Y4, X4, Z5, Y5, X5, Z6, Y6, X6, Z7, Y7, X7) \
	EPIROW(Z8, Y8, X8, Z9, Y9, X9, Z10, Y10, X10, Z11, Y11, X11) \
	EPIROW(Z12, Y12, X12, Z13, Y13, X13, Z14, Y14, X14, Z15, Y15, X15) \
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

#define EPIROW6(A0, Y0_, X0_, A1, Y1_, X1_, A2, Y2_, X2_, A3, Y3_, X3_, A4, Y4_, X4_, A5, Y5_, X5_) \
	MOVQ DI, R11                   \
	EPI(A0, Y0_, X0_, R11)         \
	ADDQ R12, R11                  \
	EPI(A1, Y1_, X1_, R11)         \
	ADDQ R12, R11                  \
	EPI(A2, Y2_, X2_, R11)         \
	ADDQ R12, R11                  \
	EPI(A3, Y3_, X3_, R11)         \
	ADDQ R12, R11                  \
	EPI(A4, Y4_, X4_, R11)         \
	ADDQ R12, R11                  \
	EPI(A5, Y5_, X5_, R11)         \
	ADDQ $4, DI

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
	EPIROW6(Z0, Y0, X0, Z1, Y1, X1, Z2, Y2, X2, Z3, Y3, X3, Z4, Y4, X4, Z5, Y5, X5) \
	EPIROW6(Z6, Y6, X6, Z7, Y7, X7, Z8, Y8, X8, Z9, Y9, X9, Z10, Y10, X10, Z11, Y11, X11) \
	EPIROW6(Z12, Y12, X12, Z13, Y13, X13, Z14, Y14, X14, Z15, Y15, X15, Z16, Y16, X16, Z17, Y17, X17) \
	EPIROW6(Z18, Y18, X18, Z19, Y19, X19, Z20, Y20, X20, Z21, Y21, X21, Z22, Y22, X22, Z23, Y23, X23) \
	VZEROUPPER \
	RET

// func gemmF16x12(w *byte, rowBytes int, xp *float32, n8 int, out *float32, stride int)
GEMMF12(·gemmF16x12, LOADF16, 16)

// func gemmBF16x12(w *byte, rowBytes int, xp *float32, n8 int, out *float32, stride int)
GEMMF12(·gemmBF16x12, LOADBF16, 16)

// func gemmF32x12(w *byte, rowBytes int, xp *float32, n8 int, out *float32, stride int)
GEMMF12(·gemmF32x12, LOADF32, 32)
