package audit

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestKSSeparatesShiftedSamplesAndNotEqualOnes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	draw := func(n int, shift float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = rng.NormFloat64() + shift
		}
		return out
	}
	if d, p := ksTwoSample(draw(30, 0), draw(30, 3)); p > 1e-6 || d < 0.8 {
		t.Errorf("shifted by 3 sd: D %.2f p %.2g, want D near 1 and a tiny p", d, p)
	}
	// Under the null, p < 0.01 should happen about 1% of the time.
	hits := 0
	for range 400 {
		if _, p := ksTwoSample(draw(24, 0), draw(24, 0)); p < 0.01 {
			hits++
		}
	}
	if hits > 16 {
		t.Errorf("%d of 400 null trials had p < 0.01", hits)
	}
	if d, p := ksTwoSample([]float64{1, 2, 3}, []float64{1, 2, 3}); d != 0 || p != 1 {
		t.Errorf("identical samples: D %v p %v", d, p)
	}
	// A known value: Q(1.0) = 0.26999967.
	if q := kolmogorovQ(1); math.Abs(q-0.2700) > 1e-3 {
		t.Errorf("Q(1) = %v", q)
	}
}
