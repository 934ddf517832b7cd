package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kernels"
)

// TestAttentionMatchesNaive fills pages with random keys and values and the
// query rows with random queries, runs attention alone, and compares it
// with a float64 causal grouped-query attention over the same numbers.
func TestAttentionMatchesNaive(t *testing.T) {
	for _, tc := range []struct {
		name               string
		heads, kvHeads, hd int
		pos, n, ps         int
		dtype              gguf.Type
	}{
		{"decode_gqa_f16", 6, 2, 16, 37, 1, 4, gguf.F16},
		{"prefill_chunk_after_cache_f32", 4, 4, 8, 20, 45, 16, gguf.F32},
		{"prefill_from_empty_mqa", 4, 1, 24, 0, 70, 1, gguf.F32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Heads: tc.heads, KVHeads: tc.kvHeads, HeadDim: tc.hd, Layers: 1}
			m := &Model{Config: c, attnScale: float32(1 / math.Sqrt(float64(tc.hd))), pool: kernels.NewPool(2), serial: kernels.NewPool(1)}
			m.bindAttention()
			total := tc.pos + tc.n
			nPages := (total + tc.ps - 1) / tc.ps
			kv, _ := NewSimpleKV(&c, nPages+3, tc.ps, tc.dtype)
			rng := rand.New(rand.NewPCG(4, 4))
			pages := pagesFor(rng, map[int32]bool{}, nPages, nPages+3)
			K := c.KVDim()
			keys := make([][]float64, total)
			vals := make([][]float64, total)
			for p := 0; p < total; p++ {
				keys[p], vals[p] = make([]float64, K), make([]float64, K)
				for i := 0; i < K; i++ {
					k, v := float32(rng.NormFloat64()), float32(rng.NormFloat64())
					slot := (p%tc.ps)*K + i
					if tc.dtype == gguf.F16 {
						kp, vp := kv.PageF16(0, int(pages[p/tc.ps]))
						kp[slot], vp[slot] = kernels.F32ToF16(k), kernels.F32ToF16(v)
						k, v = kernels.F16ToF32(kp[slot]), kernels.F16ToF32(vp[slot])
					} else {
						kp, vp := kv.PageF32(0, int(pages[p/tc.ps]))
						kp[slot], vp[slot] = k, v
					}
					keys[p][i], vals[p][i] = float64(k), float64(v)
				}
			}
			m.s.size(&c, tc.n)
			m.s.q = make([]float32, tc.n*c.QDim())
			m.s.att = make([]float32, tc.n*c.QDim())
			for i := range m.s.q {
				m.s.q[i] = float32(rng.NormFloat64())
			}
			seqs := []Seq{{Tokens: make([]int32, tc.n), Pos: tc.pos, Pages: pages}}
			m.attend(0, kv, seqs)

			worst := 0.0
			hd := tc.hd
			for i := 0; i < tc.n; i++ {
				for h := 0; h < tc.heads; h++ {
					g := h / (tc.heads / tc.kvHeads)
					q := m.s.q[i*c.QDim()+h*hd:]
					sc := make([]float64, tc.pos+i+1)
					mx := math.Inf(-1)
					for j := range sc {
						for d := 0; d < hd; d++ {
							sc[j] += float64(q[d]) * keys[j][g*hd+d]
						}
						sc[j] /= math.Sqrt(float64(hd))
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
							want += sc[j] / sum * vals[j][g*hd+d]
						}
						got := float64(m.s.att[i*c.QDim()+h*hd+d])
						worst = math.Max(worst, math.Abs(got-want))
					}
				}
			}
			if worst > 1e-5 {
				t.Errorf("max |attention − naive| = %g", worst)
			}
		})
	}
}

// TestConfigDefaults checks llama.cpp's defaults for absent optional keys.
func TestConfigDefaults(t *testing.T) {
	sh := testShape()
	sh.OmitOptionalKeys = true
	c, err := ConfigFromGGUF(buildFile(t, sh, gguf.F16, 1))
	if err != nil {
		t.Fatal(err)
	}
	if c.RopeBase != 10000 || c.RopeDim != c.HeadDim || c.HeadDim != sh.Embd/sh.Heads ||
		c.KVHeads != c.Heads || c.NormEps != 1e-5 || c.Vocab != sh.Vocab || c.RopeScale.Type != "none" {
		t.Errorf("config %+v: want rope base 10000, rope dims = head dim %d, kv heads = heads, eps 1e-5, vocab %d from token_embd",
			c, sh.Embd/sh.Heads, sh.Vocab)
	}
}
