package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// TestQuantizeRoundTripsThroughGGMLDecoding encodes random rows with the
// extra encoders and decodes them with dequantizeExtra (the decoder the zoo
// tests prove equal to llama.cpp's): the relative RMS error must be that of
// a working quantizer of the type's bit width, which a wrong bit layout or
// scale packing cannot reach.
func TestQuantizeRoundTripsThroughGGMLDecoding(t *testing.T) {
	cases := []struct {
		t      gguf.Type
		maxRel float64 // relative RMS error bound for Gaussian rows
	}{
		{gguf.Q4_1, 0.12}, {gguf.Q5_0, 0.07}, {gguf.Q5_1, 0.06},
		{gguf.IQ4_NL, 0.12}, {gguf.IQ4_XS, 0.13},
		{gguf.Q2_K, 0.45}, {gguf.Q3_K, 0.25}, {gguf.Q5_K, 0.07},
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range cases {
		t.Run(tc.t.String(), func(t *testing.T) {
			const cols = 1024
			x := make([]float32, cols)
			for i := range x {
				x[i] = float32(rng.NormFloat64()) * 0.02
			}
			x[7] = 0.2 // an outlier, as real weights have
			b, err := Quantize(tc.t, x)
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := tc.t.RowBytes(cols); len(b) != want {
				t.Fatalf("%d bytes, want %d", len(b), want)
			}
			m, err := NewMatrix(tc.t, 1, cols, b)
			if err != nil {
				t.Fatal(err)
			}
			y := make([]float32, cols)
			m.DequantizeRow(y, 0)
			var se, sx float64
			for i := range x {
				se += float64(y[i]-x[i]) * float64(y[i]-x[i])
				sx += float64(x[i]) * float64(x[i])
			}
			rel := math.Sqrt(se / sx)
			t.Logf("%s: relative RMS error %.4f", tc.t, rel)
			if rel > tc.maxRel {
				t.Errorf("%s: relative RMS error %.4f, want ≤ %.2f", tc.t, rel, tc.maxRel)
			}
			if d := math.Abs(float64(y[7] - x[7])); d > 0.2*0.3 {
				t.Errorf("%s: the outlier 0.2 decodes as %g", tc.t, y[7])
			}
		})
	}
}
