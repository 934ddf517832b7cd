//go:build amd64 && !noasm

package kernels

//go:noescape
func quantizeQ8AVX(x *float32, q *int8, d *float32, nb int)

// permPack restores element order after the in-lane int32→int8 packs.
var permPack = [8]uint32{0, 4, 1, 5, 2, 6, 3, 7}

// quantizeBlocks uses the assembly for 32-value blocks; K-quant blocks of 256
// go through the Go code.
func quantizeBlocks(block int, x []float32, qs []int8, d []float32) {
	if block == 32 && len(x) >= 32 {
		quantizeQ8AVX(&x[0], &qs[0], &d[0], len(x)/32)
		return
	}
	quantizeBlocksRef(block, x, qs, d)
}
