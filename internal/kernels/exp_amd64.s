//go:build amd64 && !noasm

#include "textflag.h"

// EXP8 replaces the eight floats of Y0 with exp32 of each (see exp.go),
// operation for operation. Needs Y8..Y15 loaded by EXPCONSTS; clobbers
// Y1..Y4.
#define EXPCONSTS \
	VBROADCASTSS ·expConsts+0(SB), Y8   \
	VBROADCASTSS ·expConsts+4(SB), Y9   \
	VBROADCASTSS ·expConsts+8(SB), Y10  \
	VBROADCASTSS ·expConsts+36(SB), Y11 \
	VBROADCASTSS ·expConsts+40(SB), Y12 \
	VBROADCASTSS ·expConsts+44(SB), Y13

#define EXP8 \
	VCMPPS       $1, Y13, Y0, Y4 \
	VMINPS       Y0, Y12, Y0 \
	VMULPS       Y8, Y0, Y1                 \
	VROUNDPS     $0, Y1, Y1 \
	VFMADD231PS  Y9, Y1, Y0 \
	VFMADD231PS  Y10, Y1, Y0 \
	VBROADCASTSS ·expConsts+12(SB), Y2      \
	VBROADCASTSS ·expConsts+16(SB), Y3      \
	VFMADD213PS  Y3, Y0, Y2 \
	VBROADCASTSS ·expConsts+20(SB), Y3      \
	VFMADD213PS  Y3, Y0, Y2                 \
	VBROADCASTSS ·expConsts+24(SB), Y3      \
	VFMADD213PS  Y3, Y0, Y2                 \
	VBROADCASTSS ·expConsts+28(SB), Y3      \
	VFMADD213PS  Y3, Y0, Y2                 \
	VBROADCASTSS ·expConsts+32(SB), Y3      \
	VFMADD213PS  Y3, Y0, Y2                 \
	VMULPS       Y0, Y0, Y3 \
	VFMADD213PS  Y0, Y3, Y2 \
	VADDPS       Y11, Y2, Y2 \
	VCVTTPS2DQ   Y1, Y1                     \
	VPSLLD       $23, Y1, Y1                \
	MOVL         $0x3f800000, AX \
	VMOVD        AX, X3                     \
	VPBROADCASTD X3, Y3                     \
	VPADDD       Y3, Y1, Y1 \
	VMULPS       Y1, Y2, Y0                 \
	VANDNPS      Y0, Y4, Y0

// func expSumAVX(x *float32, m float32, n int) float32
// x[i] = exp32(x[i] − m) for i < n (a multiple of 8); returns the lane sums
// reduced in hsum8 order.
TEXT ·expSumAVX(SB), NOSPLIT, $0-28
	MOVQ         x+0(FP), DI
	VBROADCASTSS m+8(FP), Y7
	MOVQ         n+16(FP), CX
	EXPCONSTS
	VXORPS       Y6, Y6, Y6
	SHRQ         $3, CX
	JZ           done

loop:
	VMOVUPS (DI), Y0
	VSUBPS  Y7, Y0, Y0
	EXP8
	VMOVUPS Y0, (DI)
	VADDPS  Y0, Y6, Y6
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop

done:
	VEXTRACTF128 $1, Y6, X0
	VADDPS       X0, X6, X6
	VMOVHLPS     X6, X6, X0
	VADDPS       X0, X6, X6
	VMOVSHDUP    X6, X0
	VADDSS       X0, X6, X6
	MOVSS        X6, ret+24(FP)
	VZEROUPPER
	RET

// func scaleAVX(x *float32, a float32, n int)
TEXT ·scaleAVX(SB), NOSPLIT, $0-24
	MOVQ         x+0(FP), DI
	VBROADCASTSS a+8(FP), Y1
	MOVQ         n+16(FP), CX
	SHRQ         $3, CX
	JZ           done

loop:
	VMULPS  (DI), Y1, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop

done:
	VZEROUPPER
	RET

// func swigluAVX(out, gate, up *float32, n int)
// out = g / (1 + exp32(−g)) × up, n a multiple of 8.
TEXT ·swigluAVX(SB), NOSPLIT, $0-32
	MOVQ         out+0(FP), DI
	MOVQ         gate+8(FP), SI
	MOVQ         up+16(FP), DX
	MOVQ         n+24(FP), CX
	EXPCONSTS
	MOVL         $0x80000000, AX
	VMOVD        AX, X7
	VPBROADCASTD X7, Y7
	SHRQ         $3, CX
	JZ           done

loop:
	VMOVUPS (SI), Y5
	VXORPS  Y7, Y5, Y0
	EXP8
	VADDPS  Y11, Y0, Y0
	VDIVPS  Y0, Y5, Y0
	VMULPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop

done:
	VZEROUPPER
	RET

// func maxAVX(x *float32, n int) float32
// The largest of x[0:n], n a positive multiple of 8 (which of ±0 is
// returned when zero is the maximum does not affect Softmax).
TEXT ·maxAVX(SB), NOSPLIT, $0-20
	MOVQ    x+0(FP), SI
	MOVQ    n+8(FP), CX
	VMOVUPS (SI), Y0
	SHRQ    $3, CX

loop:
	VMAXPS (SI), Y0, Y0
	ADDQ   $32, SI
	DECQ   CX
	JNZ    loop
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VMOVHLPS     X0, X0, X1
	VMAXPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VMAXSS       X1, X0, X0
	MOVSS        X0, ret+16(FP)
	VZEROUPPER
	RET
