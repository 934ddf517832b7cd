package kernels

import (
	"math"
	"math/big"
	"math/rand/v2"
	"sort"
	"testing"
)

// f16Value is the straightforward meaning of half-precision bits:
// (−1)^s × 2^(e−15) × 1.m, or 2^−14 × 0.m for subnormals.
func f16Value(h uint16) float64 {
	s := 1.0
	if h&0x8000 != 0 {
		s = -1
	}
	e := int(h>>10) & 0x1f
	m := float64(h & 0x3ff)
	switch e {
	case 0:
		return s * math.Ldexp(m, -24)
	case 31:
		if m == 0 {
			return math.Inf(int(s))
		}
		return math.NaN()
	}
	return s * math.Ldexp(1024+m, e-25)
}

func TestF16ToF32MatchesDefinitionForAllBitPatterns(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		got := F16ToF32(h)
		want := f16Value(h)
		if math.IsNaN(want) {
			// NaN must stay NaN, with sign and payload carried over.
			if b := math.Float32bits(got); !math.IsNaN(float64(got)) || b>>31 != uint32(h>>15) || b&0x7fffff != uint32(h&0x3ff)<<13 {
				t.Fatalf("%#04x: got %#08x, want NaN with payload", h, math.Float32bits(got))
			}
			continue
		}
		if float64(got) != want || math.Signbit(float64(got)) != (h&0x8000 != 0) {
			t.Fatalf("%#04x: got %g, want %g", h, got, want)
		}
	}
}

// nearestF16 is a brute-force round-to-nearest-even search over the sorted
// finite non-negative halves, the reference for F32ToF16.
type halfTable struct {
	vals []float64
	bits []uint16
}

func newHalfTable() *halfTable {
	var ht halfTable
	for i := 0; i < 0x7c00; i++ {
		ht.bits = append(ht.bits, uint16(i))
		ht.vals = append(ht.vals, f16Value(uint16(i)))
	}
	return &ht
}

func (ht *halfTable) nearest(f float32) uint16 {
	v := math.Abs(float64(f))
	var sign uint16
	if math.Signbit(float64(f)) {
		sign = 0x8000
	}
	// 65520 is the midpoint between the largest half (65504) and the next
	// power-of-two step; from there on, round-to-nearest gives infinity.
	if v >= 65520 {
		return sign | 0x7c00
	}
	i := sort.SearchFloat64s(ht.vals, v) // first ≥ v
	if i == len(ht.vals) {
		return sign | 0x7bff
	}
	if ht.vals[i] == v || i == 0 {
		return sign | ht.bits[i]
	}
	lo, hi := ht.vals[i-1], ht.vals[i]
	switch {
	case v-lo < hi-v:
		return sign | ht.bits[i-1]
	case v-lo > hi-v:
		return sign | ht.bits[i]
	case ht.bits[i-1]&1 == 0:
		return sign | ht.bits[i-1]
	default:
		return sign | ht.bits[i]
	}
}

func TestF32ToF16RoundsToNearestEven(t *testing.T) {
	ht := newHalfTable()
	check := func(f float32) {
		t.Helper()
		if got, want := F32ToF16(f), ht.nearest(f); got != want {
			t.Fatalf("F32ToF16(%g = %#08x) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
		}
	}
	// Every half value, each midpoint between neighbours, and the float32s
	// one step either side of each midpoint.
	for i := 0; i < 0x7c00; i++ {
		for _, s := range []float32{1, -1} {
			v := float32(f16Value(uint16(i))) * s
			check(v)
			if i+1 < 0x7c00 || i == 0x7bff {
				next := f16Value(uint16(i+1)) * float64(s)
				if i == 0x7bff {
					next = 65536 * float64(s)
				}
				mid := float32((float64(v) + next) / 2)
				check(mid)
				check(math.Nextafter32(mid, 0))
				check(math.Nextafter32(mid, float32(math.Inf(int(s)))))
			}
		}
	}
	r := rand.New(rand.NewPCG(9, 9))
	for i := 0; i < 200000; i++ {
		f := math.Float32frombits(r.Uint32())
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			continue
		}
		check(f)
	}
	for _, tc := range []struct {
		in   float32
		want uint16
	}{
		{float32(math.Inf(1)), 0x7c00},
		{float32(math.Inf(-1)), 0xfc00},
		{65504, 0x7bff},
		{65519.996, 0x7bff},
		{65520, 0x7c00},
		{float32(math.Ldexp(1, -25)), 0x0000}, // tie to even (zero)
		{float32(math.Ldexp(3, -26)), 0x0001}, // above the tie
		{float32(math.Copysign(0, -1)), 0x8000},
	} {
		if got := F32ToF16(tc.in); got != tc.want {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", tc.in, got, tc.want)
		}
	}
	if h := F32ToF16(float32(math.NaN())); h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
		t.Errorf("NaN became %#04x", h)
	}
}

func TestF32ToF16RoundTripsEveryHalf(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
			continue // NaNs are quietened
		}
		if got := F32ToF16(F16ToF32(h)); got != h {
			t.Fatalf("%#04x → %g → %#04x", h, F16ToF32(h), got)
		}
	}
}

// TestF32ToF16SliceMatchesScalar compares the (F16C) slice conversion with
// F32ToF16 on random bit patterns, NaNs and infinities included.
func TestF32ToF16SliceMatchesScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	n := 1 << 16
	src := make([]float32, n+5)
	for i := range src {
		switch i % 4 {
		case 0:
			src[i] = math.Float32frombits(r.Uint32()) // any pattern
		case 1:
			src[i] = F16ToF32(uint16(i)) // exact halves
		default:
			src[i] = float32(r.NormFloat64() * math.Ldexp(1, r.IntN(40)-25))
		}
	}
	dst := make([]uint16, len(src))
	F32ToF16Slice(dst, src)
	for i, f := range src {
		if want := F32ToF16(f); dst[i] != want {
			t.Fatalf("src[%d] = %#08x: slice %#04x, scalar %#04x", i, math.Float32bits(f), dst[i], want)
		}
	}
}

func TestBF16RoundsToNearestEven(t *testing.T) {
	tests := []struct {
		name string
		in   uint32
		want uint16
	}{
		{"exact", 0x3f800000, 0x3f80},
		{"below half rounds down", 0x3f807fff, 0x3f80},
		{"tie to even stays", 0x3f808000, 0x3f80},
		{"tie to even rounds up", 0x3f818000, 0x3f82},
		{"above half rounds up", 0x3f808001, 0x3f81},
		{"overflow to infinity", 0x7f7fffff, 0x7f80},
		{"NaN stays NaN", 0x7f800001, 0x7fc0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := F32ToBF16(math.Float32frombits(tc.in)); got != tc.want {
				t.Fatalf("got %#04x, want %#04x", got, tc.want)
			}
		})
	}
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		if f := BF16ToF32(h); !math.IsNaN(float64(f)) && F32ToBF16(f) != h {
			t.Fatalf("%#04x does not round-trip", h)
		}
	}
}

// TestFMA32IsCorrectlyRounded checks the reference FMA against exact
// arithmetic (math/big) on random and adversarial operands.
func TestFMA32IsCorrectlyRounded(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	n := 200000
	if short() {
		n = 20000
	}
	exact := func(a, b, c float32) float32 {
		x := new(big.Float).SetPrec(200).SetFloat64(float64(a))
		x.Mul(x, new(big.Float).SetPrec(200).SetFloat64(float64(b)))
		x.Add(x, new(big.Float).SetPrec(200).SetFloat64(float64(c)))
		f, _ := x.Float32()
		return f
	}
	for i := 0; i < n; i++ {
		a := float32(r.NormFloat64() * math.Ldexp(1, r.IntN(60)-30))
		b := float32(r.NormFloat64() * math.Ldexp(1, r.IntN(60)-30))
		var c float32
		switch i % 3 {
		case 0:
			c = float32(r.NormFloat64() * math.Ldexp(1, r.IntN(60)-30))
		case 1:
			// c cancels most of a×b, leaving the low bits to decide rounding.
			c = -float32(float64(a) * float64(b))
			c = math.Nextafter32(c, float32(r.NormFloat64()))
		default:
			// a×b is a tiny perturbation of c near a rounding tie.
			c = float32(r.NormFloat64())
			a = float32(math.Ldexp(float64(a), -24))
		}
		got, want := fma32(a, b, c), exact(a, b, c)
		if !sameBits(got, want) && !(got == 0 && want == 0) {
			t.Fatalf("fma32(%g, %g, %g) = %g, exact %g", a, b, c, got, want)
		}
	}
}
