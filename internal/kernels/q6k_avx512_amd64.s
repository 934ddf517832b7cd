//go:build amd64 && !noasm

#include "textflag.h"
#include "asm_amd64.h"

// PFD6 is how far ahead the kernel prefetches its weights, as PFD.
#define PFD6 4096

// q6kRowsZ: Q6_K rows against one token with 512-bit integer steps. A
// super-block's 256 six-bit values are built 64 at a time, matching 64
// consecutive activations, so each step is one VPMADDUBSW and one VPDPWSSD
// (AVX2's q6kRows needs two of each, and twice the bit work, per 64).
//
// Half n (values 128n..128n+127) has low bits ql = 64 bytes at 64n and
// high bits qh = 32 bytes at 128+32n; for l < 32:
//
//	value 128n+l    = ql[l]&15    | (qh[l]>>0&3)<<4
//	value 128n+32+l = ql[32+l]&15 | (qh[l]>>2&3)<<4
//	value 128n+64+l = ql[l]>>4    | (qh[l]>>4&3)<<4
//	value 128n+96+l = ql[32+l]>>4 | (qh[l]>>6&3)<<4
//
// With qh loaded into both 256-bit halves, the first 64 are ql&15 merged
// with (qh & [03|0c]) << [4|2], the next 64 ql>>4 merged with
// (qh & [30|c0]) >> [0|2] (word shifts of masked bytes, which cannot
// spill into the next byte).
//
// q6kRows4Z does the same for four tokens: a super-block's four value
// vectors (Z0..Z3) and four scale vectors (Z4..Z7) are built once (Q6KZSB)
// and met by each token in turn (Q6KZTOK), so a token's result does not
// depend on the pass that computed it. q6kRowsZ is its one-token case.
//
// The integer lanes: dword i of a step covers values 4i..4i+3 of its 64,
// i.e. lane i mod 8 of group (i < 8 ? first : second) 32; adding the upper
// 256 bits onto the lower after the four steps gives exactly dotKRef's
// eight lanes A[l] (exact integers, so the order of the additions is
// free). The offset, the conversion and the FMA are q6kRows' instructions,
// so results are bit-equal to the reference and to AVX2.

// Q6KZCONST loads the constants both kernels keep in registers (kQ6KZ:
// qh masks Z24/Z25, word shifts Z26/Z27, VPERMW indices Z20..Z23; Z15 the
// 0x0f bytes).
#define Q6KZCONST \
	LEAQ         ·kQ6KZ(SB), AX \
	VMOVDQU64    0(AX), Z24     \
	VMOVDQU64    64(AX), Z25    \
	VMOVDQU64    128(AX), Z26   \
	VMOVDQU64    192(AX), Z27   \
	VMOVDQU64    256(AX), Z20   \
	VMOVDQU64    320(AX), Z21   \
	VMOVDQU64    384(AX), Z22   \
	VMOVDQU64    448(AX), Z23   \
	MOVL         $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Z15

// Q6KZVALS(LOFF, HOFF, A, B): a half's two steps of values into A and B.
#define Q6KZVALS(LOFF, HOFF, A, B) \
	VMOVDQU64       LOFF(SI), Z8        \
	VBROADCASTI64X4 HOFF(SI), Z9        \
	VPANDD          Z24, Z9, A          \
	VPSLLVW         Z26, A, A           \
	VPTERNLOGD      $0xd8, Z15, Z8, A   \
	VPANDD          Z25, Z9, B          \
	VPSRLVW         Z27, B, B           \
	VPSRLW          $4, Z8, Z8          \
	VPTERNLOGD      $0xd8, Z15, Z8, B

// Q6KZSB: the super-block at SI: values Z0..Z3, scale vectors Z4..Z7 (the
// 16 signed scales as words in Z12, VPERMW-spread), offset multipliers
// 32×scale in Y13, d in Y10.
#define Q6KZSB \
	PREFETCHT0   PFD6(SI)       \
	PREFETCHT0   (PFD6+64)(SI)  \
	PREFETCHT0   (PFD6+128)(SI) \
	PREFETCHT0   (PFD6+192)(SI) \
	VPMOVSXBW    192(SI), Y12   \
	VPSLLW       $5, Y12, Y13   \
	Q6KZVALS(0, 128, Z0, Z1)    \
	Q6KZVALS(64, 160, Z2, Z3)   \
	VPERMW       Z12, Z20, Z4   \
	VPERMW       Z12, Z21, Z5   \
	VPERMW       Z12, Z22, Z6   \
	VPERMW       Z12, Z23, Z7   \
	VPBROADCASTW 208(SI), X10   \
	VCVTPH2PS    X10, Y10

// Q6KZTOK(XQ, XD, BS, ACC): one token (activations XQ, scale XD, sums BS)
// into its float lanes ACC (Y): four steps, the upper lanes onto the
// lower, the offset out of the integer lanes, then acc += float(A) × (d × x_d).
#define Q6KZTOK(XQ0, XQ1, XQ2, XQ3, XD, BS, ACC) \
	VPXORD        Z11, Z11, Z11 \
	VPMADDUBSW    XQ0, Z0, Z8   \
	VPDPWSSD      Z4, Z8, Z11   \
	VPMADDUBSW    XQ1, Z1, Z9   \
	VPDPWSSD      Z5, Z9, Z11   \
	VPMADDUBSW    XQ2, Z2, Z8   \
	VPDPWSSD      Z6, Z8, Z11   \
	VPMADDUBSW    XQ3, Z3, Z9   \
	VPDPWSSD      Z7, Z9, Z11   \
	VEXTRACTI64X4 $1, Z11, Y8   \
	VPADDD        Y8, Y11, Y11  \
	VPMADDWD      BS, Y13, Y9   \
	VPSUBD        Y9, Y11, Y11  \
	VCVTDQ2PS     Y11, Y11      \
	VBROADCASTSS  XD, Y9        \
	VMULPS        Y9, Y10, Y9   \
	VFMADD231PS   Y9, Y11, ACC

#define Q6KZTOKAT(B, XD, BS, ACC) \
	Q6KZTOK(0 B, 64 B, 128 B, 192 B, XD, BS, ACC)

// Q6KZNEXT steps to the next super-block and its activations.
#define Q6KZNEXT \
	ADDQ $210, SI \
	ADDQ $256, R8 \
	ADDQ $4, DX   \
	ADDQ $32, R9

// Q6KZOUT(ACC, Y, X, DST): hsum8 of ACC (through Y, a register HSUM8's
// VEX forms can name) to DST.
#define Q6KZOUT(ACC, Y, X, DST) \
	VMOVAPS ACC, Y      \
	HSUM8(Y, X, X4)     \
	MOVSS   X, DST

// func q6kRowsZ(out *float32, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb int)
TEXT ·q6kRowsZ(SB), NOSPLIT, $0-64
	ROWARGS
	Q6KZCONST

row:
	ROWHEAD
	VPXORD Y16, Y16, Y16

sb:
	Q6KZSB
	Q6KZTOKAT((R8), (DX), (R9), Y16)
	Q6KZNEXT
	DECQ CX
	JNZ  sb

	Q6KZOUT(Y16, Y0, X0, (DI))
	ADDQ $4, DI
	ADDQ rowBytes+16(FP), R10
	DECQ R11
	JNZ  row
	VZEROUPPER
	RET

// func q6kRows4Z(out *float32, outStride int, w *byte, rowBytes, n int, xq *int8, xd *float32, bs *int16, nsb, xqStride, xdStride, bsStride int)
TEXT ·q6kRows4Z(SB), NOSPLIT, $0-96
	MOVQ out+0(FP), R15
	MOVQ w+16(FP), R10
	MOVQ n+32(FP), R11
	MOVQ xqStride+72(FP), R12
	MOVQ xdStride+80(FP), R13
	MOVQ bsStride+88(FP), R14
	Q6KZCONST

row4z:
	MOVQ   R10, SI
	MOVQ   xq+40(FP), R8
	MOVQ   xd+48(FP), DX
	MOVQ   bs+56(FP), R9
	MOVQ   nsb+64(FP), CX
	LEAQ   (R12)(R12*2), DI
	LEAQ   (R13)(R13*2), AX
	LEAQ   (R14)(R14*2), BX
	VPXORD Y16, Y16, Y16
	VPXORD Y17, Y17, Y17
	VPXORD Y18, Y18, Y18
	VPXORD Y19, Y19, Y19

sb4z:
	Q6KZSB
	Q6KZTOKAT((R8), (DX), (R9), Y16)
	Q6KZTOKAT((R8)(R12*1), (DX)(R13*1), (R9)(R14*1), Y17)
	Q6KZTOKAT((R8)(R12*2), (DX)(R13*2), (R9)(R14*2), Y18)
	Q6KZTOKAT((R8)(DI*1), (DX)(AX*1), (R9)(BX*1), Y19)
	Q6KZNEXT
	DECQ CX
	JNZ  sb4z

	MOVQ outStride+8(FP), DI
	Q6KZOUT(Y16, Y0, X0, (R15))
	Q6KZOUT(Y17, Y1, X1, (R15)(DI*1))
	Q6KZOUT(Y18, Y2, X2, (R15)(DI*2))
	LEAQ (DI)(DI*2), DI
	Q6KZOUT(Y19, Y3, X3, (R15)(DI*1))
	ADDQ $4, R15
	ADDQ rowBytes+24(FP), R10
	DECQ R11
	JNZ  row4z
	VZEROUPPER
	RET
