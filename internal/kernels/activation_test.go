package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// TestActivationQuantizationIsGGMLs states ggml's activation encodings
// (ggml-cpu x86 quantize_row_q8_0 / _q8_1, quantize_row_q8_K_ref) directly
// and checks prepareActivation, fast and reference, against them:
// Q8_0: d = F16(amax/127), q = round-half-even(x × (127/amax));
// Q8_1: plus s = F16((amax/127) × Σq); Q8_K: m the first element of
// largest magnitude, iscale = −127/m, q = round-half-even(iscale × x),
// d = 1/iscale. The inputs include blocks where 127/amax and 1/(amax/127)
// round differently, so a 1/d multiplier fails this test.
func TestActivationQuantizationIsGGMLs(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	p := NewPool(2)
	defer p.Close()
	differs := 0
	for _, typ := range []gguf.Type{gguf.Q8_0, gguf.Q5_1, gguf.Q4_K} {
		for trial := 0; trial < 50; trial++ {
			cols, batch := 512, 1+r.IntN(10)
			x := randVec(r, batch*cols, float32(math.Ldexp(1, r.IntN(12)-6)))
			if actBlock(typ) == 32 {
				differs += plantDistinguishing(r, x)
			}
			for _, pool := range []*Pool{p, nil} {
				a := prepareActivation(typ, x, batch, cols, pool)
				blk := actBlock(typ)
				for b := 0; b < batch*cols/blk; b++ {
					xb := x[blk*b : blk*b+blk]
					var amax, mx float32
					for _, v := range xb {
						if av := float32(math.Abs(float64(v))); av > amax {
							amax, mx = av, v
						}
					}
					var mul, d float32
					if blk == 32 {
						mul = 127 / amax
						d = F16ToF32(F32ToF16(amax / 127))
					} else {
						mul = -127 / mx
						d = 1 / mul
					}
					if !sameBits(a.d[b], d) {
						t.Fatalf("%s block %d: d %g, ggml %g", typ, b, a.d[b], d)
					}
					var sum int32
					for i, v := range xb {
						want := int8(math.RoundToEven(float64(v * mul)))
						if got := a.qs[blk*b+i]; got != want {
							t.Fatalf("%s block %d x=%g: q %d, ggml %d", typ, b, v, got, want)
						}
						sum += int32(want)
					}
					if usesQ8_1(typ) {
						s := F16ToF32(F32ToF16(amax / 127 * float32(sum)))
						if !sameBits(a.s[b], s) {
							t.Fatalf("%s block %d: s %g, ggml %g", typ, b, a.s[b], s)
						}
					}
				}
				putActivation(a)
			}
		}
	}
	if differs == 0 {
		t.Fatal("no block where 127/amax and 1/(amax/127) give different q: the test cannot tell them apart")
	}
}

// plantDistinguishing puts into each 32-value block of x, where it can
// find one, a value whose q differs between the multipliers 127/amax and
// 1/(amax/127), and returns how many blocks got one.
func plantDistinguishing(r *rand.Rand, x []float32) int {
	n := 0
	for b := 0; b < len(x)/32; b++ {
		xb := x[32*b : 32*b+32]
		amax := absMax(xb)
		m1, m2 := 127/amax, 1/(amax/127)
		if m1 == m2 {
			continue
		}
		for try := 0; try < 2000; try++ {
			k := float32(r.IntN(126)) + 0.5
			v := k / m1 * (1 + float32(r.IntN(5)-2)*6e-8)
			if math.RoundToEven(float64(v*m1)) != math.RoundToEven(float64(v*m2)) && math.Abs(float64(v)) < float64(amax) {
				xb[1+r.IntN(31)] = v
				if absMax(xb) == amax {
					n++
				}
				break
			}
		}
	}
	return n
}
