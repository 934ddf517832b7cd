//go:build amd64 && !noasm

#include "textflag.h"
#include "asm_amd64.h"

// KU4ARGS loads kDotU4's and kDotU64's arguments (one signature) and
// zeroes the float accumulators. Defined before any TEXT: vet checks a
// macro's FP names against the function it follows.
#define KU4ARGS \
	MOVQ q+0(FP), SI \
	MOVQ scl+8(FP), BX \
	MOVQ dv+16(FP), R11 \
	MOVQ xq+24(FP), R8 \
	MOVQ xd+32(FP), DX \
	MOVQ bs+40(FP), R9 \
	MOVQ nsb+48(FP), CX \
	MOVQ xqStride+56(FP), R12 \
	MOVQ xdStride+64(FP), R13 \
	MOVQ bsStride+72(FP), R14 \
	LEAQ (R13)(R13*2), AX \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3

// kDotU24/kDotU264's shared steps (see kDotU24 below), defined before any
// TEXT: vet checks a macro's SP offsets against the function it follows.
//
// KU24ZERO zeroes the eight float accumulators in the frame (Y0 is zero
// after KU4ARGS).
#define KU24ZERO \
	VMOVUPS Y0, 0(SP) \
	VMOVUPS Y0, 32(SP) \
	VMOVUPS Y0, 64(SP) \
	VMOVUPS Y0, 96(SP) \
	VMOVUPS Y0, 128(SP) \
	VMOVUPS Y0, 160(SP) \
	VMOVUPS Y0, 192(SP) \
	VMOVUPS Y0, 224(SP)

// KU24RESET zeroes the eight integer lanes of a super-block; DI = 3×R12.
#define KU24RESET \
	LEAQ  (R12)(R12*2), DI \
	VPXOR Y4, Y4, Y4 \
	VPXOR Y5, Y5, Y5 \
	VPXOR Y6, Y6, Y6 \
	VPXOR Y7, Y7, Y7 \
	VPXOR Y8, Y8, Y8 \
	VPXOR Y9, Y9, Y9 \
	VPXOR Y10, Y10, Y10 \
	VPXOR Y11, Y11, Y11

// KU24FMAS: the four tokens' float steps for both rows.
#define KU24FMAS \
	KU24FMA2((DX), Y4, Y8, 0) \
	KU24FMA2((DX)(R13*1), Y5, Y9, 32) \
	KU24FMA2((DX)(R13*2), Y6, Y10, 64) \
	KU24FMA2((DX)(AX*1), Y7, Y11, 96)

// KU24ADVANCE moves to the next super-block of the pair layout.
#define KU24ADVANCE \
	ADDQ $512, SI \
	ADDQ $128, BX \
	ADDQ $16, R11 \
	ADDQ $256, R8 \
	ADDQ $4, DX \
	ADDQ $32, R9 \
	DECQ CX

// Batched K-quant path: a row is unpacked once (q4kUnpack/q6kUnpack write
// the 256 unsigned values of each super-block in element order), then
// kDotU meets it with each token. The integer lanes are the same exact
// sums as in q4kRows/q6kRows and the float steps identical, so both paths
// give the same bits.

// func q4kUnpack(w *byte, nsb int, q *byte)
TEXT ·q4kUnpack(SB), NOSPLIT, $0-24
	MOVQ         w+0(FP), SI
	MOVQ         nsb+8(FP), CX
	MOVQ         q+16(FP), DI
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15

loop:
	VMOVDQU 16(SI), Y0
	VMOVDQU 48(SI), Y2
	VMOVDQU 80(SI), Y4
	VMOVDQU 112(SI), Y6
	VPSRLW  $4, Y0, Y1
	VPSRLW  $4, Y2, Y3
	VPSRLW  $4, Y4, Y5
	VPSRLW  $4, Y6, Y7
	VPAND   Y15, Y0, Y0
	VPAND   Y15, Y1, Y1
	VPAND   Y15, Y2, Y2
	VPAND   Y15, Y3, Y3
	VPAND   Y15, Y4, Y4
	VPAND   Y15, Y5, Y5
	VPAND   Y15, Y6, Y6
	VPAND   Y15, Y7, Y7
	VMOVDQU Y0, (DI)
	VMOVDQU Y1, 32(DI)
	VMOVDQU Y2, 64(DI)
	VMOVDQU Y3, 96(DI)
	VMOVDQU Y4, 128(DI)
	VMOVDQU Y5, 160(DI)
	VMOVDQU Y6, 192(DI)
	VMOVDQU Y7, 224(DI)
	ADDQ    $144, SI
	ADDQ    $256, DI
	DECQ    CX
	JNZ     loop
	VZEROUPPER
	RET

#define Q6KUNHALF(LOFF, HOFF, QOFF) \
	VMOVDQU LOFF(SI), Y0     \
	VMOVDQU LOFF+32(SI), Y1  \
	VMOVDQU HOFF(SI), Y4     \
	VPSLLW  $4, Y4, Y5       \
	VPAND   Y14, Y5, Y5      \
	VPAND   Y15, Y0, Y11     \
	VPOR    Y5, Y11, Y11     \
	VMOVDQU Y11, QOFF(DI)    \
	VPSLLW  $2, Y4, Y5       \
	VPAND   Y14, Y5, Y5      \
	VPAND   Y15, Y1, Y11     \
	VPOR    Y5, Y11, Y11     \
	VMOVDQU Y11, QOFF+32(DI) \
	VPAND   Y14, Y4, Y5      \
	VPSRLW  $4, Y0, Y11      \
	VPAND   Y15, Y11, Y11    \
	VPOR    Y5, Y11, Y11     \
	VMOVDQU Y11, QOFF+64(DI) \
	VPSRLW  $2, Y4, Y5       \
	VPAND   Y14, Y5, Y5      \
	VPSRLW  $4, Y1, Y11      \
	VPAND   Y15, Y11, Y11    \
	VPOR    Y5, Y11, Y11     \
	VMOVDQU Y11, QOFF+96(DI)

// func q6kUnpack(w *byte, nsb int, q *byte)
TEXT ·q6kUnpack(SB), NOSPLIT, $0-24
	MOVQ         w+0(FP), SI
	MOVQ         nsb+8(FP), CX
	MOVQ         q+16(FP), DI
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	MOVL         $0x30303030, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14

loop:
	Q6KUNHALF(0, 128, 0)
	Q6KUNHALF(64, 160, 128)
	ADDQ $210, SI
	ADDQ $256, DI
	DECQ CX
	JNZ  loop
	VZEROUPPER
	RET

#define KUGROUP(G) \
	VMOVDQU    (32*G)(SI), Y0          \
	VPMADDUBSW (32*G)(R8), Y0, Y0      \
	VPMADDWD   (32*G)(BX), Y0, Y0      \
	VPADDD     Y0, Y8, Y8

// func kDotU(q *byte, sv *int16, mins *int16, dv *float32, xq *int8, xd *float32, bs *int16, nsb int) float32
// q: unpacked values (256 per super-block); sv: eight 16×int16 scale
// vectors per super-block; mins: the 16 multipliers of bs for M; dv: d and
// the factor of M (dmin for Q4_K, d for Q6_K) per super-block.
TEXT ·kDotU(SB), NOSPLIT, $0-68
	MOVQ   q+0(FP), SI
	MOVQ   sv+8(FP), BX
	MOVQ   mins+16(FP), R10
	MOVQ   dv+24(FP), R11
	MOVQ   xq+32(FP), R8
	MOVQ   xd+40(FP), DX
	MOVQ   bs+48(FP), R9
	MOVQ   nsb+56(FP), CX
	VXORPS Y9, Y9, Y9
	VXORPS X10, X10, X10

loop:
	VPXOR Y8, Y8, Y8
	KUGROUP(0)
	KUGROUP(1)
	KUGROUP(2)
	KUGROUP(3)
	KUGROUP(4)
	KUGROUP(5)
	KUGROUP(6)
	KUGROUP(7)
	VCVTDQ2PS    Y8, Y8
	VBROADCASTSS (DX), Y4
	VBROADCASTSS (R11), Y5
	VMULPS       Y4, Y5, Y5
	VFMADD231PS  Y5, Y8, Y9
	VMOVDQU      (R10), Y6
	VPMADDWD     (R9), Y6, Y6
	VEXTRACTI128 $1, Y6, X7
	VPADDD       X7, X6, X6
	VPSHUFD      $0x4e, X6, X7
	VPADDD       X7, X6, X6
	VPSHUFD      $0xb1, X6, X7
	VPADDD       X7, X6, X6
	VCVTDQ2PS    X6, X6
	VMOVSS       4(R11), X7
	VMULSS       X4, X7, X7
	VFMADD231SS  X7, X6, X10
	ADDQ         $256, SI
	ADDQ         $256, BX
	ADDQ         $32, R10
	ADDQ         $8, R11
	ADDQ         $256, R8
	ADDQ         $4, DX
	ADDQ         $32, R9
	DECQ         CX
	JNZ          loop
	HSUM8(Y9, X9, X0)
	VSUBSS       X10, X9, X9
	MOVSS        X9, ret+64(FP)
	VZEROUPPER
	RET

// func kDotU6(q *byte, sv *int16, mins *int16, dv *float32, xq *int8, xd *float32, bs *int16, nsb int) float32
// kDotU for Q6_K: the offset Σ mins×bs is subtracted inside the eight
// integer lanes (lane l: mins[2l]·bs[2l] + mins[2l+1]·bs[2l+1]) before the
// conversion, as ggml_vec_dot_q6_K_q8_K does; dv[2b] is d, dv[2b+1] unused.
TEXT ·kDotU6(SB), NOSPLIT, $0-68
	MOVQ   q+0(FP), SI
	MOVQ   sv+8(FP), BX
	MOVQ   mins+16(FP), R10
	MOVQ   dv+24(FP), R11
	MOVQ   xq+32(FP), R8
	MOVQ   xd+40(FP), DX
	MOVQ   bs+48(FP), R9
	MOVQ   nsb+56(FP), CX
	VXORPS Y9, Y9, Y9

loop:
	VPXOR Y8, Y8, Y8
	KUGROUP(0)
	KUGROUP(1)
	KUGROUP(2)
	KUGROUP(3)
	KUGROUP(4)
	KUGROUP(5)
	KUGROUP(6)
	KUGROUP(7)
	VMOVDQU      (R10), Y6
	VPMADDWD     (R9), Y6, Y6
	VPSUBD       Y6, Y8, Y8
	VCVTDQ2PS    Y8, Y8
	VBROADCASTSS (DX), Y4
	VBROADCASTSS (R11), Y5
	VMULPS       Y4, Y5, Y5
	VFMADD231PS  Y5, Y8, Y9
	ADDQ         $256, SI
	ADDQ         $256, BX
	ADDQ         $32, R10
	ADDQ         $8, R11
	ADDQ         $256, R8
	ADDQ         $4, DX
	ADDQ         $32, R9
	DECQ         CX
	JNZ          loop
	HSUM8(Y9, X9, X0)
	MOVSS        X9, ret+64(FP)
	VZEROUPPER
	RET

// kDotU4 / kDotU64: kDotU / kDotU6 for four tokens at once, each group of
// the unpacked row loaded once for all four and its lane scales broadcast
// from kScales' output (no sv vectors to build). Each token keeps its own
// lanes and float steps, exactly those of kDotU / kDotU6, so a result does
// not depend on which of the two kernels computed it.
//
// Registers: Y0..Y3 the tokens' float accumulators, Y4..Y7 their integer
// lanes of the super-block, X12 Q4_K's four min sums (lane t = token t),
// R12/R13/R14 the byte strides between tokens' xq, xd and bs, AX 3×R13,
// DI 3×R12 during the groups and 3×R14 for the block sums.

// KU4GROUP(G, SCALES): group G (32 values) of the super-block for the
// four tokens; SCALES(G) puts the group's sixteen int16 lane scales in Y9.
#define KU4GROUP(G, SCALES) \
	VMOVDQU    (32*G)(SI), Y8                \
	SCALES(G)                                \
	VPMADDUBSW (32*G)(R8), Y8, Y10           \
	VPMADDWD   Y9, Y10, Y10                  \
	VPADDD     Y10, Y4, Y4                   \
	VPMADDUBSW (32*G)(R8)(R12*1), Y8, Y11    \
	VPMADDWD   Y9, Y11, Y11                  \
	VPADDD     Y11, Y5, Y5                   \
	VPMADDUBSW (32*G)(R8)(R12*2), Y8, Y10    \
	VPMADDWD   Y9, Y10, Y10                  \
	VPADDD     Y10, Y6, Y6                   \
	VPMADDUBSW (32*G)(R8)(DI*1), Y8, Y11     \
	VPMADDWD   Y9, Y11, Y11                  \
	VPADDD     Y11, Y7, Y7

// Lane scales from kScales' 32 int16 per super-block at BX: Q4_K's group
// G has one scale, s[G]; Q6_K's has two, s[2G] for its first sixteen
// values (int16 lanes 0..7) and s[2G+1] for the rest.
#define SCALES4K(G) \
	VPBROADCASTW (2*G)(BX), Y9

#define SCALES6K(G) \
	VPBROADCASTW (4*G)(BX), X9         \
	VPBROADCASTW (4*G+2)(BX), X10      \
	VINSERTI128  $1, X10, Y9, Y9

#define KU4GROUPS(SCALES) \
	LEAQ  (R12)(R12*2), DI \
	VPXOR Y4, Y4, Y4 \
	VPXOR Y5, Y5, Y5 \
	VPXOR Y6, Y6, Y6 \
	VPXOR Y7, Y7, Y7 \
	KU4GROUP(0, SCALES) \
	KU4GROUP(1, SCALES) \
	KU4GROUP(2, SCALES) \
	KU4GROUP(3, SCALES) \
	KU4GROUP(4, SCALES) \
	KU4GROUP(5, SCALES) \
	KU4GROUP(6, SCALES) \
	KU4GROUP(7, SCALES)

// KU4FMA(XD, A, ACC): acc += float(A) × (d × x_d), d broadcast in Y13.
#define KU4FMA(XD, A, ACC) \
	VCVTDQ2PS    A, A       \
	VBROADCASTSS XD, Y14    \
	VMULPS       Y13, Y14, Y14 \
	VFMADD231PS  Y14, A, ACC

#define KU4FMAS \
	VBROADCASTSS (R11), Y13        \
	KU4FMA((DX), Y4, Y0)           \
	KU4FMA((DX)(R13*1), Y5, Y1)    \
	KU4FMA((DX)(R13*2), Y6, Y2)    \
	KU4FMA((DX)(AX*1), Y7, Y3)

// KU6MIN(BS, A): Q6_K's offset subtracted in the lanes, as kDotU6.
#define KU6MIN(BS, A) \
	VPMADDWD BS, Y8, Y9 \
	VPSUBD   Y9, A, A

#define KU4ADVANCE \
	ADDQ $256, SI \
	ADDQ $64, BX  \
	ADDQ $8, R11  \
	ADDQ $256, R8 \
	ADDQ $4, DX   \
	ADDQ $32, R9  \
	DECQ CX

// KU4STORE(ACC, X, OFF): out[OFF/4] = hsum8(acc), out in DI.
#define KU4STORE(ACC, X, OFF) \
	HSUM8(ACC, X, X15) \
	MOVSS X, OFF(DI)

// func kDotU4(q *byte, scl *int16, dv *float32, xq *int8, xd *float32, bs *int16, nsb, xqStride, xdStride, bsStride int, out *float32)
TEXT ·kDotU4(SB), NOSPLIT, $0-88
	KU4ARGS
	VXORPS X12, X12, X12

loop:
	KU4GROUPS(SCALES4K)
	KU4FMAS
	// The four min sums M_t = Σ mins·bs_t, horizontally into X4 lane t
	// (exact integers, so the pairing order is free), then accM_t +=
	// float(M_t) × (dmin × x_d,t) as kDotU does per token.
	VMOVDQU      32(BX), Y8
	MINSUMS4(Y8)
	XD4(X9)
	VBROADCASTSS 4(R11), X10
	VMULPS       X10, X9, X9
	VFMADD231PS  X9, X4, X12
	KU4ADVANCE
	JNZ loop

	MOVQ out+80(FP), DI
	HSUM8(Y0, X0, X15)
	HSUM8(Y1, X1, X15)
	HSUM8(Y2, X2, X15)
	HSUM8(Y3, X3, X15)
	VSUBSS   X12, X0, X0
	MOVSS    X0, (DI)
	VSHUFPS  $0x55, X12, X12, X13
	VSUBSS   X13, X1, X1
	MOVSS    X1, 4(DI)
	VSHUFPS  $0xaa, X12, X12, X13
	VSUBSS   X13, X2, X2
	MOVSS    X2, 8(DI)
	VSHUFPS  $0xff, X12, X12, X13
	VSUBSS   X13, X3, X3
	MOVSS    X3, 12(DI)
	VZEROUPPER
	RET

// func kDotU64(q *byte, scl *int16, dv *float32, xq *int8, xd *float32, bs *int16, nsb, xqStride, xdStride, bsStride int, out *float32)
TEXT ·kDotU64(SB), NOSPLIT, $0-88
	KU4ARGS

loop:
	KU4GROUPS(SCALES6K)
	LEAQ    (R14)(R14*2), DI
	VMOVDQU 32(BX), Y8
	KU6MIN((R9), Y4)
	KU6MIN((R9)(R14*1), Y5)
	KU6MIN((R9)(R14*2), Y6)
	KU6MIN((R9)(DI*1), Y7)
	KU4FMAS
	KU4ADVANCE
	JNZ loop

	MOVQ out+80(FP), DI
	KU4STORE(Y0, X0, 0)
	KU4STORE(Y1, X1, 4)
	KU4STORE(Y2, X2, 8)
	KU4STORE(Y3, X3, 12)
	VZEROUPPER
	RET

// kDotU24: kDotU4 for two Q4_K rows at once, each token's activation
// group loaded once for both. With one row per call the four tokens'
// activations were re-read from L2 for every row: 128 bytes per group
// against four cycles of multiplies, the L2's whole bandwidth. The rows
// come interleaved per super-block (rowsK's pair scratch): 512 bytes of
// unpacked values (row 0 then row 1), 64 int16 of kScales output (row 0's
// 32 then row 1's), four floats d0, dmin0, d1, dmin1. Each (row, token)
// keeps kDotU4's integer lanes and float steps, so the bits are the same.
//
// Registers in the groups: Y4..Y7 row 0's integer lanes (token t), Y8..Y11
// row 1's, Y12/Y13 the rows' values, Y14/Y15 their group scales, Y0/Y1
// products, Y2 the token's activations. The eight float accumulators and
// the two rows' four min accumulators live in the frame: acc(r, t) at
// 32(4r+t)(SP), accM(r) at 256+16r(SP).

#define KU24TOK(XQ, A0, A1) \
	VMOVDQU    XQ, Y2          \
	VPMADDUBSW Y2, Y12, Y0     \
	VPMADDUBSW Y2, Y13, Y1     \
	VPMADDWD   Y14, Y0, Y0     \
	VPMADDWD   Y15, Y1, Y1     \
	VPADDD     Y0, A0, A0      \
	VPADDD     Y1, A1, A1

#define KU24GROUP(G) \
	VMOVDQU      (32*G)(SI), Y12      \
	VMOVDQU      (256+32*G)(SI), Y13  \
	VPBROADCASTW (2*G)(BX), Y14       \
	VPBROADCASTW (64+2*G)(BX), Y15    \
	KU24TOK((32*G)(R8), Y4, Y8)          \
	KU24TOK((32*G)(R8)(R12*1), Y5, Y9)   \
	KU24TOK((32*G)(R8)(R12*2), Y6, Y10)  \
	KU24TOK((32*G)(R8)(DI*1), Y7, Y11)

// KU24FMA2(XD, A0, A1, OFF): token t's step for both rows: acc(r, t) at
// OFF + 128r (SP) += float(A_r) × (d_r × x_d), d_r in Y12/Y13; the
// activation scale is broadcast once for the two rows.
#define KU24FMA2(XD, A0, A1, OFF) \
	VBROADCASTSS XD, Y14           \
	VMULPS       Y12, Y14, Y0      \
	VMULPS       Y13, Y14, Y1      \
	VCVTDQ2PS    A0, A0            \
	VCVTDQ2PS    A1, A1            \
	VMOVUPS      OFF(SP), Y2       \
	VMOVUPS      (128+OFF)(SP), Y3 \
	VFMADD231PS  Y0, A0, Y2        \
	VFMADD231PS  Y1, A1, Y3        \
	VMOVUPS      Y2, OFF(SP)       \
	VMOVUPS      Y3, (128+OFF)(SP)

// KU24MIN(R): row R's four min sums into accM(R), as kDotU4; X14 holds
// the four tokens' activation scales (XD4, shared by the rows).
#define KU24MIN(R) \
	VMOVDQU      (32+64*R)(BX), Y8 \
	MINSUMS4(Y8)                   \
	VBROADCASTSS (4+8*R)(R11), X10 \
	VMULPS       X10, X14, X9      \
	VMOVUPS      (256+16*R)(SP), X1 \
	VFMADD231PS  X9, X4, X1        \
	VMOVUPS      X1, (256+16*R)(SP)

// KU24OUT(R, T): out[4R+T] = hsum8(acc(R, T)) − accM(R)[T].
#define KU24OUT(R, T) \
	VMOVUPS (32*(4*R+T))(SP), Y0   \
	HSUM8(Y0, X0, X15)             \
	VSUBSS  (256+16*R+4*T)(SP), X0, X0 \
	MOVSS   X0, (4*(4*R+T))(DI)

// func kDotU24(q *byte, scl *int16, dv *float32, xq *int8, xd *float32, bs *int16, nsb, xqStride, xdStride, bsStride int, out *float32)
TEXT ·kDotU24(SB), NOSPLIT, $288-88
	KU4ARGS
	KU24ZERO
	VMOVUPS Y0, 256(SP)

loop24:
	KU24RESET
	KU24GROUP(0)
	KU24GROUP(1)
	KU24GROUP(2)
	KU24GROUP(3)
	KU24GROUP(4)
	KU24GROUP(5)
	KU24GROUP(6)
	KU24GROUP(7)
	VBROADCASTSS (R11), Y12
	VBROADCASTSS 8(R11), Y13
	KU24FMAS
	XD4(X14)
	KU24MIN(0)
	KU24MIN(1)
	KU24ADVANCE
	JNZ  loop24

	MOVQ out+80(FP), DI
	KU24OUT(0, 0)
	KU24OUT(0, 1)
	KU24OUT(0, 2)
	KU24OUT(0, 3)
	KU24OUT(1, 0)
	KU24OUT(1, 1)
	KU24OUT(1, 2)
	KU24OUT(1, 3)
	VZEROUPPER
	RET

// func kScalesQ4K(w *byte, nsb int, scl *int16)
// kScales for Q4_K with the vector scale decode of q4kRows (Q4KSCALES,
// Q4KVECS): per super-block 32 int16, [0:8) the sub-block scales ([8:16)
// the same again, which no reader uses), [16:32) the mins, each twice.
// In Go it was 4.7 % of a 1B Q4_K_M prefill.
TEXT ·kScalesQ4K(SB), NOSPLIT, $0-24
	MOVQ w+0(FP), SI
	MOVQ nsb+8(FP), CX
	MOVQ scl+16(FP), DI

ksloop:
	Q4KSCALES
	Q4KVECS(Y2, Y3)
	VMOVDQU Y2, (DI)
	VMOVDQU Y3, 32(DI)
	ADDQ    $144, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     ksloop
	VZEROUPPER
	RET

// kDotU264: kDotU64 (Q6_K) for two rows at once, in kDotU24's layout and
// frame (dv holds d twice per row; no min accumulators: Q6_K's offset is
// subtracted inside each (row, token)'s integer lanes before the
// conversion, as kDotU64 does).

#define KU26GROUP(G) \
	VMOVDQU      (32*G)(SI), Y12      \
	VMOVDQU      (256+32*G)(SI), Y13  \
	VPBROADCASTW (4*G)(BX), X14       \
	VPBROADCASTW (4*G+2)(BX), X0      \
	VINSERTI128  $1, X0, Y14, Y14     \
	VPBROADCASTW (64+4*G)(BX), X15    \
	VPBROADCASTW (64+4*G+2)(BX), X0   \
	VINSERTI128  $1, X0, Y15, Y15     \
	KU24TOK((32*G)(R8), Y4, Y8)          \
	KU24TOK((32*G)(R8)(R12*1), Y5, Y9)   \
	KU24TOK((32*G)(R8)(R12*2), Y6, Y10)  \
	KU24TOK((32*G)(R8)(DI*1), Y7, Y11)

// KU26OFF(BS, A0, A1): token t's offset terms, row 0's multipliers in Y12,
// row 1's in Y13, subtracted from its two rows' lanes.
#define KU26OFF(BS, A0, A1) \
	VPMADDWD BS, Y12, Y0 \
	VPMADDWD BS, Y13, Y1 \
	VPSUBD   Y0, A0, A0  \
	VPSUBD   Y1, A1, A1

#define KU26OUT(R, T) \
	VMOVUPS (32*(4*R+T))(SP), Y0   \
	HSUM8(Y0, X0, X15)             \
	MOVSS   X0, (4*(4*R+T))(DI)

// func kDotU264(q *byte, scl *int16, dv *float32, xq *int8, xd *float32, bs *int16, nsb, xqStride, xdStride, bsStride int, out *float32)
TEXT ·kDotU264(SB), NOSPLIT, $256-88
	KU4ARGS
	KU24ZERO

loop26:
	KU24RESET
	KU26GROUP(0)
	KU26GROUP(1)
	KU26GROUP(2)
	KU26GROUP(3)
	KU26GROUP(4)
	KU26GROUP(5)
	KU26GROUP(6)
	KU26GROUP(7)
	LEAQ    (R14)(R14*2), DI
	VMOVDQU 32(BX), Y12
	VMOVDQU 96(BX), Y13
	KU26OFF((R9), Y4, Y8)
	KU26OFF((R9)(R14*1), Y5, Y9)
	KU26OFF((R9)(R14*2), Y6, Y10)
	KU26OFF((R9)(DI*1), Y7, Y11)
	VBROADCASTSS (R11), Y12
	VBROADCASTSS 8(R11), Y13
	KU24FMAS
	KU24ADVANCE
	JNZ  loop26

	MOVQ out+80(FP), DI
	KU26OUT(0, 0)
	KU26OUT(0, 1)
	KU26OUT(0, 2)
	KU26OUT(0, 3)
	KU26OUT(1, 0)
	KU26OUT(1, 1)
	KU26OUT(1, 2)
	KU26OUT(1, 3)
	VZEROUPPER
	RET

// func prefetchLines(p *byte, n int)
// PREFETCHT0 of every 64-byte line of [p, p+n): the next weight row of a
// prefill tile, asked for while the current one is computed.
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	ADDQ SI, CX

pfloop:
	CMPQ       SI, CX
	JAE        pfdone
	PREFETCHT0 (SI)
	ADDQ       $64, SI
	JMP        pfloop

pfdone:
	RET

// func kUnpackQ4KScalesZ(w *byte, nsb int, sv *int16, wm *byte)
// gemmK16's scale words of nsb Q4_K super-blocks (kRowScratch.unpackQ4K's
// layout): per super-block 128 words at sv, group g's scale sixteen times
// (VPERMW of the decoded bytes with kQ4KSV's indices), and 16 words at wm
// (40-byte stride), each sub-block pair's min twice. AVX-512 BW/VL; the
// two float factors after them are the caller's.
TEXT ·kUnpackQ4KScalesZ(SB), NOSPLIT, $0-32
	MOVQ      w+0(FP), SI
	MOVQ      nsb+8(FP), CX
	MOVQ      sv+16(FP), DI
	MOVQ      wm+24(FP), R8
	LEAQ      ·kQ4KSV(SB), AX
	VMOVDQU64 0(AX), Z20
	VMOVDQU64 64(AX), Z21
	VMOVDQU64 128(AX), Z22
	VMOVDQU64 192(AX), Z23
	VMOVDQU64 256(AX), Y24

svloop:
	Q4KSCALES
	VPMOVZXBW X0, Y1
	VPERMW    Z1, Z20, Z2
	VMOVDQU64 Z2, 0(DI)
	VPERMW    Z1, Z21, Z2
	VMOVDQU64 Z2, 64(DI)
	VPERMW    Z1, Z22, Z2
	VMOVDQU64 Z2, 128(DI)
	VPERMW    Z1, Z23, Z2
	VMOVDQU64 Z2, 192(DI)
	VPERMW    Y1, Y24, Y3
	VMOVDQU   Y3, (R8)
	ADDQ      $144, SI
	ADDQ      $256, DI
	ADDQ      $40, R8
	DECQ      CX
	JNZ       svloop
	VZEROUPPER
	RET
