//go:build amd64 && !noasm

#include "textflag.h"

// func fmaSpinZ(iters int) float32
// fmaSpin in 16-lane registers: the FMA peak of the AVX-512 set's tiles,
// which on a core with full-width 512-bit units is twice the 8-lane one.
// Every lane runs fmaSpin's recurrence, and lane 0 of the same sums is
// returned, so the result equals fmaSpin's for the same iters.
TEXT ·fmaSpinZ(SB), NOSPLIT, $0-12
	MOVQ         iters+0(FP), CX
	MOVL         $0x3f7fff00, AX // ≈ 0.99998
	VPBROADCASTD AX, Z14
	MOVL         $0x3a83126f, AX // 0.001
	VPBROADCASTD AX, Z15
	VMOVAPS      Z15, Z0
	VMOVAPS      Z15, Z1
	VMOVAPS      Z15, Z2
	VMOVAPS      Z15, Z3
	VMOVAPS      Z15, Z4
	VMOVAPS      Z15, Z5
	VMOVAPS      Z15, Z6
	VMOVAPS      Z15, Z7
	VMOVAPS      Z15, Z8
	VMOVAPS      Z15, Z9
	VMOVAPS      Z15, Z10
	VMOVAPS      Z15, Z11
	TESTQ        CX, CX
	JZ           zdone

zloop:
	VFMADD213PS Z15, Z14, Z0
	VFMADD213PS Z15, Z14, Z1
	VFMADD213PS Z15, Z14, Z2
	VFMADD213PS Z15, Z14, Z3
	VFMADD213PS Z15, Z14, Z4
	VFMADD213PS Z15, Z14, Z5
	VFMADD213PS Z15, Z14, Z6
	VFMADD213PS Z15, Z14, Z7
	VFMADD213PS Z15, Z14, Z8
	VFMADD213PS Z15, Z14, Z9
	VFMADD213PS Z15, Z14, Z10
	VFMADD213PS Z15, Z14, Z11
	DECQ        CX
	JNZ         zloop

zdone:
	VADDPS Z1, Z0, Z0
	VADDPS Z3, Z2, Z2
	VADDPS Z5, Z4, Z4
	VADDPS Z7, Z6, Z6
	VADDPS Z9, Z8, Z8
	VADDPS Z11, Z10, Z10
	VADDPS Z2, Z0, Z0
	VADDPS Z6, Z4, Z4
	VADDPS Z10, Z8, Z8
	VADDPS Z4, Z0, Z0
	VADDPS Z8, Z0, Z0
	MOVSS  X0, ret+8(FP)
	VZEROUPPER
	RET
