//go:build amd64 && !noasm

#include "textflag.h"
#include "asm_amd64.h"

// AVX-512 decode row kernels: one token against n consecutive weight rows,
// the loop over rows in assembly. Each computes, per (row, token), exactly
// the float operations of dot_ref.go in the same order (the AVX2 kernels'
// order); only the exact integer block sums use wider vectors and the VNNI
// instructions (VPDPBUSD: u8×s8 groups of four into int32; VPDPWSSD:
// int16 pairs × int16 into int32), so results are bit-equal to the
// reference and to AVX2.
//
//   - q40RowsZ: rows i and i+rows/2 together (two FMA chains on two long
//     streams), two 32-value blocks per 512-bit integer step; the
//     eight-lane float FMAs of the two blocks stay one after the other.
//   - q4kRowsZ: 256-bit, scales decoded with vector shifts and applied by
//     VPDPWSSD with an embedded broadcast (a load, not a shuffle).
//
// Q8_0 has no kernel here: its order is one accumulator per output, and
// the packed kernels (q8p_amd64.s, q8p_avx512_amd64.s) serve it. Q6_K's is
// in q6k_avx512_amd64.s.
//
// 256-bit code where it is as short: CPUs that run 512-bit work on two
// fused 256-bit ports lose the third vector port while any is in flight.
// F16's are in f16p_avx512_amd64.s, on a packed copy.
//
// Why so few rows at once: each row in flight is a weight stream, and on
// Zen 4 (the 2-vCPU host of issue 12) the hardware prefetchers keep up with
// one or two long streams per core but not with more, nor with two
// interleaved rows next to each other. Measured on the 1B-shape decode
// (bench kernels, same-run avx2 set as the yardstick): Q8_0 two adjacent
// rows 19.6 tok/s, two halves 22.6, one row 27.9 (avx2 27.9); F16 eight
// rows 9.6, four quarters 11.3, two halves 12.6–13.4 (avx2's four
// adjacent rows 10.1–11.1).

// PFD is how far ahead (bytes) the row kernels prefetch their weights:
// measured on the 1B-shape streams (BenchmarkDecodeRows, one thread),
// Q4_K went 6.5 → 8.9 GB/cpu-s from 1 KiB to 4 KiB and no further at
// 8–16 KiB. Prefetches never fault past the matrix's end.
#define PFD 4096

// Q4_K, four tokens per pass (q4kRows4Z): a super-block's nibbles (Y0..Y7,
// groups 0..7) and scales are decoded once and met by each token in turn.
// Per token the operations are q4kRowsZ's, so a token's result does not
// depend on the tile that computed it.

// Q4KT(XQ, XD, BS, ACC, ACCM): one token against the decoded super-block:
// XQ/XD/BS address its 256 activations, scale and 16 sums; ACC (Y) and
// ACCM (X) are its float accumulators.
#define Q4KT(XQ, XD, BS, ACC, ACCM) \
	VPXOR         Y9, Y9, Y9             \
	VPXOR         Y10, Y10, Y10          \
	VPMADDUBSW    0 XQ, Y0, Y8           \
	VPDPWSSD.BCST 0(SP), Y8, Y9          \
	VPMADDUBSW    32 XQ, Y1, Y11         \
	VPDPWSSD.BCST 4(SP), Y11, Y10        \
	VPMADDUBSW    64 XQ, Y2, Y8          \
	VPDPWSSD.BCST 8(SP), Y8, Y9          \
	VPMADDUBSW    96 XQ, Y3, Y11         \
	VPDPWSSD.BCST 12(SP), Y11, Y10       \
	VPMADDUBSW    128 XQ, Y4, Y8         \
	VPDPWSSD.BCST 32(SP), Y8, Y9         \
	VPMADDUBSW    160 XQ, Y5, Y11        \
	VPDPWSSD.BCST 36(SP), Y11, Y10       \
	VPMADDUBSW    192 XQ, Y6, Y8         \
	VPDPWSSD.BCST 40(SP), Y8, Y9         \
	VPMADDUBSW    224 XQ, Y7, Y11        \
	VPDPWSSD.BCST 44(SP), Y11, Y10       \
	VPADDD        Y10, Y9, Y9            \
	VCVTDQ2PS     Y9, Y9                 \
	VBROADCASTSS  XD, X20                \
	VMULPS        X20, X14, X21          \
	VBROADCASTSS  X21, Y22               \
	VFMADD231PS   Y22, Y9, ACC           \
	VPMADDWD      BS, Y13, Y24           \
	VEXTRACTI32X4 $1, Y24, X25           \
	VPADDD        X25, X24, X24          \
	VPSHUFD       $0x4e, X24, X25        \
	VPADDD        X25, X24, X24          \
	VPSHUFD       $0xb1, X24, X25        \
	VPADDD        X25, X24, X24          \
	VCVTDQ2PS     X24, X24               \
	VMOVSHDUP     X21, X25               \
	VFMADD231SS   X25, X24, ACCM

// Q4KNIB(OFF, LO, HI): the low and high nibbles of 32 bytes at OFF(SI).
#define Q4KNIB(OFF, LO, HI) \
	VMOVDQU OFF(SI), LO  \
	VPSRLW  $4, LO, HI   \
	VPAND   Y15, LO, LO  \
	VPAND   Y15, HI, HI

// HSUMOUT(ACC, ACCM, OFF): token result hsum(ACC) − ACCM to OFF(DI).
#define HSUMOUT(ACC, ACCM, OFF) \
	VMOVAPS ACC, Y0          \
	HSUM8(Y0, X0, X1)        \
	VSUBSS  ACCM, X0, X0     \
	MOVSS   X0, OFF(DI)

// Q40BLK2(W, ACC): the two Q4_0 blocks at W (18-byte stride) against the
// activation pair in Z20: the unsigned nibbles u go through VPDPBUSD with x,
// onto Z21 = −Σ8x per lane, giving Σ(u−8)·x exactly; the block scales in
// Y22, Y23 (d_x) are multiplied by the row's d_w and ACC (Y) takes both
// eight-lane FMAs in order. Z29 = 0x0f bytes.
#define Q40BLK2(W, ACC) \
	VMOVDQU      2(W), X0             \
	VINSERTI128  $1, 20(W), Y0, Y0    \
	VPSRLW       $4, Y0, Y1           \
	VINSERTI64X4 $1, Y1, Z0, Z0       \
	VSHUFI64X2   $0xd8, Z0, Z0, Z0    \
	VPANDD       Z29, Z0, Z0          \
	VMOVDQA64    Z21, Z4              \
	VPDPBUSD     Z20, Z0, Z4          \
	VCVTDQ2PS    Z4, Z4               \
	VPBROADCASTW (W), X5              \
	VCVTPH2PS    X5, Y5               \
	VMULPS       Y22, Y5, Y5          \
	VPBROADCASTW 18(W), X6            \
	VCVTPH2PS    X6, Y6               \
	VMULPS       Y23, Y6, Y6          \
	VFMADD231PS  Y5, Y4, ACC          \
	VEXTRACTF64X4 $1, Z4, Y4          \
	VFMADD231PS  Y6, Y4, ACC

#define Q40BLK1(W, ACC) \
	VMOVDQU      2(W), X0             \
	VPSRLW       $4, X0, X1           \
	VINSERTI128  $1, X1, Y0, Y0       \
	VPANDD       Y29, Y0, Y0          \
	VMOVDQA64    Y21, Y4              \
	VPDPBUSD     Y20, Y0, Y4          \
	VCVTDQ2PS    Y4, Y4               \
	VPBROADCASTW (W), X5              \
	VCVTPH2PS    X5, Y5               \
	VMULPS       Y22, Y5, Y5          \
	VFMADD231PS  Y5, Y4, ACC

// Per-step activation set-up of Q4_0: Z20 = x, Z21 = −Σ 8·x per four-value
// lane (Z28 = 8 bytes, Z31 = 0).
#define XQ40_2 \
	VMOVDQU64    (R8), Z20            \
	VPXORD       Z30, Z30, Z30        \
	VPDPBUSD     Z20, Z28, Z30        \
	VPSUBD       Z30, Z31, Z21        \
	VBROADCASTSS (DX), Y22            \
	VBROADCASTSS 4(DX), Y23

#define XQ40_1 \
	VMOVDQU64    (R8), Y20            \
	VPXORD       Y30, Y30, Y30        \
	VPDPBUSD     Y20, Y28, Y30        \
	VPSUBD       Y30, Y31, Y21        \
	VBROADCASTSS (DX), Y22

// ROWS32(NAME, BB, XS2, XS1, BLK2, BLK1): the row loop of the 32-value
// block kernels; BB is the block size in bytes.
// func NAME(w *byte, rowBytes, rows int, xq *int8, xd *float32, nb int, out *float32)
#define ROWS32(NAME, BB, XS2, XS1, BLK2, BLK1) \
TEXT NAME(SB), NOSPLIT, $0-56 \
	MOVQ  w+0(FP), DI            \
	MOVQ  rowBytes+8(FP), R9     \
	MOVQ  rows+16(FP), BX        \
	MOVQ  out+48(FP), R13        \
	MOVL  $0x0f0f0f0f, AX        \
	VPBROADCASTD AX, Z29         \
	MOVL  $0x08080808, AX        \
	VPBROADCASTD AX, Z28         \
	VPXORD Z31, Z31, Z31         \
	MOVQ  BX, R10                \
	SHRQ  $1, R10                \
	JZ    single                 \
	MOVQ  R10, R11               \
	IMULQ R9, R11                \
	MOVQ  R10, R12               \
pair:                            \
	MOVQ  DI, SI                 \
	LEAQ  (DI)(R11*1), R14       \
	MOVQ  xq+24(FP), R8          \
	MOVQ  xd+32(FP), DX          \
	MOVQ  nb+40(FP), CX          \
	VXORPS Y8, Y8, Y8            \
	VXORPS Y9, Y9, Y9            \
	SHRQ  $1, CX                 \
	JZ    pairtail               \
pairblk:                         \
	PREFETCHT0 PFD(SI)           \
	PREFETCHT0 PFD(R14)          \
	XS2                          \
	BLK2(SI, Y8)                 \
	BLK2(R14, Y9)                \
	ADDQ  $(2*BB), SI            \
	ADDQ  $(2*BB), R14           \
	ADDQ  $64, R8                \
	ADDQ  $8, DX                 \
	DECQ  CX                     \
	JNZ   pairblk                \
pairtail:                        \
	TESTQ $1, nb+40(FP)          \
	JZ    pairdone               \
	XS1                          \
	BLK1(SI, Y8)                 \
	BLK1(R14, Y9)                \
pairdone:                        \
	HSUM8(Y8, X8, X0)            \
	HSUM8(Y9, X9, X0)            \
	MOVSS X8, (R13)              \
	MOVSS X9, (R13)(R10*4)       \
	ADDQ  $4, R13                \
	ADDQ  R9, DI                 \
	DECQ  R12                    \
	JNZ   pair                   \
	LEAQ  (DI)(R11*1), DI        \
	LEAQ  (R13)(R10*4), R13      \
	ANDQ  $1, BX                 \
single:                          \
	TESTQ BX, BX                 \
	JZ    done                   \
	MOVQ  DI, SI                 \
	MOVQ  xq+24(FP), R8          \
	MOVQ  xd+32(FP), DX          \
	MOVQ  nb+40(FP), CX          \
	VXORPS Y8, Y8, Y8            \
	SHRQ  $1, CX                 \
	JZ    singletail             \
singleblk:                       \
	XS2                          \
	BLK2(SI, Y8)                 \
	ADDQ  $(2*BB), SI            \
	ADDQ  $64, R8                \
	ADDQ  $8, DX                 \
	DECQ  CX                     \
	JNZ   singleblk              \
singletail:                      \
	TESTQ $1, nb+40(FP)          \
	JZ    singledone             \
	XS1                          \
	BLK1(SI, Y8)                 \
singledone:                      \
	HSUM8(Y8, X8, X0)            \
	MOVSS X8, (R13)              \
done:                            \
	VZEROUPPER                   \
	RET

ROWS32(·q40RowsZ, 18, XQ40_2, XQ40_1, Q40BLK2, Q40BLK1)

// Q4KY(P, OFF, XOFF, S0, S1): 32 bytes of nibbles at OFF(P) (sub-block 2c
// low, 2c+1 high) against 64 activations at XOFF(R8); the sub-blocks'
// scales are the dword pairs (sc, sc) at S0(SP), S1(SP), broadcast by
// VPDPWSSD itself (a load, no shuffle). Y8/Y11 collect the low/high
// sub-blocks' lanes.
#define Q4KY(P, OFF, XOFF, S0, S1) \
	VMOVDQU          OFF(P), Y0          \
	VPSRLW           $4, Y0, Y1          \
	VPAND            Y15, Y0, Y0         \
	VPAND            Y15, Y1, Y1         \
	VPMADDUBSW       XOFF(R8), Y0, Y0    \
	VPMADDUBSW       XOFF+32(R8), Y1, Y1 \
	VPDPWSSD.BCST    S0(SP), Y0, Y8      \
	VPDPWSSD.BCST    S1(SP), Y1, Y11

// Q4KSB(P, S, ACC, ACCM): one token against the Q4_K super-block at (P):
// its 12 scale bytes decoded with vector shifts and masks (kQ4KScl), the
// eight (scale, min) pairs stored as dword pairs at S(SP) (scales 0..3,
// mins 0..3) and S+32(SP) (4..7); the sums into the float accumulators
// ACC (Y) and ACCM (X). q4kRows2Z reuses the integer registers for each
// row in turn.
#define Q4KSB(P, S, ACC, ACCM) \
	PREFETCHT0      PFD(P)                 \
	PREFETCHT0      (PFD+64)(P)            \
	PREFETCHT0      (PFD+128)(P)           \
	VMOVDQU         4(P), X0               \
	VPSHUFD         $0x98, X0, X1          \
	VPSHUFD         $0x50, X0, X2          \
	VPSRLVD         0(AX), X1, X1          \
	VPSRLVD         16(AX), X2, X2         \
	VPAND           32(AX), X1, X1         \
	VPAND           48(AX), X2, X2         \
	VPOR            X2, X1, X0             \
	VPMOVZXBW       X0, Y1                 \
	VPUNPCKLWD      Y1, Y1, Y2             \
	VPUNPCKHWD      Y1, Y1, Y3             \
	VMOVDQU         Y2, S(SP)              \
	VMOVDQU         Y3, (S+32)(SP)         \
	VPERM2I128      $0x31, Y3, Y2, Y13     \
	VPXOR           Y8, Y8, Y8             \
	VPXOR           Y11, Y11, Y11          \
	Q4KY(P, 16, 0, S, (S+4))               \
	Q4KY(P, 48, 64, (S+8), (S+12))         \
	Q4KY(P, 80, 128, (S+32), (S+36))       \
	Q4KY(P, 112, 192, (S+40), (S+44))      \
	VPADDD          Y11, Y8, Y8            \
	VCVTDQ2PS       Y8, Y8                 \
	VBROADCASTSS    (DX), X4               \
	VCVTPH2PS       (P), X5                \
	VMULPS          X4, X5, X5             \
	VBROADCASTSS    X5, Y7                 \
	VFMADD231PS     Y7, Y8, ACC            \
	MTERMR                                 \
	VMOVSHDUP       X5, X7                 \
	VFMADD231SS     X7, X6, ACCM

// Q4KCONST loads Q4KSB's constants: the nibble mask in Y15, kQ4KScl's
// address in AX.
#define Q4KCONST \
	MOVL         $0x0f0f0f0f, AX \
	VMOVD        AX, X15         \
	VPBROADCASTD X15, Y15        \
	LEAQ         ·kQ4KScl(SB), AX

// Q4KOUT(ACC, X, ACCM, DST): a row's result, hsum8(ACC) − ACCM (X is
// ACC's lower half), to DST.
#define Q4KOUT(ACC, X, ACCM, DST) \
	HSUM8(ACC, X, X0) \
	VSUBSS ACCM, X, X \
	MOVSS  X, DST

// func q4kRowsZ(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb int)
// 256-bit only: on CPUs that fuse two 256-bit ports for 512-bit work this
// keeps all three vector ports. A super-block is Q4KSB, its scales at 0(SP).
TEXT ·q4kRowsZ(SB), NOSPLIT, $64-64
	ROWARGS
	Q4KCONST

row:
	ROWHEAD

sb:
	Q4KSB(SI, 0, Y9, X10)
	ADDQ         $144, SI
	ADDQ         $256, R8
	ADDQ         $4, DX
	ADDQ         $32, R9
	DECQ         CX
	JNZ          sb

	Q4KOUT(Y9, X9, X10, (DI))
	ADDQ   $4, DI
	ADDQ   rowBytes+16(FP), R10
	DECQ   R11
	JNZ    row
	VZEROUPPER
	RET

// func q4kRows4Z(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb, outStride int)
// Four tokens: token t's activations at xq + t×256×nsb, xd + t×4×nsb,
// bs + t×32×nsb (bytes; the activation layout), its result for row i at
// out + t×outStride + 4i.
TEXT ·q4kRows4Z(SB), NOSPLIT, $64-72
	ROWARGS
	MOVQ         nsb+56(FP), R12
	MOVQ         R12, R13
	MOVQ         R12, R14
	SHLQ         $8, R12 // xq stride
	SHLQ         $2, R13 // xd stride
	SHLQ         $5, R14 // bs stride
	Q4KCONST
	VMOVDQU      0(AX), X12
	VMOVDQU32    16(AX), X23
	VMOVDQU32    32(AX), X30
	VMOVDQU32    48(AX), X31

row4:
	MOVQ   R10, SI
	MOVQ   xq+32(FP), R8
	MOVQ   xd+40(FP), DX
	MOVQ   bs+48(FP), R9
	MOVQ   nsb+56(FP), CX
	VPXORD Y16, Y16, Y16
	VPXORD Y17, Y17, Y17
	VPXORD Y18, Y18, Y18
	VPXORD Y19, Y19, Y19
	VPXORD X26, X26, X26
	VPXORD X27, X27, X27
	VPXORD X28, X28, X28
	VPXORD X29, X29, X29

sb4:
	PREFETCHT0 PFD(SI)
	PREFETCHT0 (PFD+64)(SI)
	PREFETCHT0 (PFD+128)(SI)
	VMOVDQU    4(SI), X0
	VPSHUFD    $0x98, X0, X1
	VPSHUFD    $0x50, X0, X2
	VPSRLVD    X12, X1, X1
	VPSRLVD    X23, X2, X2
	VPANDD     X30, X1, X1
	VPANDD     X31, X2, X2
	VPOR       X2, X1, X0
	VPMOVZXBW  X0, Y1
	VPUNPCKLWD Y1, Y1, Y2
	VPUNPCKHWD Y1, Y1, Y3
	VMOVDQU    Y2, 0(SP)
	VMOVDQU    Y3, 32(SP)
	VPERM2I128 $0x31, Y3, Y2, Y13
	VCVTPH2PS  (SI), X14 // d, dmin
	Q4KNIB(16, Y0, Y1)
	Q4KNIB(48, Y2, Y3)
	Q4KNIB(80, Y4, Y5)
	Q4KNIB(112, Y6, Y7)

	Q4KT((R8), (DX), (R9), Y16, X26)
	Q4KT((R8)(R12*1), (DX)(R13*1), (R9)(R14*1), Y17, X27)
	Q4KT((R8)(R12*2), (DX)(R13*2), (R9)(R14*2), Y18, X28)
	LEAQ (R8)(R12*2), AX
	LEAQ (DX)(R13*2), BX
	LEAQ (R9)(R14*2), R15
	Q4KT((AX)(R12*1), (BX)(R13*1), (R15)(R14*1), Y19, X29)
	ADDQ $144, SI
	ADDQ $256, R8
	ADDQ $4, DX
	ADDQ $32, R9
	DECQ CX
	JNZ  sb4

	MOVQ    outStride+64(FP), AX
	HSUMOUT(Y16, X26, 0)
	ADDQ    AX, DI
	HSUMOUT(Y17, X27, 0)
	ADDQ    AX, DI
	HSUMOUT(Y18, X28, 0)
	ADDQ    AX, DI
	HSUMOUT(Y19, X29, 0)
	IMUL3Q  $3, AX, AX
	SUBQ    AX, DI
	ADDQ    $4, DI
	ADDQ    rowBytes+16(FP), R10
	DECQ    R11
	JNZ     row4
	VZEROUPPER
	RET

// func q4kRows2Z(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb, h int)
// Rows i and h+i for i in [0, n), one super-block of each in turn, into
// out[i] and out[h+i]: q4kRowsZ's operations per row, two rows in flight
// and no call per row (kRowsStreams' two streams).
TEXT ·q4kRows2Z(SB), NOSPLIT, $128-72
	ROWARGS
	Q4KCONST
	MOVQ         h+64(FP), R12
	MOVQ         R12, R13
	IMULQ        rowBytes+16(FP), R12 // h rows of weights
	SHLQ         $2, R13              // h outputs

row2:
	ROWHEAD
	LEAQ   (R10)(R12*1), BX
	VXORPS Y12, Y12, Y12
	VXORPS X14, X14, X14

sb2:
	Q4KSB(SI, 0, Y9, X10)
	Q4KSB(BX, 64, Y12, X14)
	ADDQ $144, SI
	ADDQ $144, BX
	ADDQ $256, R8
	ADDQ $4, DX
	ADDQ $32, R9
	DECQ CX
	JNZ  sb2

	Q4KOUT(Y9, X9, X10, (DI))
	Q4KOUT(Y12, X12, X14, (DI)(R13*1))
	ADDQ   $4, DI
	ADDQ   rowBytes+16(FP), R10
	DECQ   R11
	JNZ    row2
	VZEROUPPER
	RET
