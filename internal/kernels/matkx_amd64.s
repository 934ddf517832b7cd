//go:build amd64 && !noasm

#include "textflag.h"
#include "asm_amd64.h"

// iq4xsRows, q3kRows, q2kRows: the q4kRows scheme (one token against n
// consecutive rows, super-block scales decoded in registers to int16 at
// 0(SP)) for IQ4_XS, Q3_K and Q2_K, dotKRef step for step.
//
// IQ4_XS and Q3_K values are signed (codebook values; 2 bits + high bit −
// 4): |w| × x signed by w (VPSIGNB), as the Q8_0 kernels; no min term, the
// result is hsum(acc). Q2_K values are unsigned 2-bit with a min per 16:
// M = Σ mv[j]×bs[j] fused with dmin×d_x, result hsum(acc) − accM.
//
// Lanes as everywhere: VPMADDUBSW then VPMADDWD by the group's int16
// scale(s) gives lane l = scale × (elements 4l..4l+3) of each 32-value
// group; Q3_K/Q2_K groups carry two 16-value scales, one per 128-bit lane.

// SDOT(W, XOFF): Y8 += signed weights W (destroyed) · x at XOFF(R8), int16
// scales in Y2.
#define SDOT(W, XOFF) \
	VPSIGNB    W, W, Y1        \
	VMOVDQU    XOFF(R8), Y0    \
	VPSIGNB    W, Y0, Y0       \
	VPMADDUBSW Y0, Y1, Y0      \
	VPMADDWD   Y2, Y0, Y0      \
	VPADDD     Y0, Y8, Y8

// UDOT(W, XOFF): the same for unsigned weights.
#define UDOT(W, XOFF) \
	VPMADDUBSW XOFF(R8), W, W  \
	VPMADDWD   Y2, W, W        \
	VPADDD     W, Y8, Y8

// SC2(SOFF) (clobbers X3): Y2 = scale SOFF(SP) in the low 128 bits, SOFF+2(SP) in the high.
#define SC2(SOFF) \
	VPBROADCASTW SOFF(SP), X2     \
	VPBROADCASTW SOFF+2(SP), X3   \
	VINSERTI128  $1, X3, Y2, Y2

// FMAD(DOFF): acc += float(Y8) × (d_w at DOFF(SI)) × d_x; leaves d_x in Y4.
#define FMAD(DOFF) \
	VCVTDQ2PS    Y8, Y8     \
	VBROADCASTSS (DX), Y4   \
	VPBROADCASTW DOFF(SI), X5 \
	VCVTPH2PS    X5, Y5     \
	VMULPS       Y4, Y5, Y5 \
	VFMADD231PS  Y5, Y8, Y9

#define SBSTEP(BB) \
	ADDQ $BB, SI  \
	ADDQ $256, R8 \
	ADDQ $4, DX   \
	ADDQ $32, R9  \
	DECQ CX

// IQ4_XS group IB: 16 bytes of nibbles at 8+16·IB, codebook in Y14.
#define IQ4XSGROUP(IB) \
	VMOVDQU      (8+16*IB)(SI), X11 \
	VPSRLW       $4, X11, X12       \
	VINSERTI128  $1, X12, Y11, Y11  \
	VPAND        Y15, Y11, Y11      \
	VPSHUFB      Y11, Y14, Y11      \
	VPBROADCASTW (2*IB)(SP), Y2     \
	SDOT(Y11, 32*IB)

// IQ4XSSC(IB, BYTE, SHL, SHH): scale IB = (scales_l[BYTE]>>SHL)&15 |
// ((scales_h>>SHH)&3)<<4, minus 32.
#define IQ4XSSC(IB, BYTE, SHL, SHH) \
	MOVBLZX BYTE(SI), AX \
	SHRL    $SHL, AX     \
	ANDL    $15, AX      \
	MOVWLZX 2(SI), BX    \
	SHRL    $SHH, BX     \
	ANDL    $3, BX       \
	SHLL    $4, BX       \
	ORL     BX, AX       \
	SUBL    $32, AX      \
	MOVW    AX, (2*IB)(SP)

// func iq4xsRows(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb int)
TEXT ·iq4xsRows(SB), NOSPLIT, $64-64
	ROWARGS
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	VMOVDQU      ·x32Consts+32(SB), Y14 // the codebook in both lanes

xsrow:
	ROWHEAD

xssb:
	PREFETCHT0 1024(SI)
	PREFETCHT0 1088(SI)
	IQ4XSSC(0, 4, 0, 0)
	IQ4XSSC(1, 4, 4, 2)
	IQ4XSSC(2, 5, 0, 4)
	IQ4XSSC(3, 5, 4, 6)
	IQ4XSSC(4, 6, 0, 8)
	IQ4XSSC(5, 6, 4, 10)
	IQ4XSSC(6, 7, 0, 12)
	IQ4XSSC(7, 7, 4, 14)
	VPXOR Y8, Y8, Y8
	IQ4XSGROUP(0)
	IQ4XSGROUP(1)
	IQ4XSGROUP(2)
	IQ4XSGROUP(3)
	IQ4XSGROUP(4)
	IQ4XSGROUP(5)
	IQ4XSGROUP(6)
	IQ4XSGROUP(7)
	FMAD(0)
	SBSTEP(136)
	JNZ xssb

	HSUM8(Y9, X9, X0)
	MOVSS X9, (DI)
	ADDQ  $4, DI
	ADDQ  rowBytes+16(FP), R10
	DECQ  R11
	JNZ   xsrow
	VZEROUPPER
	RET

// Q3_K group of half N, shift J (group g = 4N+J): values (qs[32N+l] >>
// 2J)&3, plus 4 where hmask bit g is set (HS shifts it to bit 2), minus 4.
// Y12 = qs half, Y11 = hmask, Y15 = 0x03, Y14 = 0x04.
#define Q3KGROUP(G, J, HS, HN) \
	VPSRLW  $(2*J), Y12, Y0   \
	VPAND   Y15, Y0, Y0       \
	HS      $HN, Y11, Y1      \
	VPAND   Y14, Y1, Y1       \
	VPOR    Y1, Y0, Y0        \
	VPSUBB  Y14, Y0, Y5       \
	SC2(4*G)                  \
	SDOT(Y5, 32*G)

// func q3kRows(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb int)
TEXT ·q3kRows(SB), NOSPLIT, $64-64
	ROWARGS
	MOVL         $0x03030303, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	MOVL         $0x04040404, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	MOVL         $0x00200020, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13

q3row:
	ROWHEAD

q3sb:
	PREFETCHT0 1024(SI)
	PREFETCHT0 1088(SI)
	// The 16 six-bit scales from the 12 bytes a0, a1, a2 (little-endian
	// words at 96, 100, 104): bytes 0..3 = a0&0x0f.. | (a2&3)<<4, 4..7 =
	// a1&0x0f.. | (a2>>2&3)<<4, 8..11 = a0>>4&0x0f.. | (a2>>4&3)<<4,
	// 12..15 = a1>>4&0x0f.. | (a2>>6&3)<<4.
	MOVL 96(SI), AX
	MOVL 100(SI), BX
	MOVL 104(SI), R12
	MOVL AX, R13
	ANDL $0x0f0f0f0f, R13
	MOVL R12, R14
	ANDL $0x03030303, R14
	SHLL $4, R14
	ORL  R14, R13 // scales 0..3
	MOVL BX, R14
	ANDL $0x0f0f0f0f, R14
	MOVL R12, R15
	SHRL $2, R15
	ANDL $0x03030303, R15
	SHLL $4, R15
	ORL  R15, R14 // scales 4..7
	VMOVD   R13, X0
	VPINSRD $1, R14, X0, X0
	SHRL $4, AX
	ANDL $0x0f0f0f0f, AX
	MOVL R12, R15
	SHRL $4, R15
	ANDL $0x03030303, R15
	SHLL $4, R15
	ORL  R15, AX // scales 8..11
	SHRL $4, BX
	ANDL $0x0f0f0f0f, BX
	SHRL $6, R12
	ANDL $0x03030303, R12
	SHLL $4, R12
	ORL  R12, BX // scales 12..15
	VPINSRD $2, AX, X0, X0
	VPINSRD $3, BX, X0, X0
	VPMOVZXBW X0, Y0
	VPSUBW    Y13, Y0, Y0
	VMOVDQU   Y0, 0(SP)

	VMOVDQU (SI), Y11 // hmask
	VPXOR   Y8, Y8, Y8
	VMOVDQU 32(SI), Y12
	Q3KGROUP(0, 0, VPSLLW, 2)
	Q3KGROUP(1, 1, VPSLLW, 1)
	Q3KGROUP(2, 2, VPSRLW, 0)
	Q3KGROUP(3, 3, VPSRLW, 1)
	VMOVDQU 64(SI), Y12
	Q3KGROUP(4, 0, VPSRLW, 2)
	Q3KGROUP(5, 1, VPSRLW, 3)
	Q3KGROUP(6, 2, VPSRLW, 4)
	Q3KGROUP(7, 3, VPSRLW, 5)
	FMAD(108)
	SBSTEP(110)
	JNZ q3sb

	HSUM8(Y9, X9, X0)
	MOVSS X9, (DI)
	ADDQ  $4, DI
	ADDQ  rowBytes+16(FP), R10
	DECQ  R11
	JNZ   q3row
	VZEROUPPER
	RET

// Q2_K group of half N, shift J: values (qs[32N+l] >> 2J)&3.
#define Q2KGROUP(G, J) \
	VPSRLW  $(2*J), Y12, Y5   \
	VPAND   Y15, Y5, Y5       \
	SC2(4*G)                  \
	UDOT(Y5, 32*G)

// func q2kRows(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb int)
TEXT ·q2kRows(SB), NOSPLIT, $64-64
	ROWARGS
	MOVL         $0x03030303, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	MOVL         $0x000f000f, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14

q2row:
	ROWHEAD

q2sb:
	PREFETCHT0 1024(SI)
	VPMOVZXBW (SI), Y0      // the 16 scale bytes
	VPAND     Y14, Y0, Y1   // scales (low nibbles)
	VMOVDQU   Y1, 0(SP)
	VPSRLW    $4, Y0, Y13   // mins (high nibbles), the multipliers of bs
	VPXOR   Y8, Y8, Y8
	VMOVDQU 16(SI), Y12
	Q2KGROUP(0, 0)
	Q2KGROUP(1, 1)
	Q2KGROUP(2, 2)
	Q2KGROUP(3, 3)
	VMOVDQU 48(SI), Y12
	Q2KGROUP(4, 0)
	Q2KGROUP(5, 1)
	Q2KGROUP(6, 2)
	Q2KGROUP(7, 3)
	FMAD(80)
	MTERMR
	VPBROADCASTW 82(SI), X7
	VCVTPH2PS    X7, X7
	VMULSS       X4, X7, X7
	VFMADD231SS  X7, X6, X10
	SBSTEP(84)
	JNZ q2sb

	HSUM8(Y9, X9, X0)
	VSUBSS X10, X9, X9
	MOVSS  X9, (DI)
	ADDQ   $4, DI
	ADDQ   rowBytes+16(FP), R10
	DECQ   R11
	JNZ    q2row
	VZEROUPPER
	RET
