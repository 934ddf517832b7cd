//go:build amd64 && !noasm

#include "textflag.h"
#include "asm_amd64.h"

// One token against consecutive rows of Q5_0, IQ4_NL, Q4_1 or Q5_1
// weights: each 32-value block is decoded in registers to the int8 values
// decodeQ32 gives, then met with the token exactly as q8DotRows does
// (|w| × x signed by w, pairs, pairs again: lane l = elements 4l..4l+3,
// converted and fused with d_w×d_x), so out[i] is dotQ32Ref's value. Q4_1
// and Q5_1 also fuse m_w×s_x into a scalar sum added after the lanes.
//
// Registers: Y15 int16 ones, Y14 d_w, Y13 the weights, Y12 |w|, Y8 the
// accumulator, X2 the min sum; constants Y7 0x0f bytes, Y6 the type's
// constant (IQ4_NL codebook, Q5_0 0xf0, Q5_1 0x10), Y5/Y4/Y3 spread the
// 32 qh bits to bytes (0xff where set; ggml's bytes_from_bits_32).

#define TOKEN(XQ, XD, ACC, T0, T1) \
	VMOVDQU      XQ, T0        \
	VPSIGNB      Y13, T0, T0   \
	VPMADDUBSW   T0, Y12, T0   \
	VPMADDWD     Y15, T0, T0   \
	VCVTDQ2PS    T0, T0        \
	VBROADCASTSS XD, T1        \
	VMULPS       Y14, T1, T1   \
	VFMADD231PS  T1, T0, ACC

// NIBBLES(OFF): Y13 = the 32 nibbles at OFF(SI), low nibbles first.
#define NIBBLES(OFF) \
	VMOVDQU     OFF(SI), X13      \
	VPSRLW      $4, X13, X10      \
	VINSERTI128 $1, X10, Y13, Y13 \
	VPAND       Y7, Y13, Y13

// QHBITS(OFF): Y9 = 0xff in byte i where bit i of the uint32 at OFF(SI) is set.
#define QHBITS(OFF) \
	VPBROADCASTD OFF(SI), Y9 \
	VPSHUFB      Y5, Y9, Y9  \
	VPOR         Y4, Y9, Y9  \
	VPCMPEQB     Y3, Y9, Y9

#define SCALE \
	VPBROADCASTW (SI), X14 \
	VCVTPH2PS    X14, Y14

#define LOADQ50 \
	SCALE              \
	QHBITS(2)          \
	VPANDN Y6, Y9, Y9  \
	NIBBLES(6)         \
	VPOR   Y9, Y13, Y13 \
	VPSIGNB Y13, Y13, Y12

#define LOADQ51 \
	SCALE              \
	QHBITS(4)          \
	VPAND  Y6, Y9, Y9  \
	NIBBLES(8)         \
	VPOR   Y9, Y13, Y13 \
	VPSIGNB Y13, Y13, Y12

#define LOADQ41 \
	SCALE              \
	NIBBLES(4)         \
	VPSIGNB Y13, Y13, Y12

#define LOADIQ4NL \
	SCALE                  \
	NIBBLES(2)             \
	VPSHUFB Y13, Y6, Y13   \
	VPSIGNB Y13, Y13, Y12

#define NOMIN
#define MIN \
	VPBROADCASTW 2(SI), X10   \
	VCVTPH2PS    X10, X10     \
	VFMADD231SS  (R14), X10, X2

#define NOADD
#define ADDMIN VADDSS X2, X8, X8

// ROWS32 defines func NAME(w *byte, rowBytes, rows int, xq *int8, xd, xs *float32, nb int, out *float32).
#define ROWS32(NAME, LOAD, BSTEP, CONST, MINTERM, FINISH) \
TEXT NAME(SB), NOSPLIT, $0-64 \
	MOVQ w+0(FP), DI \
	MOVQ rowBytes+8(FP), R9 \
	MOVQ rows+16(FP), BX \
	MOVQ xq+24(FP), R10 \
	MOVQ xd+32(FP), R11 \
	MOVQ nb+48(FP), R12 \
	MOVQ out+56(FP), R13 \
	MOVL $0x00010001, AX \
	VMOVD AX, X15 \
	VPBROADCASTD X15, Y15 \
	MOVL $0x0f0f0f0f, AX \
	VMOVD AX, X7 \
	VPBROADCASTD X7, Y7 \
	VMOVDQU CONST, Y6 \
	VMOVDQU ·x32Spread+0(SB), Y5 \
	VMOVDQU ·x32Spread+32(SB), Y4 \
	VPCMPEQB Y3, Y3, Y3 \
 \
rowloop: \
	MOVQ DI, SI \
	MOVQ R10, R8 \
	MOVQ R11, DX \
	MOVQ xs+40(FP), R14 \
	MOVQ R12, CX \
	VXORPS Y8, Y8, Y8 \
	VXORPS X2, X2, X2 \
 \
blkloop: \
	PREFETCHT0 768(SI) \
	LOAD \
	TOKEN((R8), (DX), Y8, Y0, Y1) \
	MINTERM \
	ADDQ $BSTEP, SI \
	ADDQ $32, R8 \
	ADDQ $4, DX \
	ADDQ $4, R14 \
	DECQ CX \
	JNZ  blkloop \
	HSUM8(Y8, X8, X0) \
	FINISH \
	MOVSS X8, (R13) \
	ADDQ  $4, R13 \
	ADDQ  R9, DI \
	DECQ  BX \
	JNZ   rowloop \
	VZEROUPPER \
	RET

ROWS32(·q50Rows, LOADQ50, 22, ·x32Consts+0(SB), NOMIN, NOADD)
ROWS32(·iq4nlRows, LOADIQ4NL, 18, ·x32Consts+32(SB), NOMIN, NOADD)
ROWS32(·q41Rows, LOADQ41, 20, ·x32Consts+0(SB), MIN, ADDMIN)
ROWS32(·q51Rows, LOADQ51, 24, ·x32Consts+64(SB), MIN, ADDMIN)
