package model

import "math"

// sincosfGLIBC returns sin and cos of y as glibc's sincosf does on x86-64
// (llama.cpp's rope cache calls cosf and sinf of one float angle, which
// the compiler merges into sincosf). glibc's single-precision sine and
// cosine are within an ulp but not correctly rounded: float32(math.Cos(y))
// differs from cosf(y) in about 2% of the rope angles of the zoo models,
// which moves F32 queries in the last bit. This is a Go port of the
// algorithm and constants of Arm Optimized Routines' sincosf (Copyright (c)
// 2018 Arm Limited; MIT OR Apache-2.0 WITH LLVM-exception, the same code
// newlib carries under BSD-3-Clause), which glibc uses; bit-exactness
// needs its constants, so they are Arm's: evaluation in float64, |y| <
// π/4 directly, |y| < 120 with a one-step reduction by π/2, larger |y| by
// a 4/π table with integer arithmetic; degree-4 cosine and degree-3 sine polynomials in y². Checked
// against glibc 2.36 on every angle the zoo's rope caches use (36568 of
// them, bit for bit). Infinities and NaN give NaN.
func sincosfGLIBC(y float32) (sin, cos float32) {
	x := float64(y)
	p := &sincosTab[0]
	switch top := abstop12(y); {
	case top < abstop12(0x1.921FB6p-1): // π/4
		if top < abstop12(0x1p-12) {
			return y, 1
		}
		return sincosPoly(x, x*x, p, 0)
	case top < abstop12(120):
		n := int((int32(x*p.hpiInv) + 0x800000) >> 24)
		x = math.FMA(-float64(n), p.hpi, x)
		s := p.sign[n&3]
		if n&2 != 0 {
			p = &sincosTab[1]
		}
		return sincosPoly(x*s, x*x, p, n)
	case top < abstop12(float32(math.Inf(1))):
		xi := math.Float32bits(y)
		neg := int(xi >> 31)
		x, n := reduceLarge(xi)
		s := p.sign[(n+neg)&3]
		if (n+neg)&2 != 0 {
			p = &sincosTab[1]
		}
		return sincosPoly(x*s, x*x, p, n)
	}
	nan := float32(math.NaN())
	return nan, nan
}

// sincosCoef holds a quadrant pair's polynomials; the second entry
// computes −cos, so the quadrant's sign comes for free.
type sincosCoef struct {
	sign               [4]float64
	hpiInv, hpi        float64 // 2/π·2^24, π/2
	c0, c1, c2, c3, c4 float64
	s1, s2, s3         float64
}

var sincosTab = [2]sincosCoef{
	{[4]float64{1, -1, -1, 1}, 0x1.45F306DC9C883p+23, 0x1.921FB54442D18p0,
		0x1p0, -0x1.ffffffd0c621cp-2, 0x1.55553e1068f19p-5, -0x1.6c087e89a359dp-10, 0x1.99343027bf8c3p-16,
		-0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
	{[4]float64{1, -1, -1, 1}, 0x1.45F306DC9C883p+23, 0x1.921FB54442D18p0,
		-0x1p0, 0x1.ffffffd0c621cp-2, -0x1.55553e1068f19p-5, 0x1.6c087e89a359dp-10, -0x1.99343027bf8c3p-16,
		-0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
}

// invPio4 is 4/π to 192 bits, eight new bits per entry.
var invPio4 = [24]uint32{
	0xa2, 0xa2f9, 0xa2f983, 0xa2f9836e, 0xf9836e4e, 0x836e4e44, 0x6e4e4415, 0x4e441529,
	0x441529fc, 0x1529fc27, 0x29fc2757, 0xfc2757d1, 0x2757d1f5, 0x57d1f534, 0xd1f534dd, 0xf534ddc0,
	0x34ddc0db, 0xddc0db62, 0xc0db6295, 0xdb629599, 0x6295993c, 0x95993c43, 0x993c4390, 0x3c439041,
}

func abstop12(f float32) uint32 { return math.Float32bits(f) >> 20 & 0x7ff }

// sincosPoly evaluates both polynomials at the reduced x; an odd quadrant
// n swaps them.
func sincosPoly(x, x2 float64, p *sincosCoef, n int) (sin, cos float32) {
	x4, x3 := x2*x2, x2*x
	c2 := math.FMA(x2, p.c4, p.c3)
	s1 := math.FMA(x2, p.s3, p.s2)
	c1 := math.FMA(x2, p.c1, p.c0)
	x5, x6 := x3*x2, x4*x2
	s := math.FMA(x3, p.s1, x)
	c := math.FMA(x4, p.c2, c1)
	a, b := float32(math.FMA(x5, s1, s)), float32(math.FMA(x6, c2, c))
	if n&1 != 0 {
		return b, a
	}
	return a, b
}

// reduceLarge reduces |y| ≥ 120 (as float bits xi, sign ignored) modulo
// π/2 with a 32×96-bit product against invPio4: the remainder in
// [−π/4, π/4] and the quadrant.
func reduceLarge(xi uint32) (float64, int) {
	arr := invPio4[(xi>>26)&15:]
	shift := (xi >> 23) & 7
	xi = (xi&0xffffff | 0x800000) << shift
	res0 := uint64(xi * arr[0])
	res1 := uint64(xi) * uint64(arr[4])
	res2 := uint64(xi) * uint64(arr[8])
	res0 = res2>>32 | res0<<32
	res0 += res1
	n := (res0 + 1<<61) >> 62
	res0 -= n << 62
	return float64(int64(res0)) * 0x1.921FB54442D18p-62, int(n)
}
