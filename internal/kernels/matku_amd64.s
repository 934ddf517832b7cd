//go:build amd64 && !noasm

#include "textflag.h"

#define HSUM8(Y, X, TX) \
	VEXTRACTF128 $1, Y, TX \
	VADDPS       TX, X, X  \
	VMOVHLPS     X, X, TX  \
	VADDPS       TX, X, X  \
	VMOVSHDUP    X, TX     \
	VADDSS       TX, X, X

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
