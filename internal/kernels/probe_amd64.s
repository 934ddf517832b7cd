//go:build amd64 && !noasm

#include "textflag.h"

// func readStream(p *byte, n int) uint64
// Reads n bytes (a multiple of 256) with 32-byte loads folded by XOR into
// four registers: the cheapest work that still touches every byte, so its
// speed is the memory system's.
TEXT ·readStream(SB), NOSPLIT, $0-24
	MOVQ  p+0(FP), SI
	MOVQ  n+8(FP), CX
	SHRQ  $8, CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	TESTQ CX, CX
	JZ    done

loop:
	VPXOR 0(SI), Y0, Y0
	VPXOR 32(SI), Y1, Y1
	VPXOR 64(SI), Y2, Y2
	VPXOR 96(SI), Y3, Y3
	VPXOR 128(SI), Y0, Y0
	VPXOR 160(SI), Y1, Y1
	VPXOR 192(SI), Y2, Y2
	VPXOR 224(SI), Y3, Y3
	ADDQ  $256, SI
	DECQ  CX
	JNZ   loop

done:
	VPXOR        Y1, Y0, Y0
	VPXOR        Y3, Y2, Y2
	VPXOR        Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPXOR        X1, X0, X0
	VMOVQ        X0, AX
	MOVQ         AX, ret+16(FP)
	VZEROUPPER
	RET

// func fmaSpin(iters int) float32
// iters rounds of twelve independent 8-lane fused multiply-adds (192 flops
// a round): enough chains to cover the FMA latency on current cores, so the
// rate is the core's FMA peak.
TEXT ·fmaSpin(SB), NOSPLIT, $0-12
	MOVQ         iters+0(FP), CX
	MOVL         $0x3f7fff00, AX // ≈ 0.99998
	VMOVD        AX, X14
	VBROADCASTSS X14, Y14
	MOVL         $0x3a83126f, AX // 0.001
	VMOVD        AX, X15
	VBROADCASTSS X15, Y15
	VMOVAPS      Y15, Y0
	VMOVAPS      Y15, Y1
	VMOVAPS      Y15, Y2
	VMOVAPS      Y15, Y3
	VMOVAPS      Y15, Y4
	VMOVAPS      Y15, Y5
	VMOVAPS      Y15, Y6
	VMOVAPS      Y15, Y7
	VMOVAPS      Y15, Y8
	VMOVAPS      Y15, Y9
	VMOVAPS      Y15, Y10
	VMOVAPS      Y15, Y11
	TESTQ        CX, CX
	JZ           fdone

floop:
	VFMADD213PS Y15, Y14, Y0
	VFMADD213PS Y15, Y14, Y1
	VFMADD213PS Y15, Y14, Y2
	VFMADD213PS Y15, Y14, Y3
	VFMADD213PS Y15, Y14, Y4
	VFMADD213PS Y15, Y14, Y5
	VFMADD213PS Y15, Y14, Y6
	VFMADD213PS Y15, Y14, Y7
	VFMADD213PS Y15, Y14, Y8
	VFMADD213PS Y15, Y14, Y9
	VFMADD213PS Y15, Y14, Y10
	VFMADD213PS Y15, Y14, Y11
	DECQ        CX
	JNZ         floop

fdone:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y5, Y4, Y4
	VADDPS Y7, Y6, Y6
	VADDPS Y9, Y8, Y8
	VADDPS Y11, Y10, Y10
	VADDPS Y2, Y0, Y0
	VADDPS Y6, Y4, Y4
	VADDPS Y10, Y8, Y8
	VADDPS Y4, Y0, Y0
	VADDPS Y8, Y0, Y0
	MOVSS  X0, ret+8(FP)
	VZEROUPPER
	RET
