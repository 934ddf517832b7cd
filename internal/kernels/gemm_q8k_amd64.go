//go:build amd64 && !noasm

package kernels

//go:noescape
func quantizeQ8KAVX512(x *float32, q *int8, d *float32, nblocks int)

// quantizeQ8KFast is quantizeQ8KBlocks with AVX-512 where present (the
// K-quant prefill quantizes every token's activations once per MatMul;
// in Go it was ~9% of a 1B Q4_K prefill). Same bits
// (TestQuantizeQ8KFastEqualsGo).
func quantizeQ8KFast(x []float32, qs []int8, d []float32) {
	n := len(x) / 256
	if !gemmHasF || n == 0 {
		quantizeQ8KBlocks(x, qs, d)
		return
	}
	_, _ = qs[256*n-1], d[n-1]
	quantizeQ8KAVX512(&x[0], &qs[0], &d[0], n)
}
