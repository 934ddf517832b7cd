package kernels

import "math"

// F16ToF32 widens IEEE 754 half-precision bits to float32. Every half value,
// including subnormals, infinities and NaN payloads, is represented exactly.
func F16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch exp {
	case 0:
		if man == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal: man × 2^-24, exact in float32.
		f := float32(man) * (1.0 / (1 << 24))
		return math.Float32frombits(sign | math.Float32bits(f))
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
}

// F32ToF16 narrows f to half precision, rounding to nearest with ties to
// even. Values beyond the half range become infinities, tiny values become
// subnormals or signed zero, and NaNs stay NaN (quietened, top payload bits
// kept), matching the F16C instruction VCVTPS2PH.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man == 0 {
			return sign | 0x7c00
		}
		return sign | 0x7e00 | uint16(man>>13)
	}
	e := exp - 127 + 15
	if e >= 31 {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign
		}
		m := man | 0x800000
		shift := uint(14 - e)
		half := m >> shift
		rem := m & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++ // a carry into the exponent is the correct result, up to infinity
	}
	return sign | uint16(half)
}

// BF16ToF32 widens bfloat16 bits to float32 (exact: bfloat16 is the top half
// of a float32).
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 narrows f to bfloat16, rounding to nearest with ties to even;
// NaNs stay NaN.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// F32ToF16Slice converts src to half precision into dst (as F32ToF16), for
// writes into an F16 KV cache. len(dst) must be at least len(src).
func F32ToF16Slice(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	impl.f32ToF16Slice(dst, src)
}

func f32ToF16SliceRef(dst []uint16, src []float32) {
	for i, f := range src {
		dst[i] = F32ToF16(f)
	}
}
