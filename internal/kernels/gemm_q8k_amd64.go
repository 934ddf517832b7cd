//go:build amd64 && !noasm

package kernels

import "golang.org/x/sys/cpu"

//go:noescape
func quantizeQ8KAVX512(x *float32, q *int8, d *float32, nblocks int)

//go:noescape
func quantizeQ8KAVX2(x *float32, q *int8, d *float32, nblocks int)

// quantizeQ8KFast is quantizeQ8KBlocks in AVX-512 or AVX2 (the K-quant
// prefill quantizes every token's activations once per MatMul; in Go it
// was ~9% of a 1B Q4_K prefill, 5% on Zen 3 after the AVX2 kernels' other
// gains). Same bits (TestQuantizeQ8KFastEqualsGo runs each variant the CPU
// has).
func quantizeQ8KFast(x []float32, qs []int8, d []float32) {
	n := len(x) / 256
	if n == 0 || !(gemmHasF || q8kHasAVX2) {
		quantizeQ8KBlocks(x, qs, d)
		return
	}
	_, _ = qs[256*n-1], d[n-1]
	if gemmHasF && !q8kForceAVX2 {
		quantizeQ8KAVX512(&x[0], &qs[0], &d[0], n)
		return
	}
	quantizeQ8KAVX2(&x[0], &qs[0], &d[0], n)
}

// q8kHasAVX2 enables the AVX2 quantizer; q8kForceAVX2 makes an AVX-512
// CPU run it too (tests compare both variants with Go).
var (
	q8kHasAVX2   = cpu.X86.HasAVX2
	q8kForceAVX2 = false
)
