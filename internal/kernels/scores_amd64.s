//go:build amd64 && !noasm

#include "textflag.h"

// scoresF16x3 / scoresF16x1: sixteen transposed F16 keys (lanes) against
// three queries / one query (see scores.go). Lane l of key k is register
// Z(8i+l) for query i: column c goes to lane c mod 8, in increasing c, as
// dotFloatRef's acc[l]; then hsum8's tree as vector adds. K1 masks the
// keys past the last.
//
// Arguments: kt the block's first key at column 0, ld bytes between
// columns; hd8 columns (a multiple of 8); q query 0, qs bytes between
// queries; out query 0's scores, os bytes between queries.

// COL3(L): column c+L for the three queries.
#define COL3(L, A0, A1, A2) \
	VCVTPH2PS.Z      (SI), K1, Z24      \
	VFMADD231PS.BCST (R8), Z24, A0      \
	VFMADD231PS.BCST (R8)(R9*1), Z24, A1 \
	VFMADD231PS.BCST (R8)(R9*2), Z24, A2 \
	ADDQ             BX, SI             \
	ADDQ             $4, R8

#define COL1(L, A0) \
	VCVTPH2PS.Z      (SI), K1, Z24 \
	VFMADD231PS.BCST (R8), Z24, A0 \
	ADDQ             BX, SI        \
	ADDQ             $4, R8

// HSUM8V(A0..A7): hsum8's tree, (a0+a4 + a2+a6) + (a1+a5 + a3+a7), into A0.
#define HSUM8V(A0, A1, A2, A3, A4, A5, A6, A7) \
	VADDPS A4, A0, A0 \
	VADDPS A5, A1, A1 \
	VADDPS A6, A2, A2 \
	VADDPS A7, A3, A3 \
	VADDPS A2, A0, A0 \
	VADDPS A3, A1, A1 \
	VADDPS A1, A0, A0

#define ZERO8(A0, A1, A2, A3, A4, A5, A6, A7) \
	VPXORD A0, A0, A0 \
	VPXORD A1, A1, A1 \
	VPXORD A2, A2, A2 \
	VPXORD A3, A3, A3 \
	VPXORD A4, A4, A4 \
	VPXORD A5, A5, A5 \
	VPXORD A6, A6, A6 \
	VPXORD A7, A7, A7

// func scoresF16x3(kt *uint16, ld, hd8 int, q *float32, qs int, out *float32, os int, mask uint16)
TEXT ·scoresF16x3(SB), NOSPLIT, $0-58
	MOVQ  kt+0(FP), SI
	MOVQ  ld+8(FP), BX
	MOVQ  hd8+16(FP), CX
	MOVQ  q+24(FP), R8
	MOVQ  qs+32(FP), R9
	MOVQ  out+40(FP), DI
	MOVQ  os+48(FP), R10
	KMOVW mask+56(FP), K1
	SHRQ  $3, CX
	ZERO8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ZERO8(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	ZERO8(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)

loop3:
	COL3(0, Z0, Z8, Z16)
	COL3(1, Z1, Z9, Z17)
	COL3(2, Z2, Z10, Z18)
	COL3(3, Z3, Z11, Z19)
	COL3(4, Z4, Z12, Z20)
	COL3(5, Z5, Z13, Z21)
	COL3(6, Z6, Z14, Z22)
	COL3(7, Z7, Z15, Z23)
	DECQ CX
	JNZ  loop3

	HSUM8V(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	HSUM8V(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	HSUM8V(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)
	VMOVUPS Z0, K1, (DI)
	VMOVUPS Z8, K1, (DI)(R10*1)
	VMOVUPS Z16, K1, (DI)(R10*2)
	VZEROUPPER
	RET

// func scoresF16x1(kt *uint16, ld, hd8 int, q *float32, qs int, out *float32, os int, mask uint16)
TEXT ·scoresF16x1(SB), NOSPLIT, $0-58
	MOVQ  kt+0(FP), SI
	MOVQ  ld+8(FP), BX
	MOVQ  hd8+16(FP), CX
	MOVQ  q+24(FP), R8
	MOVQ  out+40(FP), DI
	KMOVW mask+56(FP), K1
	SHRQ  $3, CX
	ZERO8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)

loop1:
	COL1(0, Z0)
	COL1(1, Z1)
	COL1(2, Z2)
	COL1(3, Z3)
	COL1(4, Z4)
	COL1(5, Z5)
	COL1(6, Z6)
	COL1(7, Z7)
	DECQ CX
	JNZ  loop1

	HSUM8V(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	VMOVUPS Z0, K1, (DI)
	VZEROUPPER
	RET
