//go:build amd64 && !noasm

package kernels

//go:noescape
func quantizeQ8AVX(x *float32, q *int8, d *float32, nb int)

// permPack restores element order after the in-lane int32→int8 packs.
var permPack = [8]uint32{0, 4, 1, 5, 2, 6, 3, 7}

// quantizeBlocks quantizes 32-value blocks with the assembly.
func quantizeBlocks(x []float32, qs []int8, d []float32) {
	if len(x) >= 32 {
		quantizeQ8AVX(&x[0], &qs[0], &d[0], len(x)/32)
	}
}
