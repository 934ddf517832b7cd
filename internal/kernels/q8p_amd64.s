//go:build amd64 && !noasm

#include "textflag.h"
#include "asm_amd64.h"

#define q8pBlockBytes 272
// QPFD is how far ahead (bytes) the kernels prefetch each of their weight
// streams, as the K-quant rows do: on a Zen 5 host reading 40-65 GB/s, the
// hardware prefetchers alone left q8pDot1 at 32-40 GB/s from memory on two
// threads, prefetching 2 or 4 KiB ahead 52-58 (BenchmarkDecodeSplit/Q8_0).
#define QPFD 4096

// QPF5 prefetches the five lines of the packed block at SI, QPFD ahead;
// QPF5R11 those of the block at SI+R11 (q8pDot1's second stream).
#define QPF5 \
	PREFETCHT0 QPFD(SI)       \
	PREFETCHT0 (QPFD+64)(SI)  \
	PREFETCHT0 (QPFD+128)(SI) \
	PREFETCHT0 (QPFD+192)(SI) \
	PREFETCHT0 (QPFD+256)(SI)

#define QPF5R11 \
	PREFETCHT0 QPFD(SI)(R11*1)       \
	PREFETCHT0 (QPFD+64)(SI)(R11*1)  \
	PREFETCHT0 (QPFD+128)(SI)(R11*1) \
	PREFETCHT0 (QPFD+192)(SI)(R11*1) \
	PREFETCHT0 (QPFD+256)(SI)(R11*1)

// The Q8_0 row kernels on packed rows (q8pack.go): eight rows per vector
// lane set, dotQ8Ref's operations for each (row, token).
//
// Per block: Y14 = the eight rows' scales d_w (exact F16 → F32); for each
// of the eight quant dwords k, Y13 = the rows' bytes, Y12 = their absolute
// values, and per token the activation dword k broadcast, signed by the
// weights (VPSIGNB), multiplied and pair-summed (VPMADDUBSW, VPMADDWD by
// ones) and added into the token's integer sums: exact, so the order of
// the adds does not matter. Then per token the sums are converted and
// fused into the accumulator with d_w×d_x (VMULPS: the product dotQ8Ref
// rounds).

// Q8PTOK(XQ, ISUM, T): one token's step for quant dword k (XQ its address).
#define Q8PTOK(XQ, ISUM, T) \
	VPBROADCASTD XQ, T         \
	VPSIGNB      Y13, T, T     \
	VPMADDUBSW   T, Y12, T     \
	VPMADDWD     Y15, T, T     \
	VPADDD       T, ISUM, ISUM

// Q8PW(K): load the rows' quant dword K of the block at SI.
#define Q8PW(K) \
	VMOVDQU (16+32*K)(SI), Y13 \
	VPABSB  Y13, Y12

// Q8PFIN(XD, ISUM, ACC): acc += float(isum) × (d_w × d_x); isum = 0.
#define Q8PFIN(XD, ISUM, ACC) \
	VCVTDQ2PS    ISUM, ISUM      \
	VBROADCASTSS XD, Y8          \
	VMULPS       Y14, Y8, Y8     \
	VFMADD231PS  Y8, ISUM, ACC   \
	VPXOR        ISUM, ISUM, ISUM

#define Q8PK4(K) \
	Q8PW(K) \
	Q8PTOK((4*K)(R8), Y4, Y8)          \
	Q8PTOK((4*K)(R8)(R9*1), Y5, Y9)    \
	Q8PTOK((4*K)(R8)(R9*2), Y6, Y10)   \
	Q8PTOK((4*K)(R8)(R10*1), Y7, Y11)

// func q8pDot4(w *byte, groups, nb int, xq *int8, cols int, xd *float32, out *float32, rows int)
// Four tokens (xq + t*cols, xd + t*nb) against groups consecutive packed
// groups from w: out[t*rows + 8i + j] is row 8i+j of the first group's
// matrix rows, token t.
TEXT ·q8pDot4(SB), NOSPLIT, $0-64
	ONES16(Y15)
	MOVQ w+0(FP), SI
	MOVQ groups+8(FP), CX
	MOVQ xq+24(FP), AX
	MOVQ cols+32(FP), R9
	MOVQ xd+40(FP), R15
	MOVQ out+48(FP), DI
	MOVQ rows+56(FP), R13
	MOVQ nb+16(FP), R11
	SHLQ $2, R11                 // xd stride in bytes
	LEAQ (R11)(R11*2), R12
	LEAQ (R9)(R9*2), R10
	SHLQ $2, R13                 // out stride in bytes
	LEAQ (R13)(R13*2), R14

group4:
	MOVQ nb+16(FP), BX
	MOVQ AX, R8
	MOVQ R15, DX
	VZERO4(Y0, Y1, Y2, Y3)
	VZERO4(Y4, Y5, Y6, Y7)

block4:
	QPF5
	VCVTPH2PS (SI), Y14
	Q8PK4(0)
	Q8PK4(1)
	Q8PK4(2)
	Q8PK4(3)
	Q8PK4(4)
	Q8PK4(5)
	Q8PK4(6)
	Q8PK4(7)
	Q8PFIN((DX), Y4, Y0)
	Q8PFIN((DX)(R11*1), Y5, Y1)
	Q8PFIN((DX)(R11*2), Y6, Y2)
	Q8PFIN((DX)(R12*1), Y7, Y3)
	ADDQ $q8pBlockBytes, SI
	ADDQ $32, R8
	ADDQ $4, DX
	DECQ BX
	JNZ  block4

	VMOVUPS Y0, (DI)
	VMOVUPS Y1, (DI)(R13*1)
	VMOVUPS Y2, (DI)(R13*2)
	VMOVUPS Y3, (DI)(R14*1)
	ADDQ $32, DI
	DECQ CX
	JNZ  group4
	VZEROUPPER
	RET

#define Q8PK1(K) \
	Q8PW(K) \
	Q8PTOK((4*K)(R8), Y4, Y8)

// Q8PK2(K): quant dword K of two groups' blocks (SI and SI+R11), one
// broadcast for both.
#define Q8PK2(K) \
	VPBROADCASTD (4*K)(R8), Y10      \
	VMOVDQU (16+32*K)(SI), Y13       \
	VMOVDQU (16+32*K)(SI)(R11*1), Y11 \
	VPSIGNB      Y13, Y10, Y8        \
	VPSIGNB      Y11, Y10, Y9        \
	VPABSB       Y13, Y13            \
	VPABSB       Y11, Y11            \
	VPMADDUBSW   Y8, Y13, Y8         \
	VPMADDUBSW   Y9, Y11, Y9         \
	VPMADDWD     Y15, Y8, Y8         \
	VPMADDWD     Y15, Y9, Y9         \
	VPADDD       Y8, Y4, Y4          \
	VPADDD       Y9, Y5, Y5

// func q8pDot1(w *byte, groups, nb int, xq *int8, xd *float32, out *float32)
// One token against groups consecutive packed groups: out[8i + j]. The
// first and second halves go in pairs, group i with group i+half (two
// streams far apart, one broadcast per dword for both); an odd last group
// goes alone. Pairing neighbours instead, 4.9 KB apart on 576-column
// rows, ran at 0.8 of one group at a time from memory.
TEXT ·q8pDot1(SB), NOSPLIT, $0-48
	ONES16(Y15)
	MOVQ w+0(FP), SI
	MOVQ groups+8(FP), CX
	MOVQ xq+24(FP), AX
	MOVQ xd+32(FP), R15
	MOVQ out+40(FP), DI
	MOVQ CX, R13
	SHRQ $1, R13                  // pairs
	JZ   group1
	MOVQ nb+16(FP), R11
	IMULQ $q8pBlockBytes, R11
	IMULQ R13, R11                // half the groups' bytes
	MOVQ R13, R12
	SHLQ $5, R12                  // half the groups' outputs, in bytes
	MOVQ R13, R14

group2:
	MOVQ nb+16(FP), BX
	MOVQ AX, R8
	MOVQ R15, DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VPXOR  Y4, Y4, Y4
	VPXOR  Y5, Y5, Y5

block2:
	QPF5
	QPF5R11
	Q8PK2(0)
	Q8PK2(1)
	Q8PK2(2)
	Q8PK2(3)
	Q8PK2(4)
	Q8PK2(5)
	Q8PK2(6)
	Q8PK2(7)
	VBROADCASTSS (DX), Y12
	VCVTPH2PS    (SI), Y14
	VCVTPH2PS    (SI)(R11*1), Y13
	VMULPS       Y14, Y12, Y14
	VMULPS       Y13, Y12, Y13
	VCVTDQ2PS    Y4, Y4
	VCVTDQ2PS    Y5, Y5
	VFMADD231PS  Y14, Y4, Y0
	VFMADD231PS  Y13, Y5, Y1
	VPXOR        Y4, Y4, Y4
	VPXOR        Y5, Y5, Y5
	ADDQ $q8pBlockBytes, SI
	ADDQ $32, R8
	ADDQ $4, DX
	DECQ BX
	JNZ  block2

	VMOVUPS Y0, (DI)
	VMOVUPS Y1, (DI)(R12*1)
	ADDQ $32, DI
	DECQ R14
	JNZ  group2
	ADDQ R11, SI                  // past the second half
	ADDQ R12, DI
	ANDQ $1, CX
	JZ   done1

group1:
	MOVQ nb+16(FP), BX
	MOVQ AX, R8
	MOVQ R15, DX
	VXORPS Y0, Y0, Y0
	VPXOR  Y4, Y4, Y4

block1:
	QPF5
	VCVTPH2PS (SI), Y14
	Q8PK1(0)
	Q8PK1(1)
	Q8PK1(2)
	Q8PK1(3)
	Q8PK1(4)
	Q8PK1(5)
	Q8PK1(6)
	Q8PK1(7)
	Q8PFIN((DX), Y4, Y0)
	ADDQ $q8pBlockBytes, SI
	ADDQ $32, R8
	ADDQ $4, DX
	DECQ BX
	JNZ  block1

	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	DECQ CX
	JNZ  group1

done1:
	VZEROUPPER
	RET
