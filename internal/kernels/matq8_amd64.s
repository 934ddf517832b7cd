//go:build amd64 && !noasm

#include "textflag.h"
#include "asm_amd64.h"

// Dot products of Q8_0 / Q4_0 weight rows with int8 activation blocks.
//
// Per 32-value block: Y13 holds the weights as int8, Y12 their absolute
// values, Y14 the weight scale in all lanes, Y15 int16 ones. A token step
// moves the weight signs onto the activation (VPSIGNB), multiplies unsigned
// |w| by signed x and adds pairs (VPMADDUBSW; at most 2×128×127, no
// saturation), adds pairs again to eight int32 lanes (VPMADDWD by ones; lane
// l = elements 4l..4l+3), converts to float and fuses into the token's
// accumulator with scale d_w×d_x — dotQ8Ref step for step.

#define TOKEN(XQ, XD, ACC, T0, T1) \
	VMOVDQU     XQ, T0        \
	VPSIGNB     Y13, T0, T0   \
	VPMADDUBSW  T0, Y12, T0   \
	VPMADDWD    Y15, T0, T0   \
	VCVTDQ2PS   T0, T0        \
	VBROADCASTSS XD, T1       \
	VMULPS      Y14, T1, T1   \
	VFMADD231PS T1, T0, ACC

// Q8_0 block: f16 d at 0, 32 int8 at 2.
#define LOADQ8 \
	VPBROADCASTW (SI), X14  \
	VCVTPH2PS    X14, Y14   \
	VMOVDQU      2(SI), Y13 \
	VPSIGNB      Y13, Y13, Y12

// Q4_0 block: f16 d at 0, 16 bytes of nibbles at 2 (low = elements 0..15,
// high = 16..31), value nibble−8. Needs Y7 = 0x0f bytes, Y6 = 8 bytes.
#define LOADQ40 \
	VPBROADCASTW (SI), X14         \
	VCVTPH2PS    X14, Y14          \
	VMOVDQU      2(SI), X13        \
	VPSRLW       $4, X13, X12      \
	VINSERTI128  $1, X12, Y13, Y13 \
	VPAND        Y7, Y13, Y13      \
	VPSUBB       Y6, Y13, Y13      \
	VPSIGNB      Y13, Y13, Y12

#define Q40CONST \
	MOVL         $0x0f0f0f0f, AX \
	VMOVD        AX, X7          \
	VPBROADCASTD X7, Y7          \
	MOVL         $0x08080808, AX \
	VMOVD        AX, X6          \
	VPBROADCASTD X6, Y6

// func q8Dot1(w *byte, xq *int8, xd *float32, nb int) float32
TEXT ·q8Dot1(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ xq+8(FP), R8
	MOVQ xd+16(FP), DX
	MOVQ nb+24(FP), CX
	ONES16(Y15)
	VXORPS Y8, Y8, Y8

loop:
	LOADQ8
	TOKEN((R8), (DX), Y8, Y0, Y1)
	ADDQ $34, SI
	ADDQ $32, R8
	ADDQ $4, DX
	DECQ CX
	JNZ  loop
	HSUM8(Y8, X8, X0)
	MOVSS X8, ret+32(FP)
	VZEROUPPER
	RET

// func q8Dot4(w *byte, xq *int8, xd *float32, nb, xqStride, xdStride int, out *float32)
// Four tokens at xq + t*xqStride and xd + t*xdStride (bytes); out[t] gets
// token t's result.
TEXT ·q8Dot4(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ xq+8(FP), R8
	MOVQ xd+16(FP), DX
	MOVQ nb+24(FP), CX
	MOVQ xqStride+32(FP), R9
	MOVQ xdStride+40(FP), R10
	MOVQ out+48(FP), DI
	LEAQ (R9)(R9*2), R11
	LEAQ (R10)(R10*2), R12
	ONES16(Y15)
	VZERO4(Y8, Y9, Y10, Y11)

loop:
	LOADQ8
	TOKEN((R8), (DX), Y8, Y0, Y1)
	TOKEN((R8)(R9*1), (DX)(R10*1), Y9, Y2, Y3)
	TOKEN((R8)(R9*2), (DX)(R10*2), Y10, Y4, Y5)
	TOKEN((R8)(R11*1), (DX)(R12*1), Y11, Y0, Y1)
	ADDQ $34, SI
	ADDQ $32, R8
	ADDQ $4, DX
	DECQ CX
	JNZ  loop
	HSUM8(Y8, X8, X0)
	HSUM8(Y9, X9, X0)
	HSUM8(Y10, X10, X0)
	HSUM8(Y11, X11, X0)
	MOVSS X8, (DI)
	MOVSS X9, 4(DI)
	MOVSS X10, 8(DI)
	MOVSS X11, 12(DI)
	VZEROUPPER
	RET

// func q40Dot1(w *byte, xq *int8, xd *float32, nb int) float32
TEXT ·q40Dot1(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ xq+8(FP), R8
	MOVQ xd+16(FP), DX
	MOVQ nb+24(FP), CX
	ONES16(Y15)
	Q40CONST
	VXORPS Y8, Y8, Y8

loop:
	LOADQ40
	TOKEN((R8), (DX), Y8, Y0, Y1)
	ADDQ $18, SI
	ADDQ $32, R8
	ADDQ $4, DX
	DECQ CX
	JNZ  loop
	HSUM8(Y8, X8, X0)
	MOVSS X8, ret+32(FP)
	VZEROUPPER
	RET

// func q40Dot4(w *byte, xq *int8, xd *float32, nb, xqStride, xdStride int, out *float32)
TEXT ·q40Dot4(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ xq+8(FP), R8
	MOVQ xd+16(FP), DX
	MOVQ nb+24(FP), CX
	MOVQ xqStride+32(FP), R9
	MOVQ xdStride+40(FP), R10
	MOVQ out+48(FP), DI
	LEAQ (R9)(R9*2), R11
	LEAQ (R10)(R10*2), R12
	ONES16(Y15)
	Q40CONST
	VZERO4(Y8, Y9, Y10, Y11)

loop:
	LOADQ40
	TOKEN((R8), (DX), Y8, Y0, Y1)
	TOKEN((R8)(R9*1), (DX)(R10*1), Y9, Y2, Y3)
	TOKEN((R8)(R9*2), (DX)(R10*2), Y10, Y4, Y5)
	TOKEN((R8)(R11*1), (DX)(R12*1), Y11, Y0, Y1)
	ADDQ $18, SI
	ADDQ $32, R8
	ADDQ $4, DX
	DECQ CX
	JNZ  loop
	HSUM8(Y8, X8, X0)
	HSUM8(Y9, X9, X0)
	HSUM8(Y10, X10, X0)
	HSUM8(Y11, X11, X0)
	MOVSS X8, (DI)
	MOVSS X9, 4(DI)
	MOVSS X10, 8(DI)
	MOVSS X11, 12(DI)
	VZEROUPPER
	RET

// TOKEN8 is TOKEN with the scale product precomputed: lane T of the
// block's eight d_w×d_x products at (R11).
#define TOKEN8(XQ, T, ACC) \
	VMOVDQU      XQ, Y8         \
	VPSIGNB      Y13, Y8, Y8    \
	VPMADDUBSW   Y8, Y12, Y8    \
	VPMADDWD     Y15, Y8, Y8    \
	VCVTDQ2PS    Y8, Y8         \
	VBROADCASTSS (4*T)(R11), Y9 \
	VFMADD231PS  Y9, Y8, ACC

// Eight tokens at xq + t*xqStride, their block scales transposed in xdT
// (xdT[8b+t]). A first pass writes every block's eight d_w×d_x products
// (one VMULPS each, the same float32 product TOKEN computes, so a token's
// result does not depend on the tile) to sc; the main loop broadcasts
// them from there. Kept in the frame and rewritten per block, each
// broadcast read a store still in flight (Zen 3, BenchmarkGemm Q8_0 one
// thread: 63-66 GFLOP/cpu-s that way, 70-71 with the first pass, 74-76
// with no broadcast at all).
#define DOT8(NAME, LOAD, BSTEP) \
TEXT NAME(SB), NOSPLIT, $0-56 \
	MOVQ w+0(FP), SI \
	MOVQ xq+8(FP), R8 \
	MOVQ xdT+16(FP), DX \
	MOVQ nb+24(FP), CX \
	MOVQ xqStride+32(FP), R9 \
	MOVQ out+40(FP), DI \
	MOVQ sc+48(FP), R11 \
	MOVQ SI, R12 \
	MOVQ R11, R14 \
	MOVQ CX, BX \
scales: \
	VPBROADCASTW (R12), X14 \
	VCVTPH2PS    X14, Y14 \
	VMULPS       (DX), Y14, Y14 \
	VMOVUPS      Y14, (R14) \
	ADDQ $BSTEP, R12 \
	ADDQ $32, DX \
	ADDQ $32, R14 \
	DECQ BX \
	JNZ  scales \
	LEAQ (R9)(R9*2), R10 \
	LEAQ (R8)(R9*4), R13 \
	ONES16(Y15) \
	VZERO4(Y0, Y1, Y2, Y3)         \
	VZERO4(Y4, Y5, Y6, Y7)         \
 \
loop: \
	LOAD \
	TOKEN8((R8), 0, Y0) \
	TOKEN8((R8)(R9*1), 1, Y1) \
	TOKEN8((R8)(R9*2), 2, Y2) \
	TOKEN8((R8)(R10*1), 3, Y3) \
	TOKEN8((R13), 4, Y4) \
	TOKEN8((R13)(R9*1), 5, Y5) \
	TOKEN8((R13)(R9*2), 6, Y6) \
	TOKEN8((R13)(R10*1), 7, Y7) \
	ADDQ $BSTEP, SI \
	ADDQ $32, R8 \
	ADDQ $32, R13 \
	ADDQ $32, R11 \
	DECQ CX \
	JNZ  loop \
	HSUM8(Y0, X0, X8) \
	HSUM8(Y1, X1, X8) \
	HSUM8(Y2, X2, X8) \
	HSUM8(Y3, X3, X8) \
	HSUM8(Y4, X4, X8) \
	HSUM8(Y5, X5, X8) \
	HSUM8(Y6, X6, X8) \
	HSUM8(Y7, X7, X8) \
	MOVSS X0, (DI) \
	MOVSS X1, 4(DI) \
	MOVSS X2, 8(DI) \
	MOVSS X3, 12(DI) \
	MOVSS X4, 16(DI) \
	MOVSS X5, 20(DI) \
	MOVSS X6, 24(DI) \
	MOVSS X7, 28(DI) \
	VZEROUPPER \
	RET

// LOAD8Q8 / LOAD8Q40 load one weight block as LOADQ8 / LOADQ40 do, less
// the scale (DOT8's first pass has it). Q4_0 takes its constants from
// memory: Y0..Y7 hold accumulators here.
#define LOAD8Q8 \
	VMOVDQU      2(SI), Y13    \
	VPSIGNB      Y13, Y13, Y12

#define LOAD8Q40 \
	VMOVDQU      2(SI), X13               \
	VPSRLW       $4, X13, X12             \
	VINSERTI128  $1, X12, Y13, Y13        \
	VPAND        ·q40Consts+0(SB), Y13, Y13  \
	VPSUBB       ·q40Consts+32(SB), Y13, Y13 \
	VPSIGNB      Y13, Y13, Y12

// func q8Dot8(w *byte, xq *int8, xdT *float32, nb, xqStride int, out *float32, sc *float32)
DOT8(·q8Dot8, LOAD8Q8, 34)

// func q40Dot8(w *byte, xq *int8, xdT *float32, nb, xqStride int, out *float32, sc *float32)
DOT8(·q40Dot8, LOAD8Q40, 18)

// func q8DotRows(w *byte, rowBytes, rows int, xq *int8, xd *float32, nb int, out *float32)
// One token against rows consecutive Q8_0 rows: out[i] is exactly
// q8Dot1(w + i*rowBytes, xq, xd, nb) (same instructions per row), but the
// loop over rows stays in assembly and the weights are prefetched ahead,
// which matters for decode, where rows are short and memory-bound.
TEXT ·q8DotRows(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), DI
	MOVQ rowBytes+8(FP), R9
	MOVQ rows+16(FP), BX
	MOVQ xq+24(FP), R10
	MOVQ xd+32(FP), R11
	MOVQ nb+40(FP), R12
	MOVQ out+48(FP), R13
	ONES16(Y15)

rowloop:
	MOVQ DI, SI
	MOVQ R10, R8
	MOVQ R11, DX
	MOVQ R12, CX
	VXORPS Y8, Y8, Y8

blkloop:
	PREFETCHT0 4096(SI)
	LOADQ8
	TOKEN((R8), (DX), Y8, Y0, Y1)
	ADDQ $34, SI
	ADDQ $32, R8
	ADDQ $4, DX
	DECQ CX
	JNZ  blkloop
	HSUM8(Y8, X8, X0)
	MOVSS X8, (R13)
	ADDQ  $4, R13
	ADDQ  R9, DI
	DECQ  BX
	JNZ   rowloop
	VZEROUPPER
	RET
