//go:build amd64 && !noasm

#include "textflag.h"
#include "asm_amd64.h"

// q5kRows: q4kRows for Q5_K (176-byte super-blocks: d, dmin, 12 scale
// bytes as Q4_K, qh[32], qs[128]). Value = nibble | fifth bit << 4, the
// fifth bits of chunk c's low nibbles at bit 2c of qh[l], of its high
// nibbles at bit 2c+1. The lanes, the M term and the float steps are
// dotKRef's, as in q4kRows; so is the vector scale decode (Q4KSCALES,
// Q4KVECS with the scale words in Y11: Y14 holds the fifth-bit mask).

// Q5KCHUNK: chunk c's 64 values; SL/SH shift the qh bits of its low/high
// nibbles to bit 4 of each byte (word shifts stay inside each byte here,
// since only bit 4 is kept).
#define Q5KCHUNK(OFF, XOFF, SOFF, SL, NL, SH, NH) \
	VMOVDQU      OFF(SI), Y0       \
	VPSRLW       $4, Y0, Y1        \
	VPAND        Y15, Y0, Y0       \
	VPAND        Y15, Y1, Y1       \
	SL           $NL, Y12, Y2      \
	VPAND        Y14, Y2, Y2       \
	VPOR         Y2, Y0, Y0        \
	SH           $NH, Y12, Y3      \
	VPAND        Y14, Y3, Y3       \
	VPOR         Y3, Y1, Y1        \
	VPMADDUBSW   XOFF(R8), Y0, Y0  \
	VPSHUFB      ·q4kWordSel+(16*SOFF)(SB), Y11, Y2 \
	VPMADDWD     Y2, Y0, Y0        \
	VPADDD       Y0, Y8, Y8        \
	VPMADDUBSW   XOFF+32(R8), Y1, Y1 \
	VPSHUFB      ·q4kWordSel+(16*SOFF+32)(SB), Y11, Y3 \
	VPMADDWD     Y3, Y1, Y1        \
	VPADDD       Y1, Y8, Y8

// func q5kRows(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb int)
TEXT ·q5kRows(SB), NOSPLIT, $0-64
	ROWARGS
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	MOVL         $0x10101010, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14

row:
	ROWHEAD

sb:
	PREFETCHT0 1024(SI)
	PREFETCHT0 1088(SI)
	PREFETCHT0 1152(SI)
	Q4KSCALES
	Q4KVECS(Y11, Y13)
	VMOVDQU 16(SI), Y12 // qh

	VPXOR Y8, Y8, Y8
	Q5KCHUNK(48, 0, 0, VPSLLW, 4, VPSLLW, 3)
	Q5KCHUNK(80, 64, 4, VPSLLW, 2, VPSLLW, 1)
	Q5KCHUNK(112, 128, 8, VPSRLW, 0, VPSRLW, 1)
	Q5KCHUNK(144, 192, 12, VPSRLW, 2, VPSRLW, 3)
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
	ADDQ         $176, SI
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
