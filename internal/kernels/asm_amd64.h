// Macros shared by the kernels' assembly files (#include "asm_amd64.h").

// HSUM8 adds Y's eight float lanes into X's lowest one in dotFloatRef's
// (and every reference's) hsum8 order: halves, then pairs, then the last
// two. TX is clobbered.
#define HSUM8(Y, X, TX) \
	VEXTRACTF128 $1, Y, TX \
	VADDPS       TX, X, X  \
	VMOVHLPS     X, X, TX  \
	VADDPS       TX, X, X  \
	VMOVSHDUP    X, TX     \
	VADDSS       TX, X, X

// MINSUMS4(MIN): the K-quant four-token kernels' min sums, X4 lane t =
// float(Σ_k MIN[k]·bs_t[k]) over token t's 16 activation sums at (R9) +
// t·R14 (exact integers, so the pairing order is free). Clobbers Y5..Y7
// and DI.
#define MINSUMS4(MIN) \
	LEAQ         (R14)(R14*2), DI     \
	VPMADDWD     (R9), MIN, Y4        \
	VPMADDWD     (R9)(R14*1), MIN, Y5 \
	VPMADDWD     (R9)(R14*2), MIN, Y6 \
	VPMADDWD     (R9)(DI*1), MIN, Y7  \
	VPHADDD      Y5, Y4, Y4           \
	VPHADDD      Y7, Y6, Y6           \
	VPHADDD      Y6, Y4, Y4           \
	VEXTRACTI128 $1, Y4, X5           \
	VPADDD       X5, X4, X4           \
	VCVTDQ2PS    X4, X4

// XD4(X): X lane t = token t's activation scale at (DX) + t·R13 (AX =
// 3·R13).
#define XD4(X) \
	VMOVSS    (DX), X                    \
	VINSERTPS $0x10, (DX)(R13*1), X, X   \
	VINSERTPS $0x20, (DX)(R13*2), X, X   \
	VINSERTPS $0x30, (DX)(AX*1), X, X

// MTERMR (the one-token K kernels) leaves M = Σ_k Y13[k]×bs[k] (exact int32) as float32 in X6.
#define MTERMR \
	VPMADDWD     (R9), Y13, Y6  \
	VEXTRACTI128 $1, Y6, X7     \
	VPADDD       X7, X6, X6     \
	VPSHUFD      $0x4e, X6, X7  \
	VPADDD       X7, X6, X6     \
	VPSHUFD      $0xb1, X6, X7  \
	VPADDD       X7, X6, X6     \
	VCVTDQ2PS    X6, X6

// Q4KSCALES decodes the twelve scale bytes at 4(SI) into X0 = [sc03,
// sc47, mn03, mn47], the bytes s0..s7 then m0..m7, with a, m, c the three
// little-endian words: sc03 = a&0x3f…, mn03 = m&0x3f…, sc47 = c&0x0f… |
// (a>>2)&0x30…, mn47 = (c>>4)&0x0f… | (m>>2)&0x30…. In vector registers:
// with the word-by-word scalar decode this kernel ran at half the speed in
// cache (the scalar chain, not the multiplies, bounded it).
#define Q4KSCALES \
	VMOVDQU  4(SI), X0                  \
	VPSHUFD  $0x98, X0, X1              \
	VPSRLVD  ·q4kSclShift(SB), X1, X1   \
	VPAND    ·q4kSclLo(SB), X1, X1      \
	VPSHUFD  $0x40, X0, X2              \
	VPSRLD   $2, X2, X2                 \
	VPAND    ·q4kSclHi(SB), X2, X2      \
	VPOR     X2, X1, X0

// Q4KVECS(SW, MN) widens Q4KSCALES' bytes into SW, the words s0..s7
// in both halves (for the chunks' VPSHUFB of q4kWordSel), and MN, the min
// multipliers of the 16 activation sums (m0, m0, m1, m1, …, m7, m7).
// Q4_K and Q5_K share the scale format. Clobbers X1.
#define Q4KVECS(SW, MN) \
	VPSHUFB   ·q4kSclDup(SB), X0, X1 \
	VPMOVZXBW X1, SW                 \
	VPSHUFB   ·q4kMinDup(SB), X0, X1 \
	VPMOVZXBW X1, MN

// ROWARGS / ROWHEAD: the one-token row kernels' arguments (out, w,
// rowBytes, n, xq, xd, bs, nsb: one signature) and the per-row reset of
// the activation pointers and accumulators. In this header, included
// before any TEXT: vet checks a macro's FP names against the function it
// follows.
#define ROWARGS \
	MOVQ out+0(FP), DI  \
	MOVQ w+8(FP), R10   \
	MOVQ n+24(FP), R11

#define ROWHEAD \
	MOVQ   R10, SI        \
	MOVQ   xq+32(FP), R8  \
	MOVQ   xd+40(FP), DX  \
	MOVQ   bs+48(FP), R9  \
	MOVQ   nsb+56(FP), CX \
	VXORPS Y9, Y9, Y9     \
	VXORPS X10, X10, X10

// VZERO4 zeroes four vector registers (accumulators before a loop).
#define VZERO4(A, B, C, D) \
	VXORPS A, A, A \
	VXORPS B, B, B \
	VXORPS C, C, C \
	VXORPS D, D, D

// ONES16(R) sets R's sixteen words to 1 (VPMADDWD's pair sum); AX and X15
// are clobbered.
#define ONES16(R) \
	MOVL         $0x00010001, AX \
	VMOVD        AX, X15         \
	VPBROADCASTD X15, R
