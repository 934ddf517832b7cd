package model

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// TestRopeScoresDependOnlyOnRelativePosition is RoPE's defining property,
// for both pairings: rotating q to position p and k to position p' leaves
// q·k a function of p − p' alone, and no rotation changes a vector's norm.
func TestRopeScoresDependOnlyOnRelativePosition(t *testing.T) {
	for _, style := range []RopeStyle{RopeNormal, RopeNeoX} {
		t.Run(style.String(), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				c := &Config{HeadDim: 16, RopeDim: rapid.SampledFrom([]int{8, 16}).Draw(rt, "ropeDim"), RopeBase: 10000, RopeScale: RopeScaling{Type: "none"}}
				freqs := ropeFreqs(c, nil)
				vec := func(name string) []float32 {
					v := make([]float32, c.HeadDim)
					for i := range v {
						v[i] = float32(rapid.IntRange(-100, 100).Draw(rt, name)) / 50
					}
					return v
				}
				q, k := vec("q"), vec("k")
				p := rapid.IntRange(0, 200).Draw(rt, "p")
				d := rapid.IntRange(0, 50).Draw(rt, "delta")
				shift := rapid.IntRange(1, 300).Draw(rt, "shift")
				score := func(pq, pk int) float64 {
					qq, kk := append([]float32(nil), q...), append([]float32(nil), k...)
					cs := make([]float32, c.RopeDim)
					ropeAngles(cs, freqs, pq)
					applyRope(qq, 1, c.HeadDim, cs, style)
					ropeAngles(cs, freqs, pk)
					applyRope(kk, 1, c.HeadDim, cs, style)
					s := 0.0
					for i := range qq {
						s += float64(qq[i]) * float64(kk[i])
					}
					return s
				}
				a, b := score(p+d, p), score(p+d+shift, p+shift)
				if math.Abs(a-b) > 1e-4*(1+math.Abs(a)) {
					rt.Fatalf("q·k at positions (%d,%d) = %g but at (%d,%d) = %g", p+d, p, a, p+d+shift, p+shift, b)
				}
			})
		})
	}
}

// TestRopePairsDiffer pins down which dimensions each style rotates
// together: a vector with only dimension 1 set moves into dimension 0
// under normal pairing and into dimension 1+n/2 under NeoX.
func TestRopePairsDiffer(t *testing.T) {
	cs := []float32{0, 1, 0, 1} // two pairs, both rotated by 90°
	for _, tc := range []struct {
		style RopeStyle
		want  []float32
	}{
		{RopeNormal, []float32{-1, 0, 0, 0}},
		{RopeNeoX, []float32{0, 0, 0, 1}},
	} {
		x := []float32{0, 1, 0, 0}
		applyRope(x, 1, 4, cs, tc.style)
		for i := range x {
			if math.Abs(float64(x[i]-tc.want[i])) > 1e-7 {
				t.Errorf("%s: got %v, want %v", tc.style, x, tc.want)
				break
			}
		}
	}
}

// TestLlama3ScalingBands checks Llama 3.1's frequency bands: short
// wavelengths are kept, long ones divided by the factor, and the band
// between lies in between.
func TestLlama3ScalingBands(t *testing.T) {
	c := &Config{HeadDim: 128, RopeDim: 128, RopeBase: 500000,
		RopeScale: RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OrigContext: 8192}}
	plain := *c
	plain.RopeScale = RopeScaling{Type: "none"}
	scaled, base := ropeFreqs(c, nil), ropeFreqs(&plain, nil)
	kept, divided, between := 0, 0, 0
	for i := range base {
		wave := 2 * math.Pi / base[i]
		switch {
		case wave < 8192/4.0:
			kept++
			if scaled[i] != base[i] {
				t.Errorf("pair %d (wavelength %.0f): %g, want unchanged %g", i, wave, scaled[i], base[i])
			}
		case wave > 8192:
			divided++
			if math.Abs(scaled[i]-base[i]/8) > 1e-15 {
				t.Errorf("pair %d (wavelength %.0f): %g, want %g", i, wave, scaled[i], base[i]/8)
			}
		default:
			between++
			if !(scaled[i] < base[i] && scaled[i] > base[i]/8) {
				t.Errorf("pair %d (wavelength %.0f): %g not between %g and %g", i, wave, scaled[i], base[i]/8, base[i])
			}
		}
	}
	if kept == 0 || divided == 0 || between == 0 {
		t.Fatalf("bands kept %d, divided %d, between %d: the test does not cover all three", kept, divided, between)
	}
}
