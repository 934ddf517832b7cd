//go:build amd64 && !noasm

#include "textflag.h"

// Dot products of Q4_K / Q6_K weight rows with one token's 256-value int8
// activation blocks — dotKRef step for step.
//
// scl points at 32 int16 per super-block, prepared by kScales: [0:16) the
// sub-block scales (Q4_K uses [0:8)), [16:32) the multipliers of the 16-value
// activation sums bs for the integer term M (Q4_K: the min of the value's
// sub-block; Q6_K: 32 × scale, the offset of the unsigned 6-bit values).
//
// Per super-block the exact integer lanes A (eight int32, lane l = elements
// 4l..4l+3 of each 32-value group, times the group's scale) are converted and
// fused into the float accumulator with d×d_x; M = Σ mult[k]×bs[k] is fused
// into a scalar accumulator with dmin×d_x (Q4_K) or d×d_x (Q6_K); the result
// is hsum(acc) − accM.

#define HSUM8(Y, X, TX) \
	VEXTRACTF128 $1, Y, TX \
	VADDPS       TX, X, X  \
	VMOVHLPS     X, X, TX  \
	VADDPS       TX, X, X  \
	VMOVSHDUP    X, TX     \
	VADDSS       TX, X, X

// MTERM leaves M = Σ_k mult[k]×bs[k] (exact int32) as float32 in X6.
#define MTERM \
	VMOVDQU      32(BX), Y6     \
	VPMADDWD     (R9), Y6, Y6   \
	VEXTRACTI128 $1, Y6, X7     \
	VPADDD       X7, X6, X6     \
	VPSHUFD      $0x4e, X6, X7  \
	VPADDD       X7, X6, X6     \
	VPSHUFD      $0xb1, X6, X7  \
	VPADDD       X7, X6, X6     \
	VCVTDQ2PS    X6, X6

// Q4_K group pair: 32 bytes of nibbles at OFF(SI) are groups 2c (low) and
// 2c+1 (high); activations at XOFF(R8), scales at SOFF(BX), SOFF+2(BX).
#define Q4KCHUNK(OFF, XOFF, SOFF) \
	VMOVDQU      OFF(SI), Y0       \
	VPSRLW       $4, Y0, Y1        \
	VPAND        Y15, Y0, Y0       \
	VPAND        Y15, Y1, Y1       \
	VPMADDUBSW   XOFF(R8), Y0, Y0  \
	VPBROADCASTW SOFF(BX), Y2      \
	VPMADDWD     Y2, Y0, Y0        \
	VPADDD       Y0, Y8, Y8        \
	VPMADDUBSW   XOFF+32(R8), Y1, Y1 \
	VPBROADCASTW SOFF+2(BX), Y3    \
	VPMADDWD     Y3, Y1, Y1        \
	VPADDD       Y1, Y8, Y8

// func q4kDot(w *byte, scl *int16, xq *int8, xd *float32, bs *int16, nsb int) float32
TEXT ·q4kDot(SB), NOSPLIT, $0-52
	MOVQ         w+0(FP), SI
	MOVQ         scl+8(FP), BX
	MOVQ         xq+16(FP), R8
	MOVQ         xd+24(FP), DX
	MOVQ         bs+32(FP), R9
	MOVQ         nsb+40(FP), CX
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	VXORPS       Y9, Y9, Y9
	VXORPS       X10, X10, X10

loop:
	VPXOR Y8, Y8, Y8
	Q4KCHUNK(16, 0, 0)
	Q4KCHUNK(48, 64, 4)
	Q4KCHUNK(80, 128, 8)
	Q4KCHUNK(112, 192, 12)
	VCVTDQ2PS    Y8, Y8
	VBROADCASTSS (DX), Y4
	VPBROADCASTW (SI), X5
	VCVTPH2PS    X5, Y5
	VMULPS       Y4, Y5, Y5
	VFMADD231PS  Y5, Y8, Y9
	MTERM
	VPBROADCASTW 2(SI), X7
	VCVTPH2PS    X7, X7
	VMULSS       X4, X7, X7
	VFMADD231SS  X7, X6, X10
	ADDQ         $144, SI
	ADDQ         $256, R8
	ADDQ         $4, DX
	ADDQ         $64, BX
	ADDQ         $32, R9
	DECQ         CX
	JNZ          loop
	HSUM8(Y9, X9, X0)
	VSUBSS       X10, X9, X9
	MOVSS        X9, ret+48(FP)
	VZEROUPPER
	RET

// Q6_K group: Q is the 6-bit values of 32 elements (unsigned), scales of
// sub-blocks S and S+1 at 2S(BX), activations at XOFF(R8).
#define Q6KGROUP(Q, XOFF, SOFF) \
	VPMADDUBSW   XOFF(R8), Q, Q       \
	VPBROADCASTW SOFF(BX), X2         \
	VPBROADCASTW SOFF+2(BX), X3       \
	VINSERTI128  $1, X3, Y2, Y2       \
	VPMADDWD     Y2, Q, Q             \
	VPADDD       Q, Y8, Y8

// Q6_K half H: ql at LOFF(SI) (64 bytes), qh at HOFF(SI) (32 bytes), the
// 128 elements at XOFF(R8), sub-block scales from SOFF(BX).
#define Q6KHALF(LOFF, HOFF, XOFF, SOFF) \
	VMOVDQU    LOFF(SI), Y0          \
	VMOVDQU    LOFF+32(SI), Y1       \
	VMOVDQU    HOFF(SI), Y4          \
	VPSLLW     $4, Y4, Y5            \
	VPAND      Y14, Y5, Y5           \
	VPAND      Y15, Y0, Y11          \
	VPOR       Y5, Y11, Y11          \
	Q6KGROUP(Y11, XOFF, SOFF)        \
	VPSLLW     $2, Y4, Y5            \
	VPAND      Y14, Y5, Y5           \
	VPAND      Y15, Y1, Y11          \
	VPOR       Y5, Y11, Y11          \
	Q6KGROUP(Y11, XOFF+32, SOFF+4)   \
	VPAND      Y14, Y4, Y5           \
	VPSRLW     $4, Y0, Y11           \
	VPAND      Y15, Y11, Y11         \
	VPOR       Y5, Y11, Y11          \
	Q6KGROUP(Y11, XOFF+64, SOFF+8)   \
	VPSRLW     $2, Y4, Y5            \
	VPAND      Y14, Y5, Y5           \
	VPSRLW     $4, Y1, Y11           \
	VPAND      Y15, Y11, Y11         \
	VPOR       Y5, Y11, Y11          \
	Q6KGROUP(Y11, XOFF+96, SOFF+12)

// func q6kDot(w *byte, scl *int16, xq *int8, xd *float32, bs *int16, nsb int) float32
TEXT ·q6kDot(SB), NOSPLIT, $0-52
	MOVQ         w+0(FP), SI
	MOVQ         scl+8(FP), BX
	MOVQ         xq+16(FP), R8
	MOVQ         xd+24(FP), DX
	MOVQ         bs+32(FP), R9
	MOVQ         nsb+40(FP), CX
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	MOVL         $0x30303030, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	VXORPS       Y9, Y9, Y9
	VXORPS       X10, X10, X10

loop:
	VPXOR Y8, Y8, Y8
	Q6KHALF(0, 128, 0, 0)
	Q6KHALF(64, 160, 128, 16)
	VCVTDQ2PS    Y8, Y8
	VBROADCASTSS (DX), Y4
	VPBROADCASTW 208(SI), X5
	VCVTPH2PS    X5, Y5
	VMULPS       Y4, Y5, Y5
	VFMADD231PS  Y5, Y8, Y9
	MTERM
	VFMADD231SS  X5, X6, X10
	ADDQ         $210, SI
	ADDQ         $256, R8
	ADDQ         $4, DX
	ADDQ         $64, BX
	ADDQ         $32, R9
	DECQ         CX
	JNZ          loop
	HSUM8(Y9, X9, X0)
	VSUBSS       X10, X9, X9
	MOVSS        X9, ret+48(FP)
	VZEROUPPER
	RET
