//go:build amd64 && !noasm

package kernels

//go:noescape
func dotAVX(a, b *float32, n int) float32

//go:noescape
func dotF16AVX(a *uint16, b *float32, n int) float32

//go:noescape
func axpyAVX(y, x *float32, a float32, n int)

//go:noescape
func axpyF16AVX(y *float32, x *uint16, a float32, n int)

//go:noescape
func f32ToF16AVX(dst *uint16, src *float32, n int)

// The wrappers below run the assembly over the largest multiple of eight
// elements and finish the tail exactly as the reference does.

func dotFast(a, b []float32) float32 {
	n8 := len(a) &^ 7
	var s float32
	if n8 > 0 {
		s = dotAVX(&a[0], &b[0], n8)
	}
	for i := n8; i < len(a); i++ {
		s = fma32(a[i], b[i], s)
	}
	return s
}

func dotF16Fast(a []uint16, b []float32) float32 {
	n8 := len(a) &^ 7
	var s float32
	if n8 > 0 {
		s = dotF16AVX(&a[0], &b[0], n8)
	}
	for i := n8; i < len(a); i++ {
		s = fma32(F16ToF32(a[i]), b[i], s)
	}
	return s
}

func axpyFast(y []float32, a float32, x []float32) {
	n8 := len(y) &^ 7
	if n8 > 0 {
		axpyAVX(&y[0], &x[0], a, n8)
	}
	axpyRef(y[n8:], a, x[n8:])
}

func axpyF16Fast(y []float32, a float32, x []uint16) {
	n8 := len(y) &^ 7
	if n8 > 0 {
		axpyF16AVX(&y[0], &x[0], a, n8)
	}
	axpyF16Ref(y[n8:], a, x[n8:])
}

func f32ToF16SliceFast(dst []uint16, src []float32) {
	n8 := len(src) &^ 7
	if n8 > 0 {
		f32ToF16AVX(&dst[0], &src[0], n8)
	}
	f32ToF16SliceRef(dst[n8:], src[n8:])
}
