//go:build amd64 && !noasm

#include "textflag.h"

// func quantizeQ8AVX(x *float32, q *int8, d *float32, nb int)
// Quantizes nb blocks of 32 floats exactly as quantizeActBlock does: amax,
// d = amax/127 (0 when amax is 0, NaN or infinite, with all-zero values),
// q = round-to-nearest-even(x × (127/amax)). d is stored unrounded;
// roundQ8Scales rounds it to F16 afterwards.
TEXT ·quantizeQ8AVX(SB), NOSPLIT, $0-32
	MOVQ         x+0(FP), SI
	MOVQ         q+8(FP), DI
	MOVQ         d+16(FP), DX
	MOVQ         nb+24(FP), CX
	MOVL         $0x7fffffff, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15          // abs mask
	MOVL         $0x42fe0000, AX   // 127
	VMOVD        AX, X14
	MOVL         $0x7f800000, AX   // +Inf
	VMOVD        AX, X12
	MOVL         $0x00000000, AX
	VMOVD        AX, X11           // 0
	VMOVDQU      ·permPack+0(SB), Y10

loop:
	VMOVUPS      (SI), Y0
	VMOVUPS      32(SI), Y1
	VMOVUPS      64(SI), Y2
	VMOVUPS      96(SI), Y3
	VCMPPS       $3, Y0, Y0, Y4    // unordered: NaN lanes
	VCMPPS       $3, Y1, Y1, Y5
	VCMPPS       $3, Y2, Y2, Y6
	VCMPPS       $3, Y3, Y3, Y7
	VORPS        Y5, Y4, Y4
	VORPS        Y7, Y6, Y6
	VORPS        Y6, Y4, Y4
	VMOVMSKPS    Y4, AX
	TESTL        AX, AX
	JNZ          zero              // a NaN in the block
	VANDPS       Y15, Y0, Y4
	VANDPS       Y15, Y1, Y5
	VANDPS       Y15, Y2, Y6
	VANDPS       Y15, Y3, Y7
	VMAXPS       Y5, Y4, Y4
	VMAXPS       Y7, Y6, Y6
	VMAXPS       Y6, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS       X5, X4, X4
	VMOVHLPS     X4, X4, X5
	VMAXPS       X5, X4, X4
	VMOVSHDUP    X4, X5
	VMAXSS       X5, X4, X4        // amax
	VDIVSS       X14, X4, X6       // d = amax / 127
	VUCOMISS     X11, X6
	JEQ          zero              // d == 0, or d is NaN
	VUCOMISS     X12, X6
	JEQ          zero              // d == +Inf
	VDIVSS       X4, X14, X5       // id = 127 / amax (ggml's multiplier, not 1/d)
	VUCOMISS     X12, X5
	JEQ          zero              // amax so small that 127/amax overflows
	VBROADCASTSS X5, Y5
	VMULPS       Y5, Y0, Y0
	VMULPS       Y5, Y1, Y1
	VMULPS       Y5, Y2, Y2
	VMULPS       Y5, Y3, Y3
	VCVTPS2DQ    Y0, Y0
	VCVTPS2DQ    Y1, Y1
	VCVTPS2DQ    Y2, Y2
	VCVTPS2DQ    Y3, Y3
	VPACKSSDW    Y1, Y0, Y0
	VPACKSSDW    Y3, Y2, Y2
	VPACKSSWB    Y2, Y0, Y0
	VPERMD       Y0, Y10, Y0
	VMOVDQU      Y0, (DI)
	VMOVSS       X6, (DX)
	JMP          next

zero:
	VPXOR   Y0, Y0, Y0
	VMOVDQU Y0, (DI)
	VMOVSS  X11, (DX)

next:
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  loop
	VZEROUPPER
	RET

// func q8BlockSumsAVX(q *int8, out *int32, nb int)
// out[i] = −128 × Σ q[32i..32i+31]: the bytes offset to unsigned (XOR
// 0x80) and summed by VPSADBW against zero, four partial sums per block,
// minus 32×128 for the offset. Exact integers, so the order is free.
TEXT ·q8BlockSumsAVX(SB), NOSPLIT, $0-24
	MOVQ         q+0(FP), SI
	MOVQ         out+8(FP), DI
	MOVQ         nb+16(FP), CX
	MOVL         $0x80808080, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	VPXOR        Y14, Y14, Y14
	TESTQ        CX, CX
	JZ           sdone

sloop:
	VPXOR        (SI), Y15, Y0
	VPSADBW      Y14, Y0, Y0     // four qword sums of eight bytes
	VEXTRACTI128 $1, Y0, X1
	VPADDQ       X1, X0, X0
	VPSHUFD      $0x4e, X0, X1
	VPADDQ       X1, X0, X0
	VMOVD        X0, AX
	SUBL         $4096, AX       // Σ(q+128) − 32·128 = Σq
	IMULL        $-128, AX
	MOVL         AX, (DI)
	ADDQ         $32, SI
	ADDQ         $4, DI
	DECQ         CX
	JNZ          sloop

sdone:
	VZEROUPPER
	RET
