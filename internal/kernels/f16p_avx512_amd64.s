//go:build amd64 && !noasm

#include "textflag.h"
#include "asm_amd64.h"

// f16pDot1Z: one token against packed F16 groups (f16pack.go). Z0 holds
// rows 4g (lanes 0-7) and 4g+1 (lanes 8-15), Z1 rows 4g+2 and 4g+3; each
// lane l of a row sums columns l, l+8, ... in order with one fused
// multiply-add per step, and a row's eight lanes are added as HSUM8 does:
// dotFloatRef's operations.

// F16PPFD is how far ahead (bytes) the kernel prefetches its one stream,
// as DOTHALVES and the K-quant rows do.
#define F16PPFD 4096

// func f16pDot1Z(w *byte, groups, steps int, x *float32, out *float32)
// out[4i+j] is row j of the i-th group from w.
TEXT ·f16pDot1Z(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ groups+8(FP), CX
	MOVQ x+24(FP), AX
	MOVQ out+32(FP), DI
	TESTQ CX, CX
	JZ   done

group:
	MOVQ   steps+16(FP), BX
	MOVQ   AX, R8
	VXORPS Y0, Y0, Y0 // VEX: clears Z0's upper half too
	VXORPS Y1, Y1, Y1
	TESTQ  BX, BX
	JZ     store

step:
	PREFETCHT0      F16PPFD(SI)
	VBROADCASTF64X4 (R8), Z8 // x's eight columns in both halves
	VCVTPH2PS       (SI), Z2
	VCVTPH2PS       32(SI), Z3
	VFMADD231PS     Z8, Z2, Z0
	VFMADD231PS     Z8, Z3, Z1
	ADDQ            $64, SI
	ADDQ            $32, R8
	DECQ            BX
	JNZ             step

store:
	VEXTRACTF64X4 $1, Z0, Y4
	VEXTRACTF64X4 $1, Z1, Y5
	HSUM8(Y0, X0, X6)
	HSUM8(Y4, X4, X6)
	HSUM8(Y1, X1, X6)
	HSUM8(Y5, X5, X6)
	MOVSS X0, (DI)
	MOVSS X4, 4(DI)
	MOVSS X1, 8(DI)
	MOVSS X5, 12(DI)
	ADDQ  $16, DI
	DECQ  CX
	JNZ   group

done:
	VZEROUPPER
	RET
