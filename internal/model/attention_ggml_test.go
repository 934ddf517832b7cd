package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kernels"
)

// TestDotF16GGMLOrder checks the summation order of the emulated
// ggml_vec_dot_f16 on products chosen so that each order rounds
// differently: 2^24 in lane 0 of accumulator 0 and 1 in lane 0 of
// accumulators 1 and 3. Accumulators 1+3 give 2 first, so 2^24+2 survives;
// summing in index order would lose both ones (2^24+1 rounds to 2^24). The
// two tail products add in float64: 2^24+4.
func TestDotF16GGMLOrder(t *testing.T) {
	x := make([]uint16, 66)
	y := make([]uint16, 66)
	for i := range x {
		x[i], y[i] = kernels.F32ToF16(0), kernels.F32ToF16(0)
	}
	set := func(i int, a, b float32) { x[i], y[i] = kernels.F32ToF16(a), kernels.F32ToF16(b) }
	set(0, 4096, 4096)
	set(16, 1, 1)
	set(48, 1, 1)
	set(64, 1, 1)
	set(65, 1, 1)
	if got, want := dotF16GGML(x, y), float32(1<<24+4); got != want {
		t.Errorf("dotF16GGML = %v, want %v", got, want)
	}
}

// ggmlAttnModel is a one-layer attention-only model with its KV pages
// filled by fill(position, index in the row) → (key, value).
func ggmlAttnModel(t *testing.T, heads, kvHeads, hd, n, ps int, fill func(p, i int) (float32, float32)) (*Model, KVStore, []int32) {
	t.Helper()
	c := Config{Heads: heads, KVHeads: kvHeads, HeadDim: hd, Layers: 1}
	m := &Model{Config: c, attnScale: float32(1 / math.Sqrt(float64(hd))), pool: kernels.NewPool(2), serial: kernels.NewPool(1), ggmlFA: true}
	m.bindAttention()
	nPages := (n + ps - 1) / ps
	kv, err := NewSimpleKV(&c, nPages+2, ps, gguf.F16)
	if err != nil {
		t.Fatal(err)
	}
	pages := pagesFor(rand.New(rand.NewPCG(9, 9)), map[int32]bool{}, nPages, nPages+2)
	K := c.KVDim()
	for p := 0; p < n; p++ {
		kp, vp := kv.PageF16(0, int(pages[p/ps]))
		for i := 0; i < K; i++ {
			k, v := fill(p, i)
			kp[(p%ps)*K+i], vp[(p%ps)*K+i] = kernels.F32ToF16(k), kernels.F32ToF16(v)
		}
	}
	return m, kv, pages
}

// TestGGMLAttentionF16Accumulator: with all keys zero every score is 0, so
// each value enters with weight 1 and the output is the running sum over S.
// Values 2048, 1, 1 sum to 2048 in a half-precision accumulator (2049
// rounds to even, 2048, twice), to 2050 in float32: the emulation must give
// 2048·(1/3).
func TestGGMLAttentionF16Accumulator(t *testing.T) {
	vals := []float32{2048, 1, 1}
	m, kv, pages := ggmlAttnModel(t, 1, 1, 4, 3, 2, func(p, i int) (float32, float32) { return 0, vals[p] })
	m.s.size(&m.Config, 1)
	m.s.q = []float32{0.5, -1, 2, 3}
	m.s.att = make([]float32, 4)
	m.attend(0, kv, []Seq{{Tokens: []int32{0}, Pos: 2, Pages: pages}})
	want := float32(2048) * (1 / float32(3))
	for d, got := range m.s.att {
		if got != want {
			t.Errorf("att[%d] = %v, want %v (F16 accumulator)", d, got, want)
		}
	}
}

// TestGGMLAttentionNearExact compares the emulation with float64 causal
// attention on random numbers (grouped heads, several pages, a chunk after
// cached positions, a dimension with whole 64-element steps and a tail):
// it may differ only by the half-precision rounding of Q and the
// accumulator, never by a wrong key, head or position.
func TestGGMLAttentionNearExact(t *testing.T) {
	const heads, kvHeads, hd, pos, n, ps = 4, 2, 72, 30, 9, 8
	rng := rand.New(rand.NewPCG(5, 6))
	type kvPair struct{ k, v float32 }
	rows := map[[2]int]kvPair{}
	m, kv, pages := ggmlAttnModel(t, heads, kvHeads, hd, pos+n, ps, func(p, i int) (float32, float32) {
		r := kvPair{float32(rng.NormFloat64()), float32(rng.NormFloat64())}
		rows[[2]int{p, i}] = r
		return r.k, r.v
	})
	c := &m.Config
	m.s.size(c, n)
	m.s.q = make([]float32, n*c.QDim())
	m.s.att = make([]float32, n*c.QDim())
	for i := range m.s.q {
		m.s.q[i] = float32(rng.NormFloat64())
	}
	m.attend(0, kv, []Seq{{Tokens: make([]int32, n), Pos: pos, Pages: pages}})
	f16 := func(x float32) float64 { return float64(kernels.F16ToF32(kernels.F32ToF16(x))) }
	worst := 0.0
	for b := 0; b < n; b++ {
		for h := 0; h < heads; h++ {
			g := h / (heads / kvHeads)
			sc := make([]float64, pos+b+1)
			mx := math.Inf(-1)
			for j := range sc {
				for d := 0; d < hd; d++ {
					sc[j] += float64(m.s.q[b*c.QDim()+h*hd+d]) * f16(rows[[2]int{j, g*hd + d}].k)
				}
				sc[j] /= math.Sqrt(hd)
				mx = math.Max(mx, sc[j])
			}
			sum := 0.0
			for j := range sc {
				sc[j] = math.Exp(sc[j] - mx)
				sum += sc[j]
			}
			for d := 0; d < hd; d++ {
				want := 0.0
				for j := range sc {
					want += sc[j] / sum * f16(rows[[2]int{j, g*hd + d}].v)
				}
				worst = math.Max(worst, math.Abs(float64(m.s.att[b*c.QDim()+h*hd+d])-want))
			}
		}
	}
	// Outputs are O(1): half-precision steps near 1 are 1e-3, a few of
	// them accumulate over 39 positions; a wrong key or head is O(0.1).
	if worst > 1e-2 {
		t.Errorf("max |emulated attention − exact| = %g", worst)
	}
	if worst == 0 {
		t.Errorf("emulated attention equals float64 attention exactly: the half-precision rounding is missing")
	}
}
