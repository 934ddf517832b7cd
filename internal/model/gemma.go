package model

import (
	"math"

	"github.com/bulkhead-llm/bulkhead/internal/kernels"
)

// Gemma 3 specifics: scaled input embeddings, post-attention and post-FFN
// norms, GELU(gate)·up, and sliding-window (local) layers with their own
// rope base beside global layers.

// Local reports whether layer li attends only to a sliding window: every
// layer but each SWAPattern-th one (llama.cpp's rule for gemma3).
func (c *Config) Local(li int) bool {
	return c.SlidingWindow > 0 && c.SWAPattern > 0 && (li+1)%c.SWAPattern != 0
}

// windowStart is the first key position a query at qpos sees in layer li:
// llama.cpp masks key p when qpos − p ≥ window.
func (c *Config) windowStart(li, qpos int) int {
	if !c.Local(li) {
		return 0
	}
	return max(0, qpos-c.SlidingWindow+1)
}

const (
	sqrt2OverPi = 0.79788456080286535587989211986876
	geluCoefA   = 0.044715
)

// geluF32 is ggml's GELU-tanh formula in float32.
func geluF32(x float32) float32 {
	return 0.5 * x * (1 + float32(math.Tanh(float64(sqrt2OverPi*x*(1+geluCoefA*x*x)))))
}

// geluGGML is GELU as ggml's CPU op computes it: for |x| < 10 the input is
// rounded to F16 and the F16-rounded GELU of that value is returned (its
// lookup table); 0 below −10, x above 10.
func geluGGML(x float32) float32 {
	switch {
	case x <= -10:
		return 0
	case x >= 10:
		return x
	}
	h := kernels.F16ToF32(kernels.F32ToF16(x))
	return kernels.F16ToF32(kernels.F32ToF16(geluF32(h)))
}

// geglu computes out = GELU(gate)·up.
func geglu(out, gate, up []float32) {
	for i := range out {
		out[i] = geluGGML(gate[i]) * up[i]
	}
}

// softcap squashes x into (−cap, cap) as cap·tanh(x/cap), element by
// element (so batch invariance is untouched); cap 0 leaves x as it is.
func softcap(x []float32, cap float32) {
	if cap == 0 {
		return
	}
	for i, v := range x {
		x[i] = cap * float32(math.Tanh(float64(v/cap)))
	}
}
