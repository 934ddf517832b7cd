package model

import (
	"math"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kernels"
)

// An emulation of the numerics of ggml's CPU flash attention on an F16 KV
// cache, so tests can compare with llama.cpp's default references op for
// op (Options.GGMLFlashAttention). ggml picks one of three paths by the
// shape of the step, and so does the emulation, per (query, head):
//
//   - fewer than ggmlFATile query tokens (decode, short prompts): the
//     one-chunk path, walking the visible positions in order:
//
//     s  = F32(dotF16(F16(q), k)) · scale   (softcap when set)
//     on a new maximum M: acc = F16(acc · e^(Mold−M)), S = S·e^(Mold−M) + 1, acc += v
//     otherwise:          w = e^(s−M), S = S + w, acc = F16(acc + v·w)
//     out = F32(acc) · (1/S)
//
//     The accumulator acc is kept in half precision, rounded after every
//     update. The dot product follows ggml_vec_dot_f16's AVX-512 order.
//
//   - one query token whose padded KV view (the used cells rounded up to
//     ggmlKVPad) holds at least ggmlSplitKV cells: the split-KV path. The
//     view is cut into ggmlThreads equal chunks, each runs the one-chunk
//     walk over its visible positions (its own M, S and F16 accumulator),
//     and the chunks are merged in order: M' = max(M, Mc),
//     acc = fma(acc, e^(M−M'), accc·e^(Mc−M')), S likewise, out = acc·(1/S).
//     On the zoo this is every decode step after the 296-token prompt.
//
//   - ggmlFATile or more query tokens (a long prompt): the tiled path, in
//     float32 throughout. Keys are taken in tiles of ggmlFATile aligned
//     cells; a score is a plain fused multiply-add chain over the head
//     dimension of F32 q and F32(k), times scale. Per tile: M' = max(M,
//     tile max); on a new maximum acc and S are scaled by expf(M−M'); the
//     tile's weights are ggml_v_expf(s−M') (vexpf), their sum taken 16 lanes
//     at a time (halving reductions) in float64 and added to S; acc[d] is a
//     fused multiply-add chain over the tile's keys in order. out = acc·(1/S).

// ggmlFATile is the batch size from which ggml takes its tiled path (F32
// Q and accumulators), and the tiled path's key tile.
const ggmlFATile = 64

// ggmlKVPad, ggmlSplitKV and ggmlThreads describe the llama-server runs
// behind the zoo references: the KV view a step attends over is the used
// cells rounded up to 256, a single-token step over a view of 512 or more
// cells splits it across the threads, and there were 2 (-t 2).
const (
	ggmlKVPad   = 256
	ggmlSplitKV = 512
	ggmlThreads = 2
)

// attendGGML computes s.att for every stacked token of layer li with the
// emulation of the path ggml takes for a step of that many tokens. kv
// must be F16.
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
	total := first
	m.pool.Parallel(len(jobs), func(i int) {
		j := jobs[i]
		m.attendHeadGGML(li, kv, &seqs[j.seq], j.head, j.first, total)
	})
}

// ggmlHead reads one (sequence, head)'s keys and values of layer li.
type ggmlHead struct {
	kv   KVStore
	sq   *Seq
	li   int
	koff int
	hd   int
	K    int
}

func (g *ggmlHead) rows(j int) (k, v []uint16) {
	ps := g.kv.PageSize()
	kp, vp := g.kv.PageF16(g.li, int(g.sq.Pages[j/ps]))
	row := (j%ps)*g.K + g.koff
	return kp[row : row+g.hd], vp[row : row+g.hd]
}

// attendHeadGGML runs one head of one sequence, query by query.
func (m *Model) attendHeadGGML(li int, kv KVStore, sq *Seq, head, first, total int) {
	c := &m.Config
	s := &m.s
	hd, Q := c.HeadDim, c.QDim()
	g := &ggmlHead{kv: kv, sq: sq, li: li, koff: head / (c.Heads / c.KVHeads) * hd, hd: hd, K: c.KVDim()}
	scale := m.attnScale
	if c.Gemma {
		scale = 1 // llama.cpp scales gemma3's Q before attention, then uses 1
	}
	q32 := make([]float32, hd)
	q16 := make([]uint16, hd)
	acc := make([]uint16, hd)
	for b := range sq.Tokens {
		t := first + b
		for d, x := range s.q[t*Q+head*hd : t*Q+(head+1)*hd] {
			if c.Gemma {
				x *= m.attnScale
			}
			q32[d] = x
			q16[d] = kernels.F32ToF16(x)
		}
		out := s.att[t*Q+head*hd : t*Q+(head+1)*hd]
		pos := sq.Pos + b
		lo := c.windowStart(li, pos)
		nkv := (pos + ggmlKVPad) / ggmlKVPad * ggmlKVPad
		switch {
		case total >= ggmlFATile && hd%16 == 0: // ggml tiles only whole 16-lane rows
			m.tiledGGML(g, q32, lo, pos, scale, out)
		case total == 1 && nkv >= ggmlSplitKV:
			m.splitGGML(g, q16, acc, lo, pos, nkv, scale, out)
		default:
			_, S := m.chunkGGML(g, q16, acc, lo, pos, scale)
			inv := float32(0)
			if S != 0 {
				inv = 1 / S
			}
			for d, y := range acc {
				out[d] = kernels.F16ToF32(y) * inv
			}
		}
	}
}

// chunkGGML is the one-chunk walk over positions [lo, hi]: it leaves the
// half-precision accumulator in acc and returns the running maximum and
// sum (−Inf and 0 when the range is empty).
func (m *Model) chunkGGML(g *ggmlHead, q16, acc []uint16, lo, hi int, scale float32) (M, S float32) {
	c := &m.Config
	clear(acc)
	M = float32(math.Inf(-1))
	for j := lo; j <= hi; j++ {
		kr, vr := g.rows(j)
		sc := dotF16GGML(kr, q16) * scale
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
		for d, x := range vr {
			acc[d] = kernels.F32ToF16(fma32(kernels.F16ToF32(x), vs, kernels.F16ToF32(acc[d])))
		}
		S = fma32(S, ms, vs)
	}
	return M, S
}

// splitGGML is the split-KV path: the view of nkv cells in ggmlThreads
// chunks, each walked by chunkGGML, merged in chunk order.
func (m *Model) splitGGML(g *ggmlHead, q16, acc []uint16, lo, pos, nkv int, scale float32, out []float32) {
	size := (nkv + ggmlThreads - 1) / ggmlThreads
	Mf, Sf := float32(math.Inf(-1)), float32(0)
	clear(out)
	for c0 := 0; c0 < nkv; c0 += size {
		Mc, Sc := m.chunkGGML(g, q16, acc, max(lo, c0), min(pos, c0+size-1), scale)
		if Sc == 0 {
			continue
		}
		Mn := max(Mf, Mc)
		so, sn := expf(Mf-Mn), expf(Mc-Mn)
		for d, y := range acc {
			out[d] = fma32(out[d], so, kernels.F16ToF32(y)*sn)
		}
		Sf = fma32(Sf, so, Sc*sn)
		Mf = Mn
	}
	if Sf != 0 {
		inv := 1 / Sf
		for d := range out {
			out[d] *= inv
		}
	}
}

// tiledGGML is the tiled path for one query over positions [lo, pos].
func (m *Model) tiledGGML(g *ggmlHead, q []float32, lo, pos int, scale float32, out []float32) {
	c := &m.Config
	var sc, p [ggmlFATile]float32
	M, S := float32(math.Inf(-1)), float32(0)
	clear(out)
	for t0 := lo / ggmlFATile * ggmlFATile; t0 <= pos; t0 += ggmlFATile {
		tmax := float32(math.Inf(-1))
		for k := range sc {
			sc[k] = float32(math.Inf(-1))
			j := t0 + k
			if j < lo || j > pos {
				continue
			}
			kr, _ := g.rows(j)
			var dot float32
			for d, x := range kr {
				dot = fma32(q[d], kernels.F16ToF32(x), dot)
			}
			v := dot * scale
			if c.AttnSoftcap != 0 {
				v = c.AttnSoftcap * float32(math.Tanh(float64(v/c.AttnSoftcap)))
			}
			sc[k] = v
			tmax = max(tmax, v)
		}
		Mn := max(M, tmax)
		if Mn > M {
			ms := expf(M - Mn)
			for d := range out {
				out[d] *= ms
			}
			S *= ms
		}
		M = Mn
		var sum float64
		for v := 0; v < ggmlFATile; v += 16 {
			var r [16]float32
			for l := range r {
				p[v+l] = vexpf(sc[v+l] - Mn)
				r[l] = p[v+l]
			}
			sum += float64(reduce16(&r))
		}
		S = float32(float64(S) + sum)
		for k, w := range p {
			if w == 0 {
				continue // fma(0, v, a) = a for the finite v of the cache
			}
			_, vr := g.rows(t0 + k)
			for d, x := range vr {
				out[d] = fma32(w, kernels.F16ToF32(x), out[d])
			}
		}
	}
	inv := float32(0)
	if S != 0 {
		inv = 1 / S
	}
	for d := range out {
		out[d] *= inv
	}
}

// reduce16 sums 16 lanes as _mm512_reduce_add_ps does: halves, then
// quarters, down to one lane.
func reduce16(r *[16]float32) float32 {
	for w := 8; w >= 1; w /= 2 {
		for l := 0; l < w; l++ {
			r[l] += r[l+w]
		}
	}
	return r[0]
}

// vexpf is ggml_v_expf's AVX-512 result for one lane: n = round(x·log2e)
// by the 1.5·2^23 shift, b = x − n·ln2 in two fused steps, a degree-5
// polynomial in b and b² with fused steps, scaled by 2^n; |n| > 192 gives
// 0 (n ≤ 0) or +Inf.
func vexpf(x float32) float32 {
	const shift = 0x1.8p23
	n := fma32(x, 0x1.715476p+0, shift) - shift
	b := fma32(-n, 0x1.7f7d1cp-20, fma32(-n, 0x1.62e4p-1, x))
	if math.Abs(float64(n)) > 192 {
		if n <= 0 {
			return 0
		}
		return float32(math.Inf(1))
	}
	u := b * b
	j := fma32(fma32(fma32(0x1.0e4020p-7, b, 0x1.573e2ep-5), u, fma32(0x1.555e66p-3, b, 0x1.fffdb6p-2)),
		u, fma32(0x1.ffffecp-1, b, 1))
	return float32(math.Ldexp(float64(j), int(n)))
}

// useGGMLAttention reports whether a step takes the emulation: with the
// option, on an F16 cache (all three of ggml's paths are emulated).
func (m *Model) useGGMLAttention(kv KVStore, total int) bool {
	return m.ggmlFA && kv.DType() == gguf.F16
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
