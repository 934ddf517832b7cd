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
