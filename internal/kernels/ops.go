package kernels

import "math"

// RMSNorm sets out = x / sqrt(mean(x²)+eps) * w. The sum of squares is
// accumulated in float64, in index order.
func RMSNorm(out, x, w []float32, eps float32) {
	// ggml_compute_forward_rms_norm_f32's rounding: each square in float32,
	// summed in float64, the mean rounded to float32, then
	// 1/sqrtf(mean + eps) in float32.
	var ss float64
	for _, v := range x {
		ss += float64(v * v)
	}
	mean := float32(ss / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(mean+eps)))
	w = w[:len(x)]
	out = out[:len(x)]
	for i, v := range x {
		out[i] = v * scale * w[i]
	}
}

// Softmax replaces x with exp(x−max)/Σexp(x−max), in place. Exponentials
// are exp32 (a few ulps from e^x); the sum runs in the fixed eight-lane
// order of the package comment, so the result is bit-identical on every
// path.
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	impl.softmax(x)
}

// SwiGLU sets out = silu(gate) * up, silu(g) = g / (1 + exp32(−g)), over
// len(gate) elements.
func SwiGLU(out, gate, up []float32) {
	impl.swiglu(out[:len(gate)], gate, up[:len(gate)])
}

// Dot returns Σ a[i]·b[i] over len(a) (b must be at least as long), in the
// fixed eight-lane order of the package comment.
func Dot(a, b []float32) float32 { return impl.dot(a, b[:len(a)]) }

// Axpy sets y += a*x elementwise over len(y), each element one fused
// multiply-add.
func Axpy(y []float32, a float32, x []float32) { impl.axpy(y, a, x[:len(y)]) }

// DotF16 returns Σ F16ToF32(a[i])·b[i] over len(a), in the order of Dot
// (keys of an F16 KV cache).
func DotF16(a []uint16, b []float32) float32 { return impl.dotF16(a, b[:len(a)]) }

// AxpyF16 sets y += a*F16ToF32(x[i]) elementwise over len(y) (values of an
// F16 KV cache).
func AxpyF16(y []float32, a float32, x []uint16) { impl.axpyF16(y, a, x[:len(y)]) }

func dotRef(a, b []float32) float32 {
	var acc [8]float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		for l := 0; l < 8; l++ {
			acc[l] = fma32(a[i+l], b[i+l], acc[l])
		}
	}
	s := hsum8(&acc)
	for ; i < len(a); i++ {
		s = fma32(a[i], b[i], s)
	}
	return s
}

func dotF16Ref(a []uint16, b []float32) float32 {
	var acc [8]float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		for l := 0; l < 8; l++ {
			acc[l] = fma32(F16ToF32(a[i+l]), b[i+l], acc[l])
		}
	}
	s := hsum8(&acc)
	for ; i < len(a); i++ {
		s = fma32(F16ToF32(a[i]), b[i], s)
	}
	return s
}

func axpyRef(y []float32, a float32, x []float32) {
	for i := range y {
		y[i] = fma32(a, x[i], y[i])
	}
}

func axpyF16Ref(y []float32, a float32, x []uint16) {
	for i := range y {
		y[i] = fma32(a, F16ToF32(x[i]), y[i])
	}
}
