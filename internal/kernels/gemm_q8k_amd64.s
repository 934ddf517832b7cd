//go:build amd64 && !noasm

#include "textflag.h"

// func quantizeQ8KAVX512(x *float32, q *int8, d *float32, nblocks int)
// quantizeQ8KBlock for nblocks consecutive 256-value blocks, bit for bit:
// a block with a NaN or an infinity, an all-zero block, or one whose
// iscale = −127/m overflows becomes zeros with d = 0; otherwise m is the
// first element of largest magnitude, q = saturate8(round-half-even(
// iscale×x)) (VCVTPS2DQ under the default rounding mode, VPMOVSDB) and
// d = 1/iscale, both divisions in float32 as Go's.
TEXT ·quantizeQ8KAVX512(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nblocks+24(FP), CX
	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z31          // abs mask
	MOVL $0x7f800000, AX
	VPBROADCASTD AX, Z30          // +Inf bits

block:
	// Pass 1: non-finite check and max |x|.
	VPXORD Z29, Z29, Z29          // running max of |x|
	KXORW  K1, K1, K1
	XORQ   R8, R8

scan:
	VPANDD   (SI)(R8*4), Z31, Z0
	VPCMPUD  $5, Z30, Z0, K2      // |x| bits >= Inf bits: Inf or NaN
	KORW     K2, K1, K1
	VMAXPS   Z0, Z29, Z29
	ADDQ     $16, R8
	CMPQ     R8, $256
	JLT      scan
	KORTESTW K1, K1
	JNZ      zero

	// Horizontal max (exact for finite values, any order).
	VEXTRACTF32X8 $1, Z29, Y0
	VMAXPS        Y0, Y29, Y29
	VEXTRACTF32X4 $1, Y29, X0
	VMAXPS        X0, X29, X29
	VPERMILPS     $0x4e, X29, X0
	VMAXPS        X0, X29, X29
	VPERMILPS     $0xb1, X29, X0
	VMAXPS        X0, X29, X29
	VXORPS        X1, X1, X1
	VUCOMISS      X1, X29
	JEQ           zero
	VBROADCASTSS  X29, Z29

	// m: the first element whose magnitude equals the max.
	XORQ R8, R8

find:
	VPANDD  (SI)(R8*4), Z31, Z0
	VCMPPS  $0, Z29, Z0, K2
	KMOVW   K2, AX
	TESTL   AX, AX
	JNZ     found
	ADDQ    $16, R8
	JMP     find

found:
	BSFL   AX, AX
	ADDQ   R8, AX
	VMOVSS (SI)(AX*4), X2         // m
	MOVL   $0xc2fe0000, AX        // -127.0
	VMOVD  AX, X3
	VDIVSS X2, X3, X3             // iscale = -127 / m
	VMOVD  X3, AX
	ANDL   $0x7fffffff, AX
	CMPL   AX, $0x7f800000
	JEQ    zero
	MOVL   $0x3f800000, AX        // 1.0
	VMOVD  AX, X4
	VDIVSS X3, X4, X4             // d = 1 / iscale
	VMOVSS X4, (DX)
	VBROADCASTSS X3, Z3
	XORQ R8, R8

quant:
	VMULPS    (SI)(R8*4), Z3, Z0
	VCVTPS2DQ Z0, Z0
	VPMOVSDB  Z0, (DI)(R8*1)
	ADDQ      $16, R8
	CMPQ      R8, $256
	JLT       quant
	JMP       next

zero:
	VPXORD    Z0, Z0, Z0
	VMOVDQU64 Z0, (DI)
	VMOVDQU64 Z0, 64(DI)
	VMOVDQU64 Z0, 128(DI)
	VMOVDQU64 Z0, 192(DI)
	MOVL      $0, (DX)

next:
	ADDQ $1024, SI
	ADDQ $256, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  block
	VZEROUPPER
	RET

// func quantizeQ8KAVX2(x *float32, q *int8, d *float32, nblocks int)
// quantizeQ8KAVX512 in AVX2 (CPUs without AVX-512), the same steps: the
// non-finite test is a signed compare of |x|'s bits with the largest
// finite float's, the saturation to int8 two saturating packs (int32 →
// int16 → int8; the same as one) and a dword permute undoing the packs'
// per-lane order.
TEXT ·quantizeQ8KAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nblocks+24(FP), CX
	MOVL $0x7fffffff, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15         // abs mask
	MOVL $0x7f7fffff, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14         // largest finite's bits
	VMOVDQU ·q8kPackPerm(SB), Y13

block2:
	VPXOR Y12, Y12, Y12           // running max of |x|
	VPXOR Y11, Y11, Y11           // any |x| bits > largest finite
	XORQ  R8, R8

scan2:
	VPAND    (SI)(R8*4), Y15, Y0
	VPCMPGTD Y14, Y0, Y1
	VPOR     Y1, Y11, Y11
	VMAXPS   Y0, Y12, Y12
	ADDQ     $8, R8
	CMPQ     R8, $256
	JLT      scan2
	VPTEST   Y11, Y11
	JNZ      zero2

	VEXTRACTF128 $1, Y12, X0
	VMAXPS       X0, X12, X12
	VPERMILPS    $0x4e, X12, X0
	VMAXPS       X0, X12, X12
	VPERMILPS    $0xb1, X12, X0
	VMAXPS       X0, X12, X12
	VXORPS       X1, X1, X1
	VUCOMISS     X1, X12
	JEQ          zero2
	VBROADCASTSS X12, Y12
	XORQ R8, R8

find2:
	VPAND     (SI)(R8*4), Y15, Y0
	VCMPPS    $0, Y12, Y0, Y1
	VMOVMSKPS Y1, AX
	TESTL     AX, AX
	JNZ       found2
	ADDQ      $8, R8
	JMP       find2

found2:
	BSFL   AX, AX
	ADDQ   R8, AX
	VMOVSS (SI)(AX*4), X2         // m
	MOVL   $0xc2fe0000, AX        // -127.0
	VMOVD  AX, X3
	VDIVSS X2, X3, X3             // iscale = -127 / m
	VMOVD  X3, AX
	ANDL   $0x7fffffff, AX
	CMPL   AX, $0x7f800000
	JEQ    zero2
	MOVL   $0x3f800000, AX        // 1.0
	VMOVD  AX, X4
	VDIVSS X3, X4, X4             // d = 1 / iscale
	VMOVSS X4, (DX)
	VBROADCASTSS X3, Y3
	XORQ R8, R8

quant2:
	VMULPS      (SI)(R8*4), Y3, Y0
	VMULPS      32(SI)(R8*4), Y3, Y1
	VMULPS      64(SI)(R8*4), Y3, Y2
	VMULPS      96(SI)(R8*4), Y3, Y4
	VCVTPS2DQ   Y0, Y0
	VCVTPS2DQ   Y1, Y1
	VCVTPS2DQ   Y2, Y2
	VCVTPS2DQ   Y4, Y4
	VPACKSSDW   Y1, Y0, Y0        // per lane: x0..3 x8..11 | x4..7 x12..15
	VPACKSSDW   Y4, Y2, Y2
	VPACKSSWB   Y2, Y0, Y0
	VPERMD      Y0, Y13, Y0
	VMOVDQU     Y0, (DI)(R8*1)
	ADDQ        $32, R8
	CMPQ        R8, $256
	JLT         quant2
	JMP         next2

zero2:
	VPXOR   Y0, Y0, Y0
	VMOVDQU Y0, (DI)
	VMOVDQU Y0, 32(DI)
	VMOVDQU Y0, 64(DI)
	VMOVDQU Y0, 96(DI)
	VMOVDQU Y0, 128(DI)
	VMOVDQU Y0, 160(DI)
	VMOVDQU Y0, 192(DI)
	VMOVDQU Y0, 224(DI)
	MOVL    $0, (DX)

next2:
	ADDQ $1024, SI
	ADDQ $256, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  block2
	VZEROUPPER
	RET

// q8kPackPerm restores element order after VPACKSSDW/VPACKSSWB: dword j
// of the result holds elements 4j..4j+3 of the 32 from dword p[j].
DATA ·q8kPackPerm+0(SB)/4, $0
DATA ·q8kPackPerm+4(SB)/4, $4
DATA ·q8kPackPerm+8(SB)/4, $1
DATA ·q8kPackPerm+12(SB)/4, $5
DATA ·q8kPackPerm+16(SB)/4, $2
DATA ·q8kPackPerm+20(SB)/4, $6
DATA ·q8kPackPerm+24(SB)/4, $3
DATA ·q8kPackPerm+28(SB)/4, $7
GLOBL ·q8kPackPerm(SB), RODATA|NOPTR, $32
