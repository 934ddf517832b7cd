package kernels

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// TestQuantizeRoundTripErrorIsBounded encodes random rows and checks every
// decoded value against a per-type bound derived from the encoder's step
// size:
//
//	F32: exact. F16: half an F16 ulp (relative 2^-11). BF16: relative 2^-8.
//	Q8_0: half a step (amax/127), plus the F16 rounding of the scale over
//	      127 steps.
//	Q4_0: one step, amax/8 (the value at −amax's opposite end is clamped to 7).
//	Q4_K: half a step of the sub-block plus the rounding of its min to the
//	      6-bit grid: ≤ (d + dmin) × 63 / 63 of the super-block maxima.
//	Q6_K: half a step of the sub-block, ≤ (amax_sub/31 + d)/2.
func TestQuantizeRoundTripErrorIsBounded(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 12))
	for _, typ := range quantTypes {
		for trial := 0; trial < 20; trial++ {
			n := 256 * (1 + r.IntN(3))
			scale := float32(math.Ldexp(1, r.IntN(20)-10))
			x := randVec(r, n, scale)
			if trial%5 == 0 {
				for i := range x {
					x[i] = float32(math.Abs(float64(x[i]))) // all positive: exercises mins
				}
			}
			data, err := Quantize(typ, x)
			if err != nil {
				t.Fatal(err)
			}
			y := make([]float32, n)
			dequantize(typ, y, data)
			be := max(typ.BlockElems(), 1)
			grp := max(be, 16)
			for g := 0; g < n; g += grp {
				blk := x[g : g+grp]
				amax := float64(absMax(blk))
				var lo, hi float64
				for _, v := range blk {
					lo, hi = min(lo, float64(v)), max(hi, float64(v))
				}
				for i := g; i < g+grp; i++ {
					v := float64(x[i])
					var bound float64
					switch typ {
					case gguf.F32:
						bound = 0
					case gguf.F16:
						bound = math.Max(math.Abs(v)*math.Ldexp(1, -11), math.Ldexp(1, -25))
					case gguf.BF16:
						bound = math.Abs(v) * math.Ldexp(1, -8)
					case gguf.Q8_0:
						bound = amax/127/2 + amax*math.Ldexp(1, -10)
					case gguf.Q4_0:
						bound = amax / 8 * (1 + math.Ldexp(1, -10))
					case gguf.Q4_K:
						// Range of the whole super-block bounds every sub-block's step.
						bound = (hi - lo) / 15 * 1.2
					case gguf.Q6_K:
						bound = amax/31*0.5*1.1 + amax/31/127
					}
					if d := math.Abs(float64(y[i]) - v); d > bound {
						t.Fatalf("%s trial %d: x[%d]=%g decoded %g, error %g > bound %g", typ, trial, i, v, y[i], d, bound)
					}
				}
			}
		}
	}
}

func TestQuantizeRejectsPartialBlocks(t *testing.T) {
	for _, typ := range []gguf.Type{gguf.Q8_0, gguf.Q4_0, gguf.Q4_K, gguf.Q6_K} {
		if _, err := Quantize(typ, make([]float32, typ.BlockElems()+1)); err == nil {
			t.Errorf("%s: accepted a partial block", typ)
		}
	}
	if _, err := Quantize(gguf.Type(77), nil); err == nil {
		t.Error("unknown type accepted")
	}
}

// TestDequantizeMatchesHandBuiltBlocks decodes blocks assembled byte by byte
// from the documented layouts, independent of the encoders.
func TestDequantizeMatchesHandBuiltBlocks(t *testing.T) {
	t.Run("Q4_0 low nibbles are elements 0..15", func(t *testing.T) {
		blk := make([]byte, 18)
		blk[0], blk[1] = 0x00, 0x40 // F16 2.0
		blk[2] = 0xF0               // element 0: 0−8, element 16: 15−8
		blk[17] = 0x9A              // element 15: 10−8, element 31: 9−8
		got := make([]float32, 32)
		dequantize(gguf.Q4_0, got, blk)
		want := map[int]float32{0: -16, 16: 14, 15: 4, 31: 2, 1: -16}
		for i, w := range want {
			if got[i] != w {
				t.Errorf("element %d = %g, want %g", i, got[i], w)
			}
		}
	})
	t.Run("Q8_0 is d times int8", func(t *testing.T) {
		blk := make([]byte, 34)
		blk[0], blk[1] = 0x00, 0x38 // F16 0.5
		blk[2], blk[33] = 0x80, 0x7f
		got := make([]float32, 32)
		dequantize(gguf.Q8_0, got, blk)
		if got[0] != -64 || got[31] != 63.5 || got[1] != 0 {
			t.Errorf("got %g %g %g", got[0], got[1], got[31])
		}
	})
	t.Run("Q4_K scales, mins and nibble halves", func(t *testing.T) {
		blk := make([]byte, 144)
		blk[0], blk[1] = 0x00, 0x3c // d = 1
		blk[2], blk[3] = 0x00, 0x38 // dmin = 0.5
		s := blk[4:16]
		s[0] = 3 | 1<<6      // sc0 = 3; top bits of sc4 = 1
		s[4] = 2 | 2<<6      // m0 = 2; top bits of m4 = 2
		s[8] = 5 | 7<<4      // sc4 low = 5, m4 low = 7
		s[3] = 63            // sc3 = 63
		s[7] = 1             // m3 = 1
		blk[16] = 0x4A       // element 0 (sub 0): 10; element 32 (sub 1): 4
		blk[16+64] = 0x0C    // chunk 2, byte 0: element 128 (sub 4): 12
		blk[16+32+31] = 0xF0 // chunk 1, byte 31: element 127 (sub 3): 15
		got := make([]float32, 256)
		dequantize(gguf.Q4_K, got, blk)
		sc4, m4 := float32(5|1<<4), float32(7|2<<4)
		checks := map[int]float32{
			0:   3*10 - 0.5*2,
			128: sc4*12 - 0.5*m4,
			127: 63*15 - 0.5*1,
			32:  0, // sub-block 1 has scale 0 and min 0
		}
		for i, w := range checks {
			if got[i] != w {
				t.Errorf("element %d = %g, want %g", i, got[i], w)
			}
		}
	})
	t.Run("Q6_K low and high bits", func(t *testing.T) {
		blk := make([]byte, 210)
		blk[208], blk[209] = 0x00, 0x3c // d = 1
		for j := 0; j < 16; j++ {
			blk[192+j] = byte(int8(j + 1))
		}
		blk[192+15] = byte(0xfe) // scale of sub-block 15 = −2
		blk[0] = 0x21            // element 0: low 1; element 64: low 2
		blk[128] = 0x0B          // element 0 high 3 (→ 49); element 32 high 2 (→ 32)
		blk[64+32+31] = 0xF0     // half 1, L[63]: element 255 low = 15
		blk[128+32+31] = 0xC0    // half 1, H[31] bits 6-7 = 3: element 255 high = 3
		got := make([]float32, 256)
		dequantize(gguf.Q6_K, got, blk)
		checks := map[int]float32{
			0:   1 * (49 - 32),
			32:  3 * (32 - 32),
			64:  5 * (2 - 32),
			255: -2 * (63 - 32),
			1:   1 * (0 - 32),
		}
		for i, w := range checks {
			if got[i] != w {
				t.Errorf("element %d = %g, want %g", i, got[i], w)
			}
		}
	})
}

func TestNewMatrixErrorsAreSentinels(t *testing.T) {
	_, err := NewMatrix(gguf.Type(99), 1, 1, nil)
	if !errors.Is(err, ErrUnsupportedType) {
		t.Errorf("unknown type: %v", err)
	}
	_, err = NewMatrix(gguf.F16, 2, 2, make([]byte, 3))
	if !errors.Is(err, ErrShape) {
		t.Errorf("short data: %v", err)
	}
}
