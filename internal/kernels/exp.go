package kernels

import "math"

// expConsts are the constants of exp32, shared by the assembly (which
// broadcasts them from this array) so both paths use identical float32
// values. Polynomial: the Cephes single-precision exp minimax for
// |r| ≤ ln2/2.
var expConsts = [12]float32{
	1.44269504088896341, // 0: log2(e)
	-0.693359375,        // 1: −ln2, high part (exact in a few bits)
	2.12194440e-4,       // 2: −ln2, low part
	1.9875691500e-4,     // 3: p5
	1.3981999507e-3,     // 4: p4
	8.3334519073e-3,     // 5: p3
	4.1665795894e-2,     // 6: p2
	1.6666665459e-1,     // 7: p1
	5.0000001201e-1,     // 8: p0
	1,                   // 9
	88.3,                // 10: inputs are clamped to at most this (result ≈ 2.1e38, never +Inf)
	-87.33654,           // 11: below this (ln 2^-126) the result is 0
}

// exp32 is e^x in float32, within a few ulps of the true value, and
// reproduced bit for bit by the vector assembly: n = round(x·log2e),
// r = x − n·ln2 (two fused steps), e^r by a degree-5 polynomial in Horner
// form with fused multiply-adds, then scaled by 2^n. Inputs above 88.3 are
// clamped there, inputs below −87.33654 (including −Inf) give 0, NaN gives
// NaN.
func exp32(x float32) float32 {
	c := &expConsts
	if x != x {
		return x
	}
	if x < c[11] {
		return 0
	}
	x = min(x, c[10])
	n := float32(math.RoundToEven(float64(x * c[0])))
	r := fma32(n, c[1], x)
	r = fma32(n, c[2], r)
	p := fma32(c[3], r, c[4])
	p = fma32(p, r, c[5])
	p = fma32(p, r, c[6])
	p = fma32(p, r, c[7])
	p = fma32(p, r, c[8])
	z := r * r
	y := fma32(p, z, r)
	y = y + c[9]
	return y * math.Float32frombits(uint32(int32(n)+127)<<23)
}

// softmaxRef: maximum, then e_i = exp32(x_i − max) summed into eight lanes
// (lane i mod 8) for the first multiple of eight, the lanes reduced by
// hsum8 and the remaining elements added in order; finally x_i = e_i × (1/sum).
func softmaxRef(x []float32) {
	m := x[0]
	for _, v := range x[1:] {
		m = max(m, v)
	}
	n8 := len(x) &^ 7
	var acc [8]float32
	for i := 0; i < n8; i++ {
		e := exp32(x[i] - m)
		x[i] = e
		acc[i%8] += e
	}
	s := softmaxTail(x, n8, m, hsum8(&acc))
	scaleRef(x, 1/s)
}

func softmaxTail(x []float32, n8 int, m, s float32) float32 {
	for i := n8; i < len(x); i++ {
		e := exp32(x[i] - m)
		x[i] = e
		s += e
	}
	return s
}

func scaleRef(x []float32, a float32) {
	for i := range x {
		x[i] *= a
	}
}

func swigluRef(out, gate, up []float32) {
	for i, g := range gate {
		s := g / (1 + exp32(-g))
		out[i] = s * up[i]
	}
}
