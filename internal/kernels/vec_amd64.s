//go:build amd64 && !noasm

#include "textflag.h"
#include "asm_amd64.h"

// HSUM8 reduces the eight lanes of Y to lane 0 of its X half in the fixed
// order of hsum8: (l0+l4)+(l2+l6), (l1+l5)+(l3+l7), then those two.

// func dotAVX(a, b *float32, n int) float32
// n is a multiple of 8.
TEXT ·dotAVX(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y8, Y8, Y8
	SHRQ   $3, CX
	JZ     done

loop:
	VMOVUPS     (SI), Y0
	VFMADD231PS (DI), Y0, Y8
	ADDQ        $32, SI
	ADDQ        $32, DI
	DECQ        CX
	JNZ         loop

done:
	HSUM8(Y8, X8, X0)
	MOVSS X8, ret+24(FP)
	VZEROUPPER
	RET

// func dotF16AVX(a *uint16, b *float32, n int) float32
// n is a multiple of 8.
TEXT ·dotF16AVX(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y8, Y8, Y8
	SHRQ   $3, CX
	JZ     done

loop:
	VCVTPH2PS   (SI), Y0
	VFMADD231PS (DI), Y0, Y8
	ADDQ        $16, SI
	ADDQ        $32, DI
	DECQ        CX
	JNZ         loop

done:
	HSUM8(Y8, X8, X0)
	MOVSS X8, ret+24(FP)
	VZEROUPPER
	RET

// func axpyAVX(y, x *float32, a float32, n int)
// n is a multiple of 8.
TEXT ·axpyAVX(SB), NOSPLIT, $0-32
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	VBROADCASTSS a+16(FP), Y1
	MOVQ         n+24(FP), CX
	SHRQ         $3, CX
	JZ           done

loop:
	VMOVUPS     (DI), Y0
	VFMADD231PS (SI), Y1, Y0
	VMOVUPS     Y0, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DI
	DECQ        CX
	JNZ         loop

done:
	VZEROUPPER
	RET

// func axpyF16AVX(y *float32, x *uint16, a float32, n int)
// n is a multiple of 8.
TEXT ·axpyF16AVX(SB), NOSPLIT, $0-32
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	VBROADCASTSS a+16(FP), Y1
	MOVQ         n+24(FP), CX
	SHRQ         $3, CX
	JZ           done

loop:
	VCVTPH2PS   (SI), Y2
	VMOVUPS     (DI), Y0
	VFMADD231PS Y2, Y1, Y0
	VMOVUPS     Y0, (DI)
	ADDQ        $16, SI
	ADDQ        $32, DI
	DECQ        CX
	JNZ         loop

done:
	VZEROUPPER
	RET

// func f32ToF16AVX(dst *uint16, src *float32, n int)
// n is a multiple of 8. Rounds to nearest even (immediate 0).
TEXT ·f32ToF16AVX(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   done

loop:
	VMOVUPS   (SI), Y0
	VCVTPS2PH $0, Y0, X0
	VMOVDQU   X0, (DI)
	ADDQ      $32, SI
	ADDQ      $16, DI
	DECQ      CX
	JNZ       loop

done:
	VZEROUPPER
	RET
