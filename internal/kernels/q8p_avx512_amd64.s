//go:build amd64 && !noasm

#include "textflag.h"

#define q8pBlockBytesZ 272

// q8pDot4Z: q8pDot4 with AVX-512 VNNI, two packed groups (16 rows) per
// 512-bit register. Lanes 0-7 are group g's rows, 8-15 group g+1's. Per
// block and quant dword k the weights, offset to unsigned by XOR 0x80
// (w+128), meet each token's dword k broadcast by VPDPBUSD itself; the int
// sums start at the token's −128·Σx of the block, so they end at Σw·x
// exactly, the integer q8pDot4 forms. The float step per (row, token,
// block) is q8pDot4's: float(isum) × (d_x × d_w) fused into the
// accumulator, in block order.

// Q8ZK(K): quant dword K of both groups' block, against the four tokens.
#define Q8ZK(K) \
	VMOVDQU           (16+32*K)(SI), Y8             \
	VINSERTI64X4      $1, (16+32*K)(SI)(R11*1), Z8, Z8 \
	VPXORD            Z9, Z8, Z8                    \
	VPDPBUSD.BCST     (4*K)(R8), Z8, Z4             \
	VPDPBUSD.BCST     (4*K)(R8)(R9*1), Z8, Z5       \
	VPDPBUSD.BCST     (4*K)(R8)(R9*2), Z8, Z6       \
	VPDPBUSD.BCST     (4*K)(R8)(R10*1), Z8, Z7

// Q8ZFIN(XD, ISUM, ACC): acc += float(isum) × (d_x × d_w).
#define Q8ZFIN(XD, ISUM, ACC) \
	VCVTDQ2PS    ISUM, ISUM     \
	VBROADCASTSS XD, Z11        \
	VMULPS       Z10, Z11, Z11  \
	VFMADD231PS  Z11, ISUM, ACC

// func q8pDot4Z(w *byte, pairs, nb int, xq *int8, cols int, xd *float32, xs *int32, out *float32, rows int)
// Four tokens (xq + t*cols, xd + t*nb, xs + t*nb) against pairs of
// consecutive packed groups from w: out[t*rows + 16i + j] is row 16i+j of
// the first group's rows, token t.
TEXT ·q8pDot4Z(SB), NOSPLIT, $0-72
	MOVL         $0x80808080, AX
	VPBROADCASTD AX, Z9
	MOVQ w+0(FP), SI
	MOVQ xq+24(FP), AX
	MOVQ cols+32(FP), R9
	MOVQ out+56(FP), DI
	MOVQ rows+64(FP), R13
	MOVQ nb+16(FP), R11
	MOVQ R11, R12
	SHLQ $2, R12                 // xd, xs stride in bytes
	LEAQ (R12)(R12*2), R14
	IMULQ $q8pBlockBytesZ, R11   // one group's bytes
	LEAQ (R9)(R9*2), R10
	SHLQ $2, R13                 // out stride in bytes
	MOVQ pairs+8(FP), CX
	TESTQ CX, CX
	JZ   done4z

pair4z:
	MOVQ nb+16(FP), BX
	MOVQ AX, R8
	MOVQ xd+40(FP), DX
	MOVQ xs+48(FP), R15
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

block4z:
	VPBROADCASTD (R15), Z4
	VPBROADCASTD (R15)(R12*1), Z5
	VPBROADCASTD (R15)(R12*2), Z6
	VPBROADCASTD (R15)(R14*1), Z7
	Q8ZK(0)
	Q8ZK(1)
	Q8ZK(2)
	Q8ZK(3)
	Q8ZK(4)
	Q8ZK(5)
	Q8ZK(6)
	Q8ZK(7)
	VCVTPH2PS     (SI), Y10
	VCVTPH2PS     (SI)(R11*1), Y12
	VINSERTF64X4  $1, Y12, Z10, Z10
	Q8ZFIN((DX), Z4, Z0)
	Q8ZFIN((DX)(R12*1), Z5, Z1)
	Q8ZFIN((DX)(R12*2), Z6, Z2)
	Q8ZFIN((DX)(R14*1), Z7, Z3)
	ADDQ $q8pBlockBytesZ, SI
	ADDQ $32, R8
	ADDQ $4, DX
	ADDQ $4, R15
	DECQ BX
	JNZ  block4z

	VMOVUPS Z0, (DI)
	VMOVUPS Z1, (DI)(R13*1)
	VMOVUPS Z2, (DI)(R13*2)
	LEAQ    (DI)(R13*2), BX
	VMOVUPS Z3, (BX)(R13*1)
	ADDQ    R11, SI              // past the pair's second group
	ADDQ    $64, DI
	DECQ    CX
	JNZ     pair4z

done4z:
	VZEROUPPER
	RET
