package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ulpDiff is the distance between a and b in float32 units in the last place.
func ulpDiff(a, b float32) int64 {
	ia, ib := int64(math.Float32bits(a)), int64(math.Float32bits(b))
	return max(ia-ib, ib-ia)
}

func TestExp32IsWithinFourUlpsOfExp(t *testing.T) {
	worst := int64(0)
	for x := float32(-87.3); x < 88.3; x += 0.000731 {
		got := exp32(x)
		want := float32(math.Exp(float64(x)))
		if d := ulpDiff(got, want); d > worst {
			worst = d
			if d > 4 {
				t.Fatalf("exp32(%g) = %g, e^x = %g (%d ulps)", x, got, want, d)
			}
		}
	}
	t.Logf("worst error %d ulps", worst)
	tests := []struct {
		name string
		in   float32
		want float32
	}{
		{"zero is one", 0, 1},
		{"minus infinity is zero", float32(math.Inf(-1)), 0},
		{"below the normal range is zero", -87.4, 0},
		{"above 88.3 is clamped", 1e30, exp32(88.3)},
		{"infinity is clamped", float32(math.Inf(1)), exp32(88.3)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := exp32(tc.in); got != tc.want {
				t.Fatalf("exp32(%g) = %g, want %g", tc.in, got, tc.want)
			}
		})
	}
	if !math.IsNaN(float64(exp32(float32(math.NaN())))) {
		t.Error("exp32(NaN) is not NaN")
	}
}

// TestSoftmaxAndSwiGLUFastEqualReference covers the vector exponential on
// ordinary, extreme and non-finite inputs, with lengths that leave tails.
func TestSoftmaxAndSwiGLUFastEqualReference(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 16))
	special := []float32{0, -0.0, 88.2, 88.4, -87.3, -87.4, 1e30, -1e30,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-40}
	for _, n := range []int{1, 5, 8, 13, 64, 515} {
		for trial := 0; trial < 5; trial++ {
			x := randVec(r, n, float32(math.Ldexp(1, r.IntN(8))))
			up := randVec(r, n, 1)
			if trial == 4 {
				for i := range x {
					x[i] = special[r.IntN(len(special))]
				}
			}
			want, got := make([]float32, n), make([]float32, n)
			swigluRef(want, x, up)
			SwiGLU(got, x, up)
			for i := range got {
				if !sameBits(got[i], want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
					t.Fatalf("SwiGLU n=%d g=%g: fast %g ref %g", n, x[i], got[i], want[i])
				}
			}
			if trial == 4 {
				continue // softmax of non-finite scores is not meaningful
			}
			copy(want, x)
			copy(got, x)
			softmaxRef(want)
			Softmax(got)
			for i := range got {
				if !sameBits(got[i], want[i]) {
					t.Fatalf("Softmax n=%d [%d]: fast %g ref %g", n, i, got[i], want[i])
				}
			}
		}
	}
}
