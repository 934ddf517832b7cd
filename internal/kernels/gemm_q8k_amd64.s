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
