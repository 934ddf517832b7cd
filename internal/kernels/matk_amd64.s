//go:build amd64 && !noasm

#include "textflag.h"
#include "asm_amd64.h"

// K4ARGS / K4ROW: q4kRows4's and q6kRows4's arguments (one signature),
// and the per-row reload of the activation pointers. Defined before any
// TEXT: vet checks a macro's FP names against the function it follows.
#define K4ARGS \
	MOVQ out+0(FP), R15 \
	MOVQ outStride+8(FP), BX \
	MOVQ w+16(FP), R10 \
	MOVQ n+32(FP), R11 \
	MOVQ xqStride+72(FP), R12 \
	MOVQ xdStride+80(FP), R13 \
	MOVQ bsStride+88(FP), R14 \
	LEAQ (R13)(R13*2), AX

#define K4ROW \
	MOVQ   R10, SI \
	MOVQ   xq+40(FP), R8 \
	MOVQ   xd+48(FP), DX \
	MOVQ   bs+56(FP), R9 \
	MOVQ   nsb+64(FP), CX

// q4kRows / q6kRows: dot products of n consecutive Q4_K / Q6_K weight rows
// with one token's 256-value int8 activation blocks — dotKRef step for
// step — looping over the rows in assembly and decoding each super-block's
// scales in registers.
//
// Per super-block the exact integer lanes A (eight int32, lane l = elements
// 4l..4l+3 of each 32-value group, times the group's scale) are converted and
// fused into the float accumulator with d×d_x; M = Σ mult[k]×bs[k] over the
// 16-value activation sums bs (Q4_K: mult is the min of the value's
// sub-block; Q6_K: 32 × scale, the offset of the unsigned 6-bit values) is
// fused into a scalar accumulator with dmin×d_x; the result is
// hsum(acc) − accM. Q6_K instead subtracts its offset inside the integer
// lanes (lane l: 32×(sc[2l]·bs[2l] + sc[2l+1]·bs[2l+1]), ggml's
// ggml_vec_dot_q6_K_q8_K order) before the conversion, and has no accM.
//
// Each super-block prefetches the weights 4 KiB ahead (1 KiB before: the
// one-thread 1B-shape stream went 7.6 → 8.4 GB/cpu-s with 4 KiB; measured
// to help the single-token stream from memory on the shared host, and
// harmless in cache; prefetches never fault past the matrix's end).
//
// Frame: 0(SP) holds the super-block's 16 int16 sub-block scales (Q4_K:
// scales 0..7 then mins 0..7; Q6_K: the 16 scales), read by the group
// macros with VPBROADCASTW; Y13 holds the 16 multipliers of bs.

#define Q4KCHUNK(OFF, XOFF, SOFF) \
	VMOVDQU      OFF(SI), Y0       \
	VPSRLW       $4, Y0, Y1        \
	VPAND        Y15, Y0, Y0       \
	VPAND        Y15, Y1, Y1       \
	VPMADDUBSW   XOFF(R8), Y0, Y0  \
	VPSHUFB      ·q4kWordSel+(16*SOFF)(SB), Y14, Y2 \
	VPMADDWD     Y2, Y0, Y0        \
	VPADDD       Y0, Y8, Y8        \
	VPMADDUBSW   XOFF+32(R8), Y1, Y1 \
	VPSHUFB      ·q4kWordSel+(16*SOFF+32)(SB), Y14, Y3 \
	VPMADDWD     Y3, Y1, Y1        \
	VPADDD       Y1, Y8, Y8

// func q4kRows(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb int)
TEXT ·q4kRows(SB), NOSPLIT, $0-64
	ROWARGS
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15

row:
	ROWHEAD

sb:
	PREFETCHT0 4096(SI)
	PREFETCHT0 4160(SI)
	PREFETCHT0 4224(SI)
	Q4KSCALES
	Q4KVECS(Y14, Y13)

	VPXOR Y8, Y8, Y8
	Q4KCHUNK(16, 0, 0)
	Q4KCHUNK(48, 64, 4)
	Q4KCHUNK(80, 128, 8)
	Q4KCHUNK(112, 192, 12)
	VCVTDQ2PS    Y8, Y8
	VBROADCASTSS (DX), Y4
	VPBROADCASTW (SI), X5
	VCVTPH2PS    X5, Y5
	VMULPS       Y4, Y5, Y5
	VFMADD231PS  Y5, Y8, Y9
	MTERMR
	VPBROADCASTW 2(SI), X7
	VCVTPH2PS    X7, X7
	VMULSS       X4, X7, X7
	VFMADD231SS  X7, X6, X10
	ADDQ         $144, SI
	ADDQ         $256, R8
	ADDQ         $4, DX
	ADDQ         $32, R9
	DECQ         CX
	JNZ          sb

	HSUM8(Y9, X9, X0)
	VSUBSS X10, X9, X9
	MOVSS  X9, (DI)
	ADDQ   $4, DI
	ADDQ   rowBytes+16(FP), R10
	DECQ   R11
	JNZ    row
	VZEROUPPER
	RET

// q4kRows4: q4kRows for four tokens, a batched decode step's kernel. Each
// super-block's nibbles and scales are decoded once and met by the four
// tokens in turn; per token every operation is q4kRows', so a token's
// result does not depend on which kernel computed it. With one token per
// pass a batch of b cost b passes of decoding (BenchmarkDecodeRows: b16
// streamed 14.6 token-GB/s, no faster than b1), and the decode, not the
// multiplies, bounded the pass.
//
// Registers: Y0/Y1 a chunk's low and high nibbles, Y2/Y3 their groups'
// scales, Y4..Y7 the tokens' integer lanes, Y9..Y12 their float
// accumulators, Y13 the min multipliers, Y14 the scale words, Y8/Y15
// temporaries; the four min accumulators (lane t = token t) live at 0(SP).
// R12/R13/R14 are the byte strides between tokens' xq, xd and bs, AX 3×R13,
// DI 3×R12 or 3×R14; R15 walks the output, BX its token stride.

// Q4K4TOK(XLO, XHI, A): one token's products with the chunk's two groups.
#define Q4K4TOK(XLO, XHI, A) \
	VPMADDUBSW XLO, Y0, Y8  \
	VPMADDWD   Y2, Y8, Y8   \
	VPADDD     Y8, A, A     \
	VPMADDUBSW XHI, Y1, Y15 \
	VPMADDWD   Y3, Y15, Y15 \
	VPADDD     Y15, A, A

#define Q4K4CHUNK(OFF, XOFF, SOFF) \
	VMOVDQU  OFF(SI), Y0                             \
	VPSRLW   $4, Y0, Y1                              \
	VPAND    ·q4kNib(SB), Y0, Y0                     \
	VPAND    ·q4kNib(SB), Y1, Y1                     \
	VPSHUFB  ·q4kWordSel+(16*SOFF)(SB), Y14, Y2      \
	VPSHUFB  ·q4kWordSel+(16*SOFF+32)(SB), Y14, Y3   \
	Q4K4TOK(XOFF(R8), XOFF+32(R8), Y4)               \
	Q4K4TOK(XOFF(R8)(R12*1), XOFF+32(R8)(R12*1), Y5) \
	Q4K4TOK(XOFF(R8)(R12*2), XOFF+32(R8)(R12*2), Y6) \
	Q4K4TOK(XOFF(R8)(DI*1), XOFF+32(R8)(DI*1), Y7)

// Q4K4FMA(XD, A, ACC): acc += float(A) × (d × x_d), d in Y0.
#define Q4K4FMA(XD, A, ACC) \
	VCVTDQ2PS    A, A          \
	VBROADCASTSS XD, Y1        \
	VMULPS       Y1, Y0, Y1    \
	VFMADD231PS  Y1, A, ACC

// Q4K4OUT(ACC, X, SHUF, OFF): out[t] = hsum(acc) − accM lane t, at R15+OFF.
#define Q4K4OUT(ACC, X, SHUF, OFF) \
	HSUM8(ACC, X, X0)            \
	VSHUFPS $SHUF, X3, X3, X1    \
	VSUBSS  X1, X, X             \
	MOVSS   X, OFF

// func q4kRows4(out *float32, outStride int, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb, xqStride, xdStride, bsStride int)
TEXT ·q4kRows4(SB), NOSPLIT, $16-96
	K4ARGS

row4:
	K4ROW
	VZERO4(Y9, Y10, Y11, Y12)
	VMOVUPS X9, 0(SP)

sb4:
	PREFETCHT0 4096(SI)
	PREFETCHT0 4160(SI)
	PREFETCHT0 4224(SI)
	Q4KSCALES
	Q4KVECS(Y14, Y13)
	LEAQ         (R12)(R12*2), DI
	VPXOR        Y4, Y4, Y4
	VPXOR        Y5, Y5, Y5
	VPXOR        Y6, Y6, Y6
	VPXOR        Y7, Y7, Y7
	Q4K4CHUNK(16, 0, 0)
	Q4K4CHUNK(48, 64, 4)
	Q4K4CHUNK(80, 128, 8)
	Q4K4CHUNK(112, 192, 12)
	VPBROADCASTW (SI), X0
	VCVTPH2PS    X0, Y0
	Q4K4FMA((DX), Y4, Y9)
	Q4K4FMA((DX)(R13*1), Y5, Y10)
	Q4K4FMA((DX)(R13*2), Y6, Y11)
	Q4K4FMA((DX)(AX*1), Y7, Y12)
	// The four M = Σ mins·bs_t, horizontally into X4 lane t (exact
	// integers), then accM_t += float(M_t) × (dmin × x_d,t).
	MINSUMS4(Y13)
	XD4(X1)
	VPBROADCASTW 2(SI), X2
	VCVTPH2PS    X2, X2
	VMULPS       X2, X1, X1
	VMOVUPS      0(SP), X3
	VFMADD231PS  X1, X4, X3
	VMOVUPS      X3, 0(SP)
	ADDQ         $144, SI
	ADDQ         $256, R8
	ADDQ         $4, DX
	ADDQ         $32, R9
	DECQ         CX
	JNZ          sb4

	VMOVUPS 0(SP), X3
	LEAQ    (BX)(BX*2), DI
	Q4K4OUT(Y9, X9, 0x00, (R15))
	Q4K4OUT(Y10, X10, 0x55, (R15)(BX*1))
	Q4K4OUT(Y11, X11, 0xaa, (R15)(BX*2))
	Q4K4OUT(Y12, X12, 0xff, (R15)(DI*1))
	ADDQ    $4, R15
	ADDQ    rowBytes+24(FP), R10
	DECQ    R11
	JNZ     row4
	VZEROUPPER
	RET

#define Q6KGROUP(Q, XOFF, SOFF) \
	VPMADDUBSW   XOFF(R8), Q, Q       \
	VPBROADCASTW SOFF(SP), X2         \
	VPBROADCASTW SOFF+2(SP), X3       \
	VINSERTI128  $1, X3, Y2, Y2       \
	VPMADDWD     Y2, Q, Q             \
	VPADDD       Q, Y8, Y8

#define Q6KHALF(LOFF, HOFF, XOFF, SOFF) \
	VMOVDQU    LOFF(SI), Y0          \
	VMOVDQU    LOFF+32(SI), Y1       \
	VMOVDQU    HOFF(SI), Y4          \
	VPSLLW     $4, Y4, Y5            \
	VPAND      Y14, Y5, Y5           \
	VPAND      Y15, Y0, Y11          \
	VPOR       Y5, Y11, Y11          \
	Q6KGROUP(Y11, XOFF, SOFF)        \
	VPSLLW     $2, Y4, Y5            \
	VPAND      Y14, Y5, Y5           \
	VPAND      Y15, Y1, Y11          \
	VPOR       Y5, Y11, Y11          \
	Q6KGROUP(Y11, XOFF+32, SOFF+4)   \
	VPAND      Y14, Y4, Y5           \
	VPSRLW     $4, Y0, Y11           \
	VPAND      Y15, Y11, Y11         \
	VPOR       Y5, Y11, Y11          \
	Q6KGROUP(Y11, XOFF+64, SOFF+8)   \
	VPSRLW     $2, Y4, Y5            \
	VPAND      Y14, Y5, Y5           \
	VPSRLW     $4, Y1, Y11           \
	VPAND      Y15, Y11, Y11         \
	VPOR       Y5, Y11, Y11          \
	Q6KGROUP(Y11, XOFF+96, SOFF+12)

// func q6kRows(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb int)
TEXT ·q6kRows(SB), NOSPLIT, $64-64
	ROWARGS
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	MOVL         $0x30303030, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14

row6:
	ROWHEAD

sb6:
	PREFETCHT0 4096(SI)
	PREFETCHT0 4160(SI)
	PREFETCHT0 4224(SI)
	PREFETCHT0 4288(SI)
	VPMOVSXBW 192(SI), Y0 // the 16 signed sub-block scales
	VMOVDQU   Y0, 0(SP)
	VPSLLW    $5, Y0, Y13 // 32 × scale, the offset multipliers

	VPXOR Y8, Y8, Y8
	Q6KHALF(0, 128, 0, 0)
	Q6KHALF(64, 160, 128, 16)
	VPMADDWD     (R9), Y13, Y6 // lane l: 32×(sc[2l]·bs[2l] + sc[2l+1]·bs[2l+1])
	VPSUBD       Y6, Y8, Y8    // the offset leaves the integer lanes, as ggml's
	VCVTDQ2PS    Y8, Y8
	VBROADCASTSS (DX), Y4
	VPBROADCASTW 208(SI), X5
	VCVTPH2PS    X5, Y5
	VMULPS       Y4, Y5, Y5
	VFMADD231PS  Y5, Y8, Y9
	ADDQ         $210, SI
	ADDQ         $256, R8
	ADDQ         $4, DX
	ADDQ         $32, R9
	DECQ         CX
	JNZ          sb6

	HSUM8(Y9, X9, X0)
	MOVSS  X9, (DI)
	ADDQ   $4, DI
	ADDQ   rowBytes+16(FP), R10
	DECQ   R11
	JNZ    row6
	VZEROUPPER
	RET

// q6kRows4: q6kRows for four tokens, as q4kRows4 is q4kRows': each group
// of 32 six-bit values is assembled once and met by the four tokens.
// Registers: Y0/Y1 a half's low bits, Y2 its high bits, Y3 a temporary, Y4
// the group's values, Y5 its scales, Y6 the product, Y7..Y10 the tokens'
// integer lanes, Y11..Y14 their float accumulators; 0(SP) the 16 scales,
// 32(SP) the offset multipliers (32 × scale). Masks come from memory.

// Q6K4GROUP(XOFF, SOFF): the group in Y4 against the four tokens.
#define Q6K4GROUP(XOFF, SOFF) \
	VPBROADCASTW SOFF(SP), X5              \
	VPBROADCASTW SOFF+2(SP), X6            \
	VINSERTI128  $1, X6, Y5, Y5            \
	VPMADDUBSW   XOFF(R8), Y4, Y6          \
	VPMADDWD     Y5, Y6, Y6                \
	VPADDD       Y6, Y7, Y7                \
	VPMADDUBSW   XOFF(R8)(R12*1), Y4, Y6   \
	VPMADDWD     Y5, Y6, Y6                \
	VPADDD       Y6, Y8, Y8                \
	VPMADDUBSW   XOFF(R8)(R12*2), Y4, Y6   \
	VPMADDWD     Y5, Y6, Y6                \
	VPADDD       Y6, Y9, Y9                \
	VPMADDUBSW   XOFF(R8)(DI*1), Y4, Y6    \
	VPMADDWD     Y5, Y6, Y6                \
	VPADDD       Y6, Y10, Y10

// Q6K4HALF: 128 values (ql at LOFF, qh at HOFF), assembled as Q6KHALF does.
#define Q6K4HALF(LOFF, HOFF, XOFF, SOFF) \
	VMOVDQU    LOFF(SI), Y0              \
	VMOVDQU    LOFF+32(SI), Y1           \
	VMOVDQU    HOFF(SI), Y2              \
	VPSLLW     $4, Y2, Y3                \
	VPAND      ·q6kHi(SB), Y3, Y3        \
	VPAND      ·q4kNib(SB), Y0, Y4       \
	VPOR       Y3, Y4, Y4                \
	Q6K4GROUP(XOFF, SOFF)                \
	VPSLLW     $2, Y2, Y3                \
	VPAND      ·q6kHi(SB), Y3, Y3        \
	VPAND      ·q4kNib(SB), Y1, Y4       \
	VPOR       Y3, Y4, Y4                \
	Q6K4GROUP(XOFF+32, SOFF+4)           \
	VPAND      ·q6kHi(SB), Y2, Y3        \
	VPSRLW     $4, Y0, Y4                \
	VPAND      ·q4kNib(SB), Y4, Y4       \
	VPOR       Y3, Y4, Y4                \
	Q6K4GROUP(XOFF+64, SOFF+8)           \
	VPSRLW     $2, Y2, Y3                \
	VPAND      ·q6kHi(SB), Y3, Y3        \
	VPSRLW     $4, Y1, Y4                \
	VPAND      ·q4kNib(SB), Y4, Y4       \
	VPOR       Y3, Y4, Y4                \
	Q6K4GROUP(XOFF+96, SOFF+12)

// Q6K4MIN(BS, A): the offset leaves token A's lanes, as in q6kRows.
#define Q6K4MIN(BS, A) \
	VPMADDWD BS, Y0, Y1 \
	VPSUBD   Y1, A, A

// func q6kRows4(out *float32, outStride int, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb, xqStride, xdStride, bsStride int)
TEXT ·q6kRows4(SB), NOSPLIT, $64-96
	K4ARGS

row64:
	K4ROW
	VZERO4(Y11, Y12, Y13, Y14)

sb64:
	PREFETCHT0 4096(SI)
	PREFETCHT0 4160(SI)
	PREFETCHT0 4224(SI)
	PREFETCHT0 4288(SI)
	VPMOVSXBW 192(SI), Y0
	VMOVDQU   Y0, 0(SP)
	VPSLLW    $5, Y0, Y0
	VMOVDQU   Y0, 32(SP)
	LEAQ      (R12)(R12*2), DI
	VPXOR     Y7, Y7, Y7
	VPXOR     Y8, Y8, Y8
	VPXOR     Y9, Y9, Y9
	VPXOR     Y10, Y10, Y10
	Q6K4HALF(0, 128, 0, 0)
	Q6K4HALF(64, 160, 128, 16)
	LEAQ      (R14)(R14*2), DI
	VMOVDQU   32(SP), Y0
	Q6K4MIN((R9), Y7)
	Q6K4MIN((R9)(R14*1), Y8)
	Q6K4MIN((R9)(R14*2), Y9)
	Q6K4MIN((R9)(DI*1), Y10)
	VPBROADCASTW 208(SI), X0
	VCVTPH2PS    X0, Y0
	Q4K4FMA((DX), Y7, Y11)
	Q4K4FMA((DX)(R13*1), Y8, Y12)
	Q4K4FMA((DX)(R13*2), Y9, Y13)
	Q4K4FMA((DX)(AX*1), Y10, Y14)
	ADDQ         $210, SI
	ADDQ         $256, R8
	ADDQ         $4, DX
	ADDQ         $32, R9
	DECQ         CX
	JNZ          sb64

	LEAQ  (BX)(BX*2), DI
	HSUM8(Y11, X11, X0)
	MOVSS X11, (R15)
	HSUM8(Y12, X12, X0)
	MOVSS X12, (R15)(BX*1)
	HSUM8(Y13, X13, X0)
	MOVSS X13, (R15)(BX*2)
	HSUM8(Y14, X14, X0)
	MOVSS X14, (R15)(DI*1)
	ADDQ  $4, R15
	ADDQ  rowBytes+24(FP), R10
	DECQ  R11
	JNZ   row64
	VZEROUPPER
	RET

// Q4KSCALES' per-lane shifts and masks.
DATA ·q4kSclShift+0(SB)/4, $0
DATA ·q4kSclShift+4(SB)/4, $0
DATA ·q4kSclShift+8(SB)/4, $0
DATA ·q4kSclShift+12(SB)/4, $4
GLOBL ·q4kSclShift(SB), RODATA|NOPTR, $16
DATA ·q4kSclLo+0(SB)/4, $0x3f3f3f3f
DATA ·q4kSclLo+4(SB)/4, $0x0f0f0f0f
DATA ·q4kSclLo+8(SB)/4, $0x3f3f3f3f
DATA ·q4kSclLo+12(SB)/4, $0x0f0f0f0f
GLOBL ·q4kSclLo(SB), RODATA|NOPTR, $16
DATA ·q4kSclHi+0(SB)/4, $0
DATA ·q4kSclHi+4(SB)/4, $0x30303030
DATA ·q4kSclHi+8(SB)/4, $0
DATA ·q4kSclHi+12(SB)/4, $0x30303030
GLOBL ·q4kSclHi(SB), RODATA|NOPTR, $16

// q4kWordSel+32j: VPSHUFB control replicating word j of each 128-bit lane.
DATA ·q4kWordSel+0(SB)/4, $0x01000100
DATA ·q4kWordSel+4(SB)/4, $0x01000100
DATA ·q4kWordSel+8(SB)/4, $0x01000100
DATA ·q4kWordSel+12(SB)/4, $0x01000100
DATA ·q4kWordSel+16(SB)/4, $0x01000100
DATA ·q4kWordSel+20(SB)/4, $0x01000100
DATA ·q4kWordSel+24(SB)/4, $0x01000100
DATA ·q4kWordSel+28(SB)/4, $0x01000100
DATA ·q4kWordSel+32(SB)/4, $0x03020302
DATA ·q4kWordSel+36(SB)/4, $0x03020302
DATA ·q4kWordSel+40(SB)/4, $0x03020302
DATA ·q4kWordSel+44(SB)/4, $0x03020302
DATA ·q4kWordSel+48(SB)/4, $0x03020302
DATA ·q4kWordSel+52(SB)/4, $0x03020302
DATA ·q4kWordSel+56(SB)/4, $0x03020302
DATA ·q4kWordSel+60(SB)/4, $0x03020302
DATA ·q4kWordSel+64(SB)/4, $0x05040504
DATA ·q4kWordSel+68(SB)/4, $0x05040504
DATA ·q4kWordSel+72(SB)/4, $0x05040504
DATA ·q4kWordSel+76(SB)/4, $0x05040504
DATA ·q4kWordSel+80(SB)/4, $0x05040504
DATA ·q4kWordSel+84(SB)/4, $0x05040504
DATA ·q4kWordSel+88(SB)/4, $0x05040504
DATA ·q4kWordSel+92(SB)/4, $0x05040504
DATA ·q4kWordSel+96(SB)/4, $0x07060706
DATA ·q4kWordSel+100(SB)/4, $0x07060706
DATA ·q4kWordSel+104(SB)/4, $0x07060706
DATA ·q4kWordSel+108(SB)/4, $0x07060706
DATA ·q4kWordSel+112(SB)/4, $0x07060706
DATA ·q4kWordSel+116(SB)/4, $0x07060706
DATA ·q4kWordSel+120(SB)/4, $0x07060706
DATA ·q4kWordSel+124(SB)/4, $0x07060706
DATA ·q4kWordSel+128(SB)/4, $0x09080908
DATA ·q4kWordSel+132(SB)/4, $0x09080908
DATA ·q4kWordSel+136(SB)/4, $0x09080908
DATA ·q4kWordSel+140(SB)/4, $0x09080908
DATA ·q4kWordSel+144(SB)/4, $0x09080908
DATA ·q4kWordSel+148(SB)/4, $0x09080908
DATA ·q4kWordSel+152(SB)/4, $0x09080908
DATA ·q4kWordSel+156(SB)/4, $0x09080908
DATA ·q4kWordSel+160(SB)/4, $0x0b0a0b0a
DATA ·q4kWordSel+164(SB)/4, $0x0b0a0b0a
DATA ·q4kWordSel+168(SB)/4, $0x0b0a0b0a
DATA ·q4kWordSel+172(SB)/4, $0x0b0a0b0a
DATA ·q4kWordSel+176(SB)/4, $0x0b0a0b0a
DATA ·q4kWordSel+180(SB)/4, $0x0b0a0b0a
DATA ·q4kWordSel+184(SB)/4, $0x0b0a0b0a
DATA ·q4kWordSel+188(SB)/4, $0x0b0a0b0a
DATA ·q4kWordSel+192(SB)/4, $0x0d0c0d0c
DATA ·q4kWordSel+196(SB)/4, $0x0d0c0d0c
DATA ·q4kWordSel+200(SB)/4, $0x0d0c0d0c
DATA ·q4kWordSel+204(SB)/4, $0x0d0c0d0c
DATA ·q4kWordSel+208(SB)/4, $0x0d0c0d0c
DATA ·q4kWordSel+212(SB)/4, $0x0d0c0d0c
DATA ·q4kWordSel+216(SB)/4, $0x0d0c0d0c
DATA ·q4kWordSel+220(SB)/4, $0x0d0c0d0c
DATA ·q4kWordSel+224(SB)/4, $0x0f0e0f0e
DATA ·q4kWordSel+228(SB)/4, $0x0f0e0f0e
DATA ·q4kWordSel+232(SB)/4, $0x0f0e0f0e
DATA ·q4kWordSel+236(SB)/4, $0x0f0e0f0e
DATA ·q4kWordSel+240(SB)/4, $0x0f0e0f0e
DATA ·q4kWordSel+244(SB)/4, $0x0f0e0f0e
DATA ·q4kWordSel+248(SB)/4, $0x0f0e0f0e
DATA ·q4kWordSel+252(SB)/4, $0x0f0e0f0e
GLOBL ·q4kWordSel(SB), RODATA|NOPTR, $256

// q4kNib is the low-nibble mask, 32 bytes (q4kRows4 has no register for it).
DATA ·q4kNib+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA ·q4kNib+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA ·q4kNib+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA ·q4kNib+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL ·q4kNib(SB), RODATA|NOPTR, $32

// q6kHi masks a six-bit value's two high bits, 32 bytes.
DATA ·q6kHi+0(SB)/8, $0x3030303030303030
DATA ·q6kHi+8(SB)/8, $0x3030303030303030
DATA ·q6kHi+16(SB)/8, $0x3030303030303030
DATA ·q6kHi+24(SB)/8, $0x3030303030303030
GLOBL ·q6kHi(SB), RODATA|NOPTR, $32

// Q4KVECS' byte selections: s0..s7 twice; m0, m0, …, m7, m7.
DATA ·q4kSclDup+0(SB)/8, $0x0706050403020100
DATA ·q4kSclDup+8(SB)/8, $0x0706050403020100
GLOBL ·q4kSclDup(SB), RODATA|NOPTR, $16
DATA ·q4kMinDup+0(SB)/8, $0x0b0b0a0a09090808
DATA ·q4kMinDup+8(SB)/8, $0x0f0f0e0e0d0d0c0c
GLOBL ·q4kMinDup(SB), RODATA|NOPTR, $16
