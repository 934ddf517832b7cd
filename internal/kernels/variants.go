package kernels

import "fmt"

// Variants names the row kernels MatMul uses per weight type on this CPU,
// for benchmark reports ("which kernel ran").
func Variants() string {
	if impl.name == refKernels.name {
		return "pure-Go reference kernels"
	}
	return variantsAsm() + fmt.Sprintf("; one-token Q4_K/Q6_K/F16 rows in %d weight stream(s) per thread", rowStreams)
}

func variantsAsm() string {
	switch impl.name {
	case "avx512":
		return gemmVariant() + "AVX-512 VNNI decode rows (1-token q40RowsZ, q4kRowsZ ≤16 tokens (two streams in one call: q4kRows2Z), Q6_K q6kRows4Z four tokens per pass and 1-token q6kRowsZ); AVX-512 F16 rows below 4 tokens on a packed 4-row copy (f16pDot1Z one stream, f16pDot2Z two); " +
			"Q8_0 four tokens at a time with AVX-512 VNNI on two packed groups (q8pDot4Z); " +
			"AVX2 for token tiles, Q8_0 one token (packed 8-row q8pDot1) and odd groups (q8pDot4), F16/BF16/F32 unpacked rows (two-stream halves, f16DotHalves) and the other types"
	}
	return gemmVariant() + "Q4_K/Q6_K: q4kRows/q6kRows, four tokens per pass (q4kRows4/q6kRows4) up to 16, " +
		"unpacked above (two rows x four tokens: kDotU24, Q6_K kDotU264); Q8_0: packed 8-row kernels (8 rows x 4 tokens prefill, 16 rows x 1 decode); Q4_0: q8 asm tiles (1x8 prefill); Q4_1/Q5_0/Q5_1/IQ4_NL: fused row kernels per token; " +
		"Q2_K/Q3_K/Q5_K/IQ4_XS: fused row kernels per token; F16/BF16/F32: two-stream decode rows, 3x4/2x4 prefill tiles"
}
