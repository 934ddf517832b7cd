//go:build amd64 && !noasm

#include "textflag.h"

// AVX-512 decode row kernels: one token against n consecutive weight rows,
// the loop over rows in assembly. Each computes, per (row, token), exactly
// the float operations of dot_ref.go in the same order (the AVX2 kernels'
// order); only the exact integer block sums use wider vectors and the VNNI
// instructions (VPDPBUSD: u8×s8 groups of four into int32; VPDPWSSD:
// int16 pairs × int16 into int32), so results are bit-equal to the
// reference and to AVX2.
//
//   - q8RowsZ / q40RowsZ: two rows at a time (two independent FMA chains)
//     and two 32-value blocks per 512-bit integer step; the eight-lane
//     float FMAs of the two blocks stay one after the other.
//   - q4kRowsZ / q6kRowsZ: 64 values per 512-bit step, the sub-block
//     scales spread to words by VPERMW and applied by VPDPWSSD; the two
//     256-bit halves are added (exact) into the eight int32 lanes A of
//     dotKRef before its float steps.
//   - f16RowsZ: eight rows, two per 512-bit register (row r in lanes 0..7,
//     row r+1 in 8..15), so each row keeps its own eight lanes in order.

#define HSUM8(Y, X, TX) \
	VEXTRACTF128 $1, Y, TX \
	VADDPS       TX, X, X  \
	VMOVHLPS     X, X, TX  \
	VADDPS       TX, X, X  \
	VMOVSHDUP    X, TX     \
	VADDSS       TX, X, X

// Q8BLK2(W, ACC): the two blocks at W (34-byte stride) against the
// activation pair in Z20 (x) / Z21 (−x); the block scales in Y22, Y23
// (d_x) are multiplied by the row's d_w; ACC (Y) takes both FMAs in order.
#define Q8BLK2(W, ACC) \
	VMOVDQU      2(W), Y0             \
	VINSERTI64X4 $1, 36(W), Z0, Z0    \
	VPMOVB2M     Z0, K1               \
	VPABSB       Z0, Z0               \
	VPBLENDMB    Z21, Z20, K1, Z2     \
	VPXORD       Z4, Z4, Z4           \
	VPDPBUSD     Z2, Z0, Z4           \
	VCVTDQ2PS    Z4, Z4               \
	VPBROADCASTW (W), X5              \
	VCVTPH2PS    X5, Y5               \
	VMULPS       Y22, Y5, Y5          \
	VPBROADCASTW 34(W), X6            \
	VCVTPH2PS    X6, Y6               \
	VMULPS       Y23, Y6, Y6          \
	VFMADD231PS  Y5, Y4, ACC          \
	VEXTRACTF64X4 $1, Z4, Y4          \
	VFMADD231PS  Y6, Y4, ACC

// Q8BLK1(W, ACC): one block (the odd last one), Z20/Y22 holding its x/d_x.
#define Q8BLK1(W, ACC) \
	VMOVDQU      2(W), Y0             \
	VPMOVB2M     Y0, K1               \
	VPABSB       Y0, Y0               \
	VPBLENDMB    Y21, Y20, K1, Y2     \
	VPXORD       Y4, Y4, Y4           \
	VPDPBUSD     Y2, Y0, Y4           \
	VCVTDQ2PS    Y4, Y4               \
	VPBROADCASTW (W), X5              \
	VCVTPH2PS    X5, Y5               \
	VMULPS       Y22, Y5, Y5          \
	VFMADD231PS  Y5, Y4, ACC

// Q40BLK2(W, ACC): as Q8BLK2 for Q4_0 (18-byte blocks of nibbles): the
// unsigned nibbles u go through VPDPBUSD with x, onto Z21 = −Σ8x per lane,
// giving Σ(u−8)·x exactly. Z29 = 0x0f bytes.
#define Q40BLK2(W, ACC) \
	VMOVDQU      2(W), X0             \
	VINSERTI128  $1, 20(W), Y0, Y0    \
	VPSRLW       $4, Y0, Y1           \
	VINSERTI64X4 $1, Y1, Z0, Z0       \
	VSHUFI64X2   $0xd8, Z0, Z0, Z0    \
	VPANDD       Z29, Z0, Z0          \
	VMOVDQA64    Z21, Z4              \
	VPDPBUSD     Z20, Z0, Z4          \
	VCVTDQ2PS    Z4, Z4               \
	VPBROADCASTW (W), X5              \
	VCVTPH2PS    X5, Y5               \
	VMULPS       Y22, Y5, Y5          \
	VPBROADCASTW 18(W), X6            \
	VCVTPH2PS    X6, Y6               \
	VMULPS       Y23, Y6, Y6          \
	VFMADD231PS  Y5, Y4, ACC          \
	VEXTRACTF64X4 $1, Z4, Y4          \
	VFMADD231PS  Y6, Y4, ACC

#define Q40BLK1(W, ACC) \
	VMOVDQU      2(W), X0             \
	VPSRLW       $4, X0, X1           \
	VINSERTI128  $1, X1, Y0, Y0       \
	VPANDD       Y29, Y0, Y0          \
	VMOVDQA64    Y21, Y4              \
	VPDPBUSD     Y20, Y0, Y4          \
	VCVTDQ2PS    Y4, Y4               \
	VPBROADCASTW (W), X5              \
	VCVTPH2PS    X5, Y5               \
	VMULPS       Y22, Y5, Y5          \
	VFMADD231PS  Y5, Y4, ACC

// Per-step activation set-up. Q8: Z20 = x, Z21 = −x. Q4_0: Z20 = x,
// Z21 = −Σ 8·x per four-value lane (Z28 = 8 bytes, Z30 = 0).
#define XQ8_2 \
	VMOVDQU64    (R8), Z20            \
	VPSUBB       Z20, Z31, Z21        \
	VBROADCASTSS (DX), Y22            \
	VBROADCASTSS 4(DX), Y23

#define XQ8_1 \
	VMOVDQU64    (R8), Y20            \
	VPSUBB       Y20, Y31, Y21        \
	VBROADCASTSS (DX), Y22

#define XQ40_2 \
	VMOVDQU64    (R8), Z20            \
	VPXORD       Z30, Z30, Z30        \
	VPDPBUSD     Z20, Z28, Z30        \
	VPSUBD       Z30, Z31, Z21        \
	VBROADCASTSS (DX), Y22            \
	VBROADCASTSS 4(DX), Y23

#define XQ40_1 \
	VMOVDQU64    (R8), Y20            \
	VPXORD       Y30, Y30, Y30        \
	VPDPBUSD     Y20, Y28, Y30        \
	VPSUBD       Y30, Y31, Y21        \
	VBROADCASTSS (DX), Y22

// ROWS32(NAME, BB, XS2, XS1, BLK2, BLK1): the row loop of the 32-value
// block kernels; BB is the block size in bytes.
// func NAME(w *byte, rowBytes, rows int, xq *int8, xd *float32, nb int, out *float32)
#define ROWS32(NAME, BB, XS2, XS1, BLK2, BLK1) \
TEXT NAME(SB), NOSPLIT, $0-56 \
	MOVQ  w+0(FP), DI            \
	MOVQ  rowBytes+8(FP), R9     \
	MOVQ  rows+16(FP), BX        \
	MOVQ  out+48(FP), R13        \
	MOVL  $0x0f0f0f0f, AX        \
	VPBROADCASTD AX, Z29         \
	MOVL  $0x08080808, AX        \
	VPBROADCASTD AX, Z28         \
	VPXORD Z31, Z31, Z31         \
pair:                            \
	CMPQ  BX, $2                 \
	JLT   single                 \
	MOVQ  DI, SI                 \
	LEAQ  (DI)(R9*1), R14        \
	MOVQ  xq+24(FP), R8          \
	MOVQ  xd+32(FP), DX          \
	MOVQ  nb+40(FP), CX          \
	VXORPS Y8, Y8, Y8            \
	VXORPS Y9, Y9, Y9            \
	SHRQ  $1, CX                 \
	JZ    pairtail               \
pairblk:                         \
	PREFETCHT0 (16*BB)(SI)       \
	PREFETCHT0 (16*BB)(R14)      \
	XS2                          \
	BLK2(SI, Y8)                 \
	BLK2(R14, Y9)                \
	ADDQ  $(2*BB), SI            \
	ADDQ  $(2*BB), R14           \
	ADDQ  $64, R8                \
	ADDQ  $8, DX                 \
	DECQ  CX                     \
	JNZ   pairblk                \
pairtail:                        \
	TESTQ $1, nb+40(FP)          \
	JZ    pairdone               \
	XS1                          \
	BLK1(SI, Y8)                 \
	BLK1(R14, Y9)                \
pairdone:                        \
	HSUM8(Y8, X8, X0)            \
	HSUM8(Y9, X9, X0)            \
	MOVSS X8, (R13)              \
	MOVSS X9, 4(R13)             \
	ADDQ  $8, R13                \
	LEAQ  (DI)(R9*2), DI         \
	SUBQ  $2, BX                 \
	JMP   pair                   \
single:                          \
	TESTQ BX, BX                 \
	JZ    done                   \
	MOVQ  DI, SI                 \
	MOVQ  xq+24(FP), R8          \
	MOVQ  xd+32(FP), DX          \
	MOVQ  nb+40(FP), CX          \
	VXORPS Y8, Y8, Y8            \
	SHRQ  $1, CX                 \
	JZ    singletail             \
singleblk:                       \
	XS2                          \
	BLK2(SI, Y8)                 \
	ADDQ  $(2*BB), SI            \
	ADDQ  $64, R8                \
	ADDQ  $8, DX                 \
	DECQ  CX                     \
	JNZ   singleblk              \
singletail:                      \
	TESTQ $1, nb+40(FP)          \
	JZ    singledone             \
	XS1                          \
	BLK1(SI, Y8)                 \
singledone:                      \
	HSUM8(Y8, X8, X0)            \
	MOVSS X8, (R13)              \
done:                            \
	VZEROUPPER                   \
	RET

ROWS32(·q8RowsZ, 34, XQ8_2, XQ8_1, Q8BLK2, Q8BLK1)

ROWS32(·q40RowsZ, 18, XQ40_2, XQ40_1, Q40BLK2, Q40BLK1)

// MTERMR leaves M = Σ_k Y13[k]×bs[k] (exact int32) as float32 in X6.
#define MTERMR \
	VPMADDWD     (R9), Y13, Y6  \
	VEXTRACTI128 $1, Y6, X7     \
	VPADDD       X7, X6, X6     \
	VPSHUFD      $0x4e, X6, X7  \
	VPADDD       X7, X6, X6     \
	VPSHUFD      $0xb1, X6, X7  \
	VPADDD       X7, X6, X6     \
	VCVTDQ2PS    X6, X6

// Q4KZ(OFF, XOFF, SC): 32 bytes of nibbles at OFF(SI) (sub-blocks 2c low,
// 2c+1 high) against 64 activations; SC holds the two scales as words.
#define Q4KZ(OFF, XOFF, SC) \
	VMOVDQU      OFF(SI), Y0         \
	VPSRLW       $4, Y0, Y1          \
	VINSERTI64X4 $1, Y1, Z0, Z0      \
	VPANDD       Z15, Z0, Z0         \
	VPMADDUBSW   XOFF(R8), Z0, Z0    \
	VPDPWSSD     SC, Z0, Z8

// func q4kRowsZ(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb int)
TEXT ·q4kRowsZ(SB), NOSPLIT, $0-64
	MOVQ         out+0(FP), DI
	MOVQ         w+8(FP), R10
	MOVQ         n+24(FP), R11
	MOVL         $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	LEAQ         ·kPermZ(SB), AX
	VMOVDQU64    0(AX), Z24
	VMOVDQU64    64(AX), Z25
	VMOVDQU64    128(AX), Z26
	VMOVDQU64    192(AX), Z27

row:
	MOVQ   R10, SI
	MOVQ   xq+32(FP), R8
	MOVQ   xd+40(FP), DX
	MOVQ   bs+48(FP), R9
	MOVQ   nsb+56(FP), CX
	VXORPS Y9, Y9, Y9
	VXORPS X10, X10, X10

sb:
	PREFETCHT0 1024(SI)
	PREFETCHT0 1088(SI)
	PREFETCHT0 1152(SI)
	// Scales from the three little-endian words a, m, c of the 12 bytes
	// (as q4kRows, without R15).
	MOVL  4(SI), AX        // a
	MOVL  8(SI), BX        // m
	MOVL  AX, R13
	ANDL  $0x3f3f3f3f, R13 // sc03
	VMOVD R13, X0
	MOVL  BX, R14
	ANDL  $0x3f3f3f3f, R14 // mn03
	SHRL  $6, AX
	ANDL  $0x03030303, AX
	SHLL  $4, AX
	MOVL  12(SI), R13
	ANDL  $0x0f0f0f0f, R13
	ORL   AX, R13          // sc47
	VPINSRD $1, R13, X0, X0
	VPINSRD $2, R14, X0, X0
	SHRL  $6, BX
	ANDL  $0x03030303, BX
	SHLL  $4, BX
	MOVL  12(SI), R12
	SHRL  $4, R12
	ANDL  $0x0f0f0f0f, R12
	ORL   BX, R12          // mn47
	VPINSRD $3, R12, X0, X0
	VPMOVZXBW X0, Y16        // s0..s7, m0..m7
	VEXTRACTI32X4 $1, Y16, X1
	VPUNPCKLWD X1, X1, X2
	VPUNPCKHWD X1, X1, X3
	VINSERTI128 $1, X3, Y2, Y13
	VPERMW Z16, Z24, Z17
	VPERMW Z16, Z25, Z18
	VPERMW Z16, Z26, Z19
	VPERMW Z16, Z27, Z20

	VPXORD Z8, Z8, Z8
	Q4KZ(16, 0, Z17)
	Q4KZ(48, 64, Z18)
	Q4KZ(80, 128, Z19)
	Q4KZ(112, 192, Z20)
	VEXTRACTI64X4 $1, Z8, Y1
	VPADDD       Y1, Y8, Y8
	VCVTDQ2PS    Y8, Y8
	VBROADCASTSS (DX), Y4
	VPBROADCASTW (SI), X5
	VCVTPH2PS    X5, Y5
	VMULPS       Y4, Y5, Y5
	VFMADD231PS  Y5, Y8, Y9
	MTERMR
	VPBROADCASTW 2(SI), X7
	VCVTPH2PS    X7, X7
	VMULSS       X4, X7, X7
	VFMADD231SS  X7, X6, X10
	ADDQ         $144, SI
	ADDQ         $256, R8
	ADDQ         $4, DX
	ADDQ         $32, R9
	DECQ         CX
	JNZ          sb

	HSUM8(Y9, X9, X0)
	VSUBSS X10, X9, X9
	MOVSS  X9, (DI)
	ADDQ   $4, DI
	ADDQ   rowBytes+16(FP), R10
	DECQ   R11
	JNZ    row
	VZEROUPPER
	RET

// Q6KZ(LOFF, HOFF, XOFF, S0, S1): one 128-value half: L = 64 bytes at
// LOFF, H = 32 bytes at HOFF. Values 0..63 are L&15 | high bits (H<<4,
// H<<2 per 256-bit half)&0x30; values 64..127 are L>>4&15 | (H, H>>2)&0x30.
// Z12/Z11 hold the per-qword shift counts, Z14 = 0x30, Z15 = 0x0f.
#define Q6KZ(LOFF, HOFF, XOFF, S0, S1) \
	VMOVDQU64       LOFF(SI), Z0        \
	VBROADCASTI64X4 HOFF(SI), Z4        \
	VPSLLVQ         Z12, Z4, Z5         \
	VPANDD          Z14, Z5, Z5         \
	VPANDD          Z15, Z0, Z1         \
	VPORD           Z5, Z1, Z1          \
	VPMADDUBSW      XOFF(R8), Z1, Z1    \
	VPDPWSSD        S0, Z1, Z8          \
	VPSRLVQ         Z11, Z4, Z5         \
	VPANDD          Z14, Z5, Z5         \
	VPSRLW          $4, Z0, Z1          \
	VPANDD          Z15, Z1, Z1         \
	VPORD           Z5, Z1, Z1          \
	VPMADDUBSW      XOFF+64(R8), Z1, Z1 \
	VPDPWSSD        S1, Z1, Z8

// func q6kRowsZ(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb int)
TEXT ·q6kRowsZ(SB), NOSPLIT, $0-64
	MOVQ         out+0(FP), DI
	MOVQ         w+8(FP), R10
	MOVQ         n+24(FP), R11
	MOVL         $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	MOVL         $0x30303030, AX
	VPBROADCASTD AX, Z14
	LEAQ         ·kPermZ(SB), AX
	VMOVDQU64    256(AX), Z24
	VMOVDQU64    320(AX), Z25
	VMOVDQU64    384(AX), Z26
	VMOVDQU64    448(AX), Z27
	VMOVDQU64    512(AX), Z12
	VMOVDQU64    576(AX), Z11

row6:
	MOVQ   R10, SI
	MOVQ   xq+32(FP), R8
	MOVQ   xd+40(FP), DX
	MOVQ   bs+48(FP), R9
	MOVQ   nsb+56(FP), CX
	VXORPS Y9, Y9, Y9
	VXORPS X10, X10, X10

sb6:
	PREFETCHT0 1024(SI)
	PREFETCHT0 1088(SI)
	PREFETCHT0 1152(SI)
	PREFETCHT0 1216(SI)
	VPMOVSXBW 192(SI), Y16 // the 16 signed sub-block scales
	VPSLLW    $5, Y16, Y13 // 32 × scale, the offset multipliers
	VPERMW    Z16, Z24, Z17
	VPERMW    Z16, Z25, Z18
	VPERMW    Z16, Z26, Z19
	VPERMW    Z16, Z27, Z20

	VPXORD Z8, Z8, Z8
	Q6KZ(0, 128, 0, Z17, Z18)
	Q6KZ(64, 160, 128, Z19, Z20)
	VEXTRACTI64X4 $1, Z8, Y1
	VPADDD       Y1, Y8, Y8
	VCVTDQ2PS    Y8, Y8
	VBROADCASTSS (DX), Y4
	VPBROADCASTW 208(SI), X5
	VCVTPH2PS    X5, Y5
	VMULPS       Y4, Y5, Y5
	VFMADD231PS  Y5, Y8, Y9
	MTERMR
	VFMADD231SS  X5, X6, X10
	ADDQ         $210, SI
	ADDQ         $256, R8
	ADDQ         $4, DX
	ADDQ         $32, R9
	DECQ         CX
	JNZ          sb6

	HSUM8(Y9, X9, X0)
	VSUBSS X10, X9, X9
	MOVSS  X9, (DI)
	ADDQ   $4, DI
	ADDQ   rowBytes+16(FP), R10
	DECQ   R11
	JNZ    row6
	VZEROUPPER
	RET

// F16PAIR(A, B, ACC): rows at A and B, eight columns each, into the two
// halves of ACC against the eight activations in both halves of Z8.
#define F16PAIR(A, B, ACC) \
	VMOVDQU     A, X9            \
	VINSERTI128 $1, B, Y9, Y9    \
	VCVTPH2PS   Y9, Z9           \
	VFMADD231PS Z8, Z9, ACC

// HSUMZ(Z, Y, X, OFF): the halves of Z as two rows' results at OFF(R13).
#define HSUMZ(Z, Y, X, OFF) \
	VEXTRACTF64X4 $1, Z, Y7 \
	HSUM8(Y, X, X6)         \
	HSUM8(Y7, X7, X6)       \
	MOVSS X, OFF(R13)       \
	MOVSS X7, OFF+4(R13)

// func f16RowsZ(w *byte, wstride int, x *float32, n, rows int, out *float32)
// rows (a multiple of 8) F16 rows against one token of n (a multiple of
// 8, > 0) columns: out[i] is row i's dotFloatRef before the column tail.
TEXT ·f16RowsZ(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), DI
	MOVQ wstride+8(FP), R9
	MOVQ rows+32(FP), BX
	MOVQ out+40(FP), R13
	LEAQ (R9)(R9*2), R11
	SHRQ $3, BX
	JZ   fdone

frow:
	MOVQ DI, SI
	LEAQ (DI)(R9*4), R12
	MOVQ x+16(FP), R8
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

fcol:
	VBROADCASTF64X4 (R8), Z8
	F16PAIR((SI), (SI)(R9*1), Z0)
	F16PAIR((SI)(R9*2), (SI)(R11*1), Z1)
	F16PAIR((R12), (R12)(R9*1), Z2)
	F16PAIR((R12)(R9*2), (R12)(R11*1), Z3)
	ADDQ $16, SI
	ADDQ $16, R12
	ADDQ $32, R8
	DECQ CX
	JNZ  fcol

	HSUMZ(Z0, Y0, X0, 0)
	HSUMZ(Z1, Y1, X1, 8)
	HSUMZ(Z2, Y2, X2, 16)
	HSUMZ(Z3, Y3, X3, 24)
	ADDQ $32, R13
	LEAQ (DI)(R9*8), DI
	DECQ BX
	JNZ  frow

fdone:
	VZEROUPPER
	RET
