package kernels

import "math"

// fma32 returns a*b+c rounded once to float32, the result of the FMA
// instruction VFMADD231PS. The product of two float32 values is exact in
// float64; the sum is computed exactly as a float64 pair (TwoSum) and rounded
// to float64 with round-to-odd, which makes the final rounding to float32
// correct (float64 carries more than 24+2 bits).
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	cc := float64(c)
	s := p + cc
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return float32(s)
	}
	bv := s - p
	err := (p - (s - bv)) + (cc - bv)
	if err != 0 {
		sb := math.Float64bits(s)
		if sb&1 == 0 {
			// Step to the odd neighbour on the side of the exact value.
			if (err > 0) == (s > 0) {
				sb++
			} else {
				sb--
			}
			s = math.Float64frombits(sb)
		}
	}
	return float32(s)
}

// hsum8 sums eight accumulator lanes in the fixed order of the assembly's
// horizontal reduction: high 128 bits onto low, high 64 onto low, then the
// two remaining lanes.
func hsum8(acc *[8]float32) float32 {
	t0 := acc[0] + acc[4]
	t1 := acc[1] + acc[5]
	t2 := acc[2] + acc[6]
	t3 := acc[3] + acc[7]
	u0 := t0 + t2
	u1 := t1 + t3
	return u0 + u1
}
