package model

import "math"

// ropeFreqs returns the angular frequency of each rotated pair i in
// [0, RopeDim/2): base^(-2i/RopeDim), stretched by the configured scaling
// and divided by the per-pair factors of a rope_freqs tensor, if any.
func ropeFreqs(c *Config, factors []float32) []float64 {
	n := c.RopeDim / 2
	out := make([]float64, n)
	s := c.RopeScale
	for i := range out {
		f := math.Pow(c.RopeBase, -2*float64(i)/float64(c.RopeDim))
		switch s.Type {
		case "linear":
			f /= s.Factor
		case "llama3":
			f = llama3Freq(f, s)
		}
		if factors != nil {
			f /= float64(factors[i])
		}
		out[i] = f
	}
	return out
}

// llama3Freq applies Llama 3.1's scaling: wavelengths shorter than
// orig/high are kept, longer than orig/low are divided by the factor, and
// the band between is interpolated smoothly.
func llama3Freq(f float64, s RopeScaling) float64 {
	wavelen := 2 * math.Pi / f
	orig := float64(s.OrigContext)
	lowWave := orig / s.LowFreqFactor
	highWave := orig / s.HighFreqFactor
	switch {
	case wavelen < highWave:
		return f
	case wavelen > lowWave:
		return f / s.Factor
	}
	smooth := (orig/wavelen - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
	return (1-smooth)*f/s.Factor + smooth*f
}

// ropeAngles fills cs with cos and sin of pos × freq for each pair:
// cs[2i] = cos, cs[2i+1] = sin. They are computed in float64 and rounded
// once, and depend only on the position.
func ropeAngles(cs []float32, freqs []float64, pos int) {
	for i, f := range freqs {
		s, c := math.Sincos(float64(pos) * f)
		cs[2*i] = float32(c)
		cs[2*i+1] = float32(s)
	}
}

// applyRope rotates each head of x (heads × headDim values) in place by
// the angles in cs, pairing dimensions as style says. Dimensions past the
// rotated ones are left unchanged.
func applyRope(x []float32, heads, headDim int, cs []float32, style RopeStyle) {
	n := len(cs) / 2
	for h := 0; h < heads; h++ {
		v := x[h*headDim : (h+1)*headDim]
		for i := 0; i < n; i++ {
			a, b := 2*i, 2*i+1
			if style == RopeNeoX {
				a, b = i, i+n
			}
			c, s := cs[2*i], cs[2*i+1]
			x0, x1 := v[a], v[b]
			v[a] = x0*c - x1*s
			v[b] = x0*s + x1*c
		}
	}
}

// ggmlThetaScale is the per-pair angle ratio ggml's rope cache uses:
// powf(base, −2/ropeDim) in float32.
func ggmlThetaScale(base float64, ropeDim int) float32 {
	return float32(math.Pow(float64(float32(base)), float64(float32(-2)/float32(ropeDim))))
}

// ggmlRopeAngles fills cs as ggml's rope cache does (Options.GGMLRope):
// the angle is a float32 running product, θ = pos, then θ ×= thetaScale
// for each pair, and cos/sin are glibc's of that float32 angle
// (sincosfGLIBC). The result differs from ropeAngles' float64 angles in
// the last bits, more so at long positions.
func ggmlRopeAngles(cs []float32, thetaScale float32, pos int) {
	theta := float32(pos)
	for i := 0; i < len(cs)/2; i++ {
		cs[2*i+1], cs[2*i] = sincosfGLIBC(theta)
		theta *= thetaScale
	}
}

// applyRopeGGML is applyRope with ggml's rounding: compiled with
// contraction, x0·c − x1·s becomes fma(x0, c, −x1·s) and x0·s + x1·c
// becomes fma(x0, s, x1·c).
func applyRopeGGML(x []float32, heads, headDim int, cs []float32, style RopeStyle) {
	n := len(cs) / 2
	for h := 0; h < heads; h++ {
		v := x[h*headDim : (h+1)*headDim]
		for i := 0; i < n; i++ {
			a, b := 2*i, 2*i+1
			if style == RopeNeoX {
				a, b = i, i+n
			}
			c, s := cs[2*i], cs[2*i+1]
			x0, x1 := v[a], v[b]
			v[a] = fma32(x0, c, -(x1 * s))
			v[b] = fma32(x0, s, x1*c)
		}
	}
}
