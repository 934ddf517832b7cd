package model

import (
	"math"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kernels"
)

// An emulation of the numerics of ggml's CPU flash attention on an F16 KV
// cache for steps of fewer than ggmlFATile tokens (its one-chunk path),
// so tests can compare with llama.cpp's default references op for op
// (Options.GGMLFlashAttention). Per (query, head) it walks the visible
// positions in order, as ggml does:
//
//	s  = F32(dotF16(F16(q), k)) · scale   (softcap when set)
//	on a new maximum M: acc = F16(acc · e^(Mold−M)), S = S·e^(Mold−M) + 1, acc += v
//	otherwise:          w = e^(s−M), S = S + w, acc = F16(acc + v·w)
//	out = F32(acc) · (1/S)
//
// The accumulator acc is kept in half precision, rounded after every
// update; that rounding is what this path reproduces and the production
// path (F32 products and accumulation) does not. The dot product follows
// ggml_vec_dot_f16's AVX-512 order: four 16-lane float32 accumulators over
// whole 64-element steps, reduced pairwise, the tail added in float64.

// ggmlFATile is the batch size from which ggml takes its tiled path (F32
// Q and accumulators), which the production attention approximates.
const ggmlFATile = 64

// attendGGML computes s.att for every stacked token of layer li with the
// one-chunk emulation. kv must be F16.
func (m *Model) attendGGML(li int, kv KVStore, seqs []Seq) {
	c := &m.Config
	type job struct{ seq, head, first int }
	var jobs []job
	first := 0
	for si, sq := range seqs {
		for h := 0; h < c.Heads; h++ {
			jobs = append(jobs, job{si, h, first})
		}
		first += len(sq.Tokens)
	}
	m.pool.Parallel(len(jobs), func(i int) {
		j := jobs[i]
		m.attendHeadGGML(li, kv, &seqs[j.seq], j.head, j.first)
	})
}

// attendHeadGGML runs one head of one sequence, query by query.
func (m *Model) attendHeadGGML(li int, kv KVStore, sq *Seq, head, first int) {
	c := &m.Config
	s := &m.s
	hd, Q, K := c.HeadDim, c.QDim(), c.KVDim()
	ps := kv.PageSize()
	koff := head / (c.Heads / c.KVHeads) * hd
	scale := m.attnScale
	if c.Gemma {
		scale = 1 // llama.cpp scales gemma3's Q before attention, then uses 1
	}
	q16 := make([]uint16, hd)
	acc := make([]uint16, hd)
	for b := range sq.Tokens {
		t := first + b
		q := s.q[t*Q+head*hd : t*Q+(head+1)*hd]
		for d, x := range q {
			if c.Gemma {
				x *= m.attnScale
			}
			q16[d] = kernels.F32ToF16(x)
		}
		clear(acc)
		M, S := float32(math.Inf(-1)), float32(0)
		pos := sq.Pos + b
		for j := c.windowStart(li, pos); j <= pos; j++ {
			kp, vp := kv.PageF16(li, int(sq.Pages[j/ps]))
			row := (j%ps)*K + koff
			sc := dotF16GGML(kp[row:row+hd], q16) * scale
			if c.AttnSoftcap != 0 {
				sc = c.AttnSoftcap * float32(math.Tanh(float64(sc/c.AttnSoftcap)))
			}
			ms, vs := float32(1), float32(1)
			if sc > M {
				ms = expf(M - sc)
				M = sc
				for d, y := range acc {
					acc[d] = kernels.F32ToF16(kernels.F16ToF32(y) * ms)
				}
			} else {
				vs = expf(sc - M)
			}
			for d, x := range vp[row : row+hd] {
				acc[d] = kernels.F32ToF16(fma32(kernels.F16ToF32(x), vs, kernels.F16ToF32(acc[d])))
			}
			S = fma32(S, ms, vs)
		}
		inv := float32(0)
		if S != 0 {
			inv = 1 / S
		}
		out := s.att[t*Q+head*hd : t*Q+(head+1)*hd]
		for d, y := range acc {
			out[d] = kernels.F16ToF32(y) * inv
		}
	}
}

// useGGMLAttention reports whether a step of total tokens takes the
// emulation.
func (m *Model) useGGMLAttention(kv KVStore, total int) bool {
	return m.ggmlFA && kv.DType() == gguf.F16 && total < ggmlFATile
}

// dotF16GGML is ggml_vec_dot_f16's result on AVX-512: lanes l of four
// accumulators take elements i ≡ 16a+l (mod 64) of the whole 64-element
// steps; the accumulators are added 0+2, 1+3, then together, the 16 lanes
// reduced as _mm512_reduce_add_ps does (halves, then quarters, ...), and
// the tail added in float64. Products of two halves are exact in float32,
// so each fused multiply-add is a plain float32 add of the product.
func dotF16GGML(x, y []uint16) float32 {
	n := len(x)
	np := n &^ 63
	var acc [4][16]float32
	for i := 0; i < np; i += 64 {
		for a := 0; a < 4; a++ {
			for l := 0; l < 16; l++ {
				k := i + 16*a + l
				acc[a][l] += kernels.F16ToF32(x[k]) * kernels.F16ToF32(y[k])
			}
		}
	}
	var sum float64
	if np > 0 {
		var r [16]float32
		for l := range r {
			r[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l])
		}
		for w := 8; w >= 1; w /= 2 {
			for l := 0; l < w; l++ {
				r[l] += r[l+w]
			}
		}
		sum = float64(r[0])
	}
	for i := np; i < n; i++ {
		sum += float64(kernels.F16ToF32(x[i]) * kernels.F16ToF32(y[i]))
	}
	return float32(sum)
}

// fma32 is a·b + c rounded once to float32 (up to the rare double rounding
// through float64).
func fma32(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}

// expf is e^x in float32, as libm's expf (correctly rounded here, within
// an ulp there).
func expf(x float32) float32 { return float32(math.Exp(float64(x))) }
