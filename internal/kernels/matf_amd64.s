//go:build amd64 && !noasm

#include "textflag.h"
#include "asm_amd64.h"

// Dot products of F16, F32 and BF16 weight rows with float32 tokens: eight
// lanes of fused multiply-adds over n (a multiple of 8) columns, then the
// fixed horizontal sum — dotFloatRef step for step.

#define LOADF16(ADDR, DST) VCVTPH2PS ADDR, DST
#define LOADF32(ADDR, DST) VMOVUPS ADDR, DST
#define LOADBF16(ADDR, DST) \
	VPMOVZXWD ADDR, DST \
	VPSLLD    $16, DST, DST

// The row loops of DOTHALVES and DOTQUARTERS: FROWSARGS loads w, wstride,
// rows and out; FROWSTART points SI at a row's weights, R8 at x and CX at
// its eight-column steps (flags set for a JZ on none); FCOLNEXT advances a
// column step; FROWNEXT advances out and the row and returns when done.
// FPFD is how far ahead (bytes) DOTHALVES prefetches its two weight
// streams (every step: a line holds two to four steps). DOTQUARTERS runs
// on matrices in cache and does not.
#define FPFD 4096

#define FROWSARGS \
	MOVQ w+0(FP), DI        \
	MOVQ wstride+8(FP), R9  \
	MOVQ rows+32(FP), BX    \
	MOVQ out+40(FP), R13

#define FROWSTART \
	MOVQ DI, SI          \
	MOVQ x+16(FP), R8    \
	MOVQ n+24(FP), CX    \
	SHRQ $3, CX

#define FCOLNEXT(WSTEP) \
	ADDQ $WSTEP, SI \
	ADDQ $32, R8    \
	DECQ CX         \
	JNZ  col

#define FROWNEXT \
	ADDQ $4, R13 \
	ADDQ R9, DI  \
	DECQ BX      \
	JNZ  row     \
done:            \
	VZEROUPPER   \
	RET

// TILEARGS loads the arguments of the row tiles (DOT2X4, DOT3X4): w,
// wstride, x, n, xstride, out; R11 = 3·xstride.
#define TILEARGS \
	MOVQ w+0(FP), SI        \
	MOVQ wstride+8(FP), R10 \
	MOVQ x+16(FP), R8       \
	MOVQ n+24(FP), CX       \
	MOVQ xstride+32(FP), R9 \
	MOVQ out+40(FP), DI     \
	LEAQ (R9)(R9*2), R11

// HSTORE(Y, X, OFF): the hsum of Y to OFF(DI).
#define HSTORE(Y, X, OFF) \
	HSUM8(Y, X, X15) \
	MOVSS X, OFF(DI)

#define DOT1(NAME, LOAD, WSTEP) \
TEXT NAME(SB), NOSPLIT, $0-28 \
	MOVQ   w+0(FP), SI        \
	MOVQ   x+8(FP), R8        \
	MOVQ   n+16(FP), CX       \
	VXORPS Y8, Y8, Y8         \
	VXORPS Y9, Y9, Y9         \
	SHRQ   $3, CX             \
	JZ     done               \
loop:                         \
	LOAD((SI), Y0)                  \
	VFMADD231PS (R8), Y0, Y8  \
	ADDQ   $WSTEP, SI         \
	ADDQ   $32, R8            \
	DECQ   CX                 \
	JNZ    loop               \
done:                         \
	HSUM8(Y8, X8, X0)         \
	MOVSS  X8, ret+24(FP)     \
	VZEROUPPER                \
	RET

// Four tokens at x + t*xstride (bytes); out[t] gets token t's result.
#define DOT4(NAME, LOAD, WSTEP) \
TEXT NAME(SB), NOSPLIT, $0-40 \
	MOVQ   w+0(FP), SI               \
	MOVQ   x+8(FP), R8               \
	MOVQ   n+16(FP), CX              \
	MOVQ   xstride+24(FP), R9        \
	MOVQ   out+32(FP), DI            \
	LEAQ   (R9)(R9*2), R11           \
	VZERO4(Y8, Y9, Y10, Y11)       \
	SHRQ   $3, CX                    \
	JZ     done                      \
loop:                                \
	LOAD((SI), Y0)                         \
	VFMADD231PS (R8), Y0, Y8         \
	VFMADD231PS (R8)(R9*1), Y0, Y9   \
	VFMADD231PS (R8)(R9*2), Y0, Y10  \
	VFMADD231PS (R8)(R11*1), Y0, Y11 \
	ADDQ   $WSTEP, SI                \
	ADDQ   $32, R8                   \
	DECQ   CX                        \
	JNZ    loop                      \
done:                                \
	HSUM8(Y8, X8, X0)                \
	HSUM8(Y9, X9, X0)                \
	HSUM8(Y10, X10, X0)              \
	HSUM8(Y11, X11, X0)              \
	MOVSS  X8, (DI)                  \
	MOVSS  X9, 4(DI)                 \
	MOVSS  X10, 8(DI)                \
	MOVSS  X11, 12(DI)               \
	VZEROUPPER                       \
	RET

// Two rows (w and w+wstride bytes) × four tokens: eight independent
// accumulator chains, out[4*r+t].
#define DOT2X4(NAME, LOAD, WSTEP) \
TEXT NAME(SB), NOSPLIT, $0-48 \
	TILEARGS                          \
	VZERO4(Y8, Y9, Y10, Y11)       \
	VZERO4(Y12, Y13, Y14, Y15)     \
	SHRQ   $3, CX                     \
	JZ     done                       \
loop:                                 \
	LOAD((SI), Y0)                    \
	LOAD((SI)(R10*1), Y1)             \
	VMOVUPS (R8), Y2                  \
	VMOVUPS (R8)(R9*1), Y3            \
	VMOVUPS (R8)(R9*2), Y4            \
	VMOVUPS (R8)(R11*1), Y5           \
	VFMADD231PS Y2, Y0, Y8            \
	VFMADD231PS Y3, Y0, Y9            \
	VFMADD231PS Y4, Y0, Y10           \
	VFMADD231PS Y5, Y0, Y11           \
	VFMADD231PS Y2, Y1, Y12           \
	VFMADD231PS Y3, Y1, Y13           \
	VFMADD231PS Y4, Y1, Y14           \
	VFMADD231PS Y5, Y1, Y15           \
	ADDQ   $WSTEP, SI                 \
	ADDQ   $32, R8                    \
	DECQ   CX                         \
	JNZ    loop                       \
done:                                 \
	HSUM8(Y8, X8, X0)                 \
	HSUM8(Y9, X9, X0)                 \
	HSUM8(Y10, X10, X0)               \
	HSUM8(Y11, X11, X0)               \
	HSUM8(Y12, X12, X0)               \
	HSUM8(Y13, X13, X0)               \
	HSUM8(Y14, X14, X0)               \
	HSUM8(Y15, X15, X0)               \
	MOVSS  X8, (DI)                   \
	MOVSS  X9, 4(DI)                  \
	MOVSS  X10, 8(DI)                 \
	MOVSS  X11, 12(DI)                \
	MOVSS  X12, 16(DI)                \
	MOVSS  X13, 20(DI)                \
	MOVSS  X14, 24(DI)                \
	MOVSS  X15, 28(DI)                \
	VZEROUPPER                        \
	RET

// Three rows (w, w+wstride, w+2·wstride bytes) × four tokens: twelve
// chains, out[4*r+t], the prefill tile. With eight chains (DOT2X4) the
// FMA latency (4 cycles, two per cycle) left no slack and a third of the
// FMA issue went idle; twelve hide it, each token's x loaded once for
// the three rows.
#define TOK3(XADDR, A0, A1, A2) \
	VMOVUPS     XADDR, Y15  \
	VFMADD231PS Y15, Y12, A0 \
	VFMADD231PS Y15, Y13, A1 \
	VFMADD231PS Y15, Y14, A2

#define DOT3X4(NAME, LOAD, WSTEP) \
TEXT NAME(SB), NOSPLIT, $0-48 \
	TILEARGS                          \
	VZERO4(Y0, Y1, Y2, Y3)         \
	VZERO4(Y4, Y5, Y6, Y7)         \
	VZERO4(Y8, Y9, Y10, Y11)       \
	SHRQ   $3, CX                     \
	JZ     done                       \
loop:                                 \
	LOAD((SI), Y12)                   \
	LOAD((SI)(R10*1), Y13)            \
	LOAD((SI)(R10*2), Y14)            \
	TOK3((R8), Y0, Y4, Y8)            \
	TOK3((R8)(R9*1), Y1, Y5, Y9)      \
	TOK3((R8)(R9*2), Y2, Y6, Y10)     \
	TOK3((R8)(R11*1), Y3, Y7, Y11)    \
	ADDQ   $WSTEP, SI                 \
	ADDQ   $32, R8                    \
	DECQ   CX                         \
	JNZ    loop                       \
done:                                 \
	HSTORE(Y0, X0, 0)                 \
	HSTORE(Y1, X1, 4)                 \
	HSTORE(Y2, X2, 8)                 \
	HSTORE(Y3, X3, 12)                \
	HSTORE(Y4, X4, 16)                \
	HSTORE(Y5, X5, 20)                \
	HSTORE(Y6, X6, 24)                \
	HSTORE(Y7, X7, 28)                \
	HSTORE(Y8, X8, 32)                \
	HSTORE(Y9, X9, 36)                \
	HSTORE(Y10, X10, 40)              \
	HSTORE(Y11, X11, 44)              \
	VZEROUPPER                        \
	RET

// func f16Dot3x4(w *byte, wstride int, x *float32, n, xstride int, out *float32)
DOT3X4(·f16Dot3x4, LOADF16, 16)

// func f32Dot3x4(w *byte, wstride int, x *float32, n, xstride int, out *float32)
DOT3X4(·f32Dot3x4, LOADF32, 32)

// func bf16Dot3x4(w *byte, wstride int, x *float32, n, xstride int, out *float32)
DOT3X4(·bf16Dot3x4, LOADBF16, 16)

// func f16Dot1(w *byte, x *float32, n int) float32
DOT1(·f16Dot1, LOADF16, 16)

// func f32Dot1(w *byte, x *float32, n int) float32
DOT1(·f32Dot1, LOADF32, 32)

// func bf16Dot1(w *byte, x *float32, n int) float32
DOT1(·bf16Dot1, LOADBF16, 16)

// func f16Dot4(w *byte, x *float32, n, xstride int, out *float32)
DOT4(·f16Dot4, LOADF16, 16)

// func f32Dot4(w *byte, x *float32, n, xstride int, out *float32)
DOT4(·f32Dot4, LOADF32, 32)

// func bf16Dot4(w *byte, x *float32, n, xstride int, out *float32)
DOT4(·bf16Dot4, LOADBF16, 16)

// func f16Dot2x4(w *byte, wstride int, x *float32, n, xstride int, out *float32)
DOT2X4(·f16Dot2x4, LOADF16, 16)

// func f32Dot2x4(w *byte, wstride int, x *float32, n, xstride int, out *float32)
DOT2X4(·f32Dot2x4, LOADF32, 32)

// func bf16Dot2x4(w *byte, wstride int, x *float32, n, xstride int, out *float32)
DOT2X4(·bf16Dot2x4, LOADBF16, 16)

// Rows i and i+rows/2 (rows even, w + r*wstride bytes) × one token, the
// loop over rows in assembly: two accumulator chains, so decode is not
// bound by the latency of one chain of fused multiply-adds, over two long
// forward streams of weights, which the hardware prefetchers follow (four
// adjacent rows at once, four short interleaved streams, streamed ~20%
// slower on Zen 4); out[i] gets row i's result.
#define DOTHALVES(NAME, LOAD, WSTEP) \
TEXT NAME(SB), NOSPLIT, $0-48 \
	FROWSARGS                         \
	SHRQ   $1, BX                     \
	JZ     done                       \
	MOVQ   BX, R10                    \
	MOVQ   BX, R11                    \
	IMULQ  R9, R11                    \
row:                                  \
	FROWSTART                         \
	VXORPS Y0, Y0, Y0                 \
	VXORPS Y1, Y1, Y1                 \
	JZ     store                      \
col:                                  \
	PREFETCHT0 FPFD(SI)               \
	PREFETCHT0 FPFD(SI)(R11*1)        \
	VMOVUPS (R8), Y8                  \
	LOAD((SI), Y2)                    \
	LOAD((SI)(R11*1), Y3)             \
	VFMADD231PS Y8, Y2, Y0            \
	VFMADD231PS Y8, Y3, Y1            \
	FCOLNEXT(WSTEP)                   \
store:                                \
	HSUM8(Y0, X0, X6)                 \
	HSUM8(Y1, X1, X6)                 \
	MOVSS  X0, (R13)                  \
	MOVSS  X1, (R13)(R10*4)           \
	FROWNEXT

// Rows i, i+q, i+2q, i+3q (q = rows/4, rows a multiple of four) × one
// token: DOTHALVES with four chains of fused multiply-adds instead of two,
// so the latency of one chain no longer bounds a row pair (Zen 3, one
// thread in cache: two chains ran 25 GB/s of F16 weights), over four long
// forward streams. Rows i, i+1 of each half at once instead made short
// streams that jump over each other's rows, which the prefetchers follow
// badly (135M F16 decode ~20% slower). out[i] gets row i's result.
#define DOTQUARTERS(NAME, LOAD, WSTEP) \
TEXT NAME(SB), NOSPLIT, $0-48 \
	FROWSARGS                         \
	SHRQ   $2, BX                     \
	JZ     done                       \
	MOVQ   BX, R10                    \
	SHLQ   $2, R10                    \
	MOVQ   BX, R11                    \
	IMULQ  R9, R11                    \
	LEAQ   (R11)(R11*1), R12          \
	LEAQ   (R12)(R11*1), R14          \
row:                                  \
	FROWSTART                         \
	VXORPS Y0, Y0, Y0                 \
	VXORPS Y1, Y1, Y1                 \
	VXORPS Y4, Y4, Y4                 \
	VXORPS Y5, Y5, Y5                 \
	JZ     store                      \
col:                                  \
	VMOVUPS (R8), Y8                  \
	LOAD((SI), Y2)                    \
	LOAD((SI)(R11*1), Y3)             \
	LOAD((SI)(R12*1), Y6)             \
	LOAD((SI)(R14*1), Y7)             \
	VFMADD231PS Y8, Y2, Y0            \
	VFMADD231PS Y8, Y3, Y1            \
	VFMADD231PS Y8, Y6, Y4            \
	VFMADD231PS Y8, Y7, Y5            \
	FCOLNEXT(WSTEP)                   \
store:                                \
	HSUM8(Y0, X0, X6)                 \
	HSUM8(Y1, X1, X6)                 \
	HSUM8(Y4, X4, X6)                 \
	HSUM8(Y5, X5, X6)                 \
	MOVQ   R13, R15                   \
	MOVSS  X0, (R15)                  \
	ADDQ   R10, R15                   \
	MOVSS  X1, (R15)                  \
	ADDQ   R10, R15                   \
	MOVSS  X4, (R15)                  \
	ADDQ   R10, R15                   \
	MOVSS  X5, (R15)                  \
	FROWNEXT

// func f16DotQuarters(w *byte, wstride int, x *float32, n, rows int, out *float32)
DOTQUARTERS(·f16DotQuarters, LOADF16, 16)

// func f32DotQuarters(w *byte, wstride int, x *float32, n, rows int, out *float32)
DOTQUARTERS(·f32DotQuarters, LOADF32, 32)

// func bf16DotQuarters(w *byte, wstride int, x *float32, n, rows int, out *float32)
DOTQUARTERS(·bf16DotQuarters, LOADBF16, 16)

// func f16DotHalves(w *byte, wstride int, x *float32, n, rows int, out *float32)
DOTHALVES(·f16DotHalves, LOADF16, 16)

// func f32DotHalves(w *byte, wstride int, x *float32, n, rows int, out *float32)
DOTHALVES(·f32DotHalves, LOADF32, 32)

// func bf16DotHalves(w *byte, wstride int, x *float32, n, rows int, out *float32)
DOTHALVES(·bf16DotHalves, LOADBF16, 16)
