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

// F16PSTORE(ZA, ZB, YA, YB, YAL, YBL, XA, XB, XAH, XBH, R): a group's
// four results, rows 0/1 in ZA's halves and 2/3 in ZB's (YAL/XA and
// YBL/XB name ZA's and ZB's lower halves, YA/XAH and YB/XBH take the
// upper ones), each hsum8'ed as dotFloatRef, to (R)..12(R). Clobbers X15.
#define F16PSTORE(ZA, ZB, YA, YB, YAL, YBL, XA, XB, XAH, XBH, R) \
	VEXTRACTF64X4 $1, ZA, YA  \
	VEXTRACTF64X4 $1, ZB, YB  \
	HSUM8(YAL, XA, X15)       \
	HSUM8(YA, XAH, X15)       \
	HSUM8(YBL, XB, X15)       \
	HSUM8(YB, XBH, X15)       \
	MOVSS XA, (R)             \
	MOVSS XAH, 4(R)           \
	MOVSS XB, 8(R)            \
	MOVSS XBH, 12(R)

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
	F16PSTORE(Z0, Z1, Y4, Y5, Y0, Y1, X0, X1, X4, X5, DI)
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
	F16PSTORE(Z0, Z1, Y4, Y5, Y0, Y1, X0, X1, X4, X5, DI)
	F16PSTORE(Z2, Z3, Y6, Y7, Y2, Y3, X2, X3, X6, X7, R10)
	ADDQ  $16, DI
	ADDQ  $16, R10
	DECQ  CX
	JNZ   group2

done2:
	VZEROUPPER
	RET
