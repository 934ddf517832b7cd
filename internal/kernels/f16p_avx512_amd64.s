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

// func f16pDot2Z(wa, wb *byte, groups, steps int, x *float32, oa, ob *float32)
// Two weight streams: the i-th group from wa into oa[4i..4i+3] and the
// i-th from wb into ob[4i..4i+3], one step of each in turn. Four chains in
// flight instead of f16pDot1Z's two (FMA latency bound in cache), from
// two streams as Intel's prefetchers read fastest (rowStreams); each
// row's operations are f16pDot1Z's.
TEXT ·f16pDot2Z(SB), NOSPLIT, $0-56
	MOVQ  wa+0(FP), SI
	MOVQ  wb+8(FP), R9
	MOVQ  groups+16(FP), CX
	MOVQ  x+32(FP), AX
	MOVQ  oa+40(FP), DI
	MOVQ  ob+48(FP), R10
	TESTQ CX, CX
	JZ    done2

group2:
	MOVQ   steps+24(FP), BX
	MOVQ   AX, R8
	VXORPS Y0, Y0, Y0 // VEX: clears the upper halves too
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	TESTQ  BX, BX
	JZ     store2

step2:
	PREFETCHT0      F16PPFD(SI)
	PREFETCHT0      F16PPFD(R9)
	VBROADCASTF64X4 (R8), Z8
	VCVTPH2PS       (SI), Z4
	VCVTPH2PS       32(SI), Z5
	VCVTPH2PS       (R9), Z6
	VCVTPH2PS       32(R9), Z7
	VFMADD231PS     Z8, Z4, Z0
	VFMADD231PS     Z8, Z5, Z1
	VFMADD231PS     Z8, Z6, Z2
	VFMADD231PS     Z8, Z7, Z3
	ADDQ            $64, SI
	ADDQ            $64, R9
	ADDQ            $32, R8
	DECQ            BX
	JNZ             step2

store2:
	VEXTRACTF64X4 $1, Z0, Y4
	VEXTRACTF64X4 $1, Z1, Y5
	VEXTRACTF64X4 $1, Z2, Y6
	VEXTRACTF64X4 $1, Z3, Y7
	HSUM8(Y0, X0, X8)
	HSUM8(Y4, X4, X8)
	HSUM8(Y1, X1, X8)
	HSUM8(Y5, X5, X8)
	HSUM8(Y2, X2, X8)
	HSUM8(Y6, X6, X8)
	HSUM8(Y3, X3, X8)
	HSUM8(Y7, X7, X8)
	MOVSS X0, (DI)
	MOVSS X4, 4(DI)
	MOVSS X1, 8(DI)
	MOVSS X5, 12(DI)
	MOVSS X2, (R10)
	MOVSS X6, 4(R10)
	MOVSS X3, 8(R10)
	MOVSS X7, 12(R10)
	ADDQ  $16, DI
	ADDQ  $16, R10
	DECQ  CX
	JNZ   group2

done2:
	VZEROUPPER
	RET
