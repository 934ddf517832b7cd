package model

import (
	"math"

	"errors"
	"fmt"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kernels"
)

// ErrBadBatch is wrapped by Forward's errors about its arguments (a token
// outside the vocabulary, too few pages, a KV store of the wrong type).
var ErrBadBatch = errors.New("model: bad batch")

// pageCounter is implemented by stores that can say how many pages exist,
// so Forward can reject a page id beyond them instead of failing inside
// the store.
type pageCounter interface{ Pages() int }

// Forward runs one step over seqs: it writes each new token's keys and
// values into the sequence's pages and returns, per sequence, the logits
// of its last token (Vocab values) or, with AllLogits, of every new token
// (len(Tokens) rows of Vocab values, row-major).
//
// The returned slices belong to the model and stay valid until the next
// Forward call. A sequence's logits do not depend on the other sequences
// in the step (see the package comment).
func (m *Model) Forward(kv KVStore, seqs []Seq) ([][]float32, error) {
	return m.ForwardLayers(kv, seqs, nil)
}

// ForwardLayers is Forward with a callback after each layer: afterLayer(n)
// runs once layers [0, n) are done, their keys and values final in the
// pages. A prefill worker uses it to stream a prompt's KV layer by layer
// while later layers still compute. afterLayer must not block.
func (m *Model) ForwardLayers(kv KVStore, seqs []Seq, afterLayer func(n int)) ([][]float32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	total, err := m.checkBatch(kv, seqs)
	if err != nil {
		return nil, err
	}
	c := &m.Config
	s := &m.s
	s.size(c, total)
	E := c.Embd

	// Embeddings, positions and RoPE angles of the stacked tokens.
	t := 0
	for _, sq := range seqs {
		for i, tok := range sq.Tokens {
			m.embd.DequantizeRow(s.x[t*E:(t+1)*E], int(tok))
			s.pos[t] = sq.Pos + i
			if m.ggmlTheta != 0 {
				ggmlRopeAngles(s.ropeCS[t*c.RopeDim:(t+1)*c.RopeDim], m.ggmlTheta, sq.Pos+i)
			} else {
				ropeAngles(s.ropeCS[t*c.RopeDim:(t+1)*c.RopeDim], m.ropeFreqs, sq.Pos+i)
			}
			if m.ropeSWA != nil {
				if m.ggmlThetaSWA != 0 {
					ggmlRopeAngles(s.ropeCSLocal[t*c.RopeDim:(t+1)*c.RopeDim], m.ggmlThetaSWA, sq.Pos+i)
				} else {
					ropeAngles(s.ropeCSLocal[t*c.RopeDim:(t+1)*c.RopeDim], m.ropeSWA, sq.Pos+i)
				}
			}
			if c.Gemma {
				scaleBy(s.x[t*E:(t+1)*E], float32(math.Sqrt(float64(E))))
			}
			t++
		}
	}

	for li := range m.layers {
		m.layer(li, kv, seqs, total)
		if afterLayer != nil {
			afterLayer(li + 1)
		}
	}
	return m.logits(seqs, total), nil
}

// checkBatch validates seqs against the model and the store and returns
// the number of stacked tokens.
func (m *Model) checkBatch(kv KVStore, seqs []Seq) (int, error) {
	if kv == nil {
		return 0, fmt.Errorf("%w: nil KV store", ErrBadBatch)
	}
	if dt := kv.DType(); dt != gguf.F16 && dt != gguf.F32 {
		return 0, fmt.Errorf("%w: KV store type %s (want F16 or F32)", ErrBadBatch, dt)
	}
	ps := kv.PageSize()
	if ps <= 0 {
		return 0, fmt.Errorf("%w: KV page size %d", ErrBadBatch, ps)
	}
	nPages := -1
	if pc, ok := kv.(pageCounter); ok {
		nPages = pc.Pages()
	}
	total := 0
	for si, sq := range seqs {
		if len(sq.Tokens) == 0 {
			return 0, fmt.Errorf("%w: sequence %d has no tokens", ErrBadBatch, si)
		}
		if sq.Pos < 0 {
			return 0, fmt.Errorf("%w: sequence %d starts at position %d", ErrBadBatch, si, sq.Pos)
		}
		end := sq.Pos + len(sq.Tokens)
		if need := (end + ps - 1) / ps; len(sq.Pages) < need {
			return 0, fmt.Errorf("%w: sequence %d reaches position %d and needs %d pages of %d, has %d",
				ErrBadBatch, si, end-1, need, ps, len(sq.Pages))
		}
		for _, p := range sq.Pages[:(end+ps-1)/ps] {
			if p < 0 || (nPages >= 0 && int(p) >= nPages) {
				return 0, fmt.Errorf("%w: sequence %d names page %d outside the store", ErrBadBatch, si, p)
			}
		}
		for _, tok := range sq.Tokens {
			if tok < 0 || int(tok) >= m.Config.Vocab {
				return 0, fmt.Errorf("%w: sequence %d: token %d outside the vocabulary [0, %d)", ErrBadBatch, si, tok, m.Config.Vocab)
			}
		}
		total += len(sq.Tokens)
	}
	if total == 0 {
		return 0, fmt.Errorf("%w: no sequences", ErrBadBatch)
	}
	return total, nil
}

// layer runs transformer block li over the stacked activations s.x.
func (m *Model) layer(li int, kv KVStore, seqs []Seq, total int) {
	c := &m.Config
	s := &m.s
	l := &m.layers[li]
	E, Q, K := c.Embd, c.QDim(), c.KVDim()

	for t := 0; t < total; t++ {
		kernels.RMSNorm(s.xn[t*E:(t+1)*E], s.x[t*E:(t+1)*E], l.attnNorm, c.NormEps)
	}
	m.matmul(s.q[:total*Q], l.wq, s.xn[:total*E], total, total)
	m.matmul(s.k[:total*K], l.wk, s.xn[:total*E], total, total)
	m.matmul(s.v[:total*K], l.wv, s.xn[:total*E], total, total)
	for t := 0; t < total; t++ {
		q, k, v := s.q[t*Q:(t+1)*Q], s.k[t*K:(t+1)*K], s.v[t*K:(t+1)*K]
		if l.bq != nil {
			addTo(q, l.bq)
			addTo(k, l.bk)
			addTo(v, l.bv)
		}
		if l.qNorm != nil {
			headNorm(q, c.HeadDim, l.qNorm, c.NormEps)
			headNorm(k, c.HeadDim, l.kNorm, c.NormEps)
		}
		cs := s.ropeCS[t*c.RopeDim : (t+1)*c.RopeDim]
		if c.Local(li) && m.ropeSWA != nil {
			cs = s.ropeCSLocal[t*c.RopeDim : (t+1)*c.RopeDim]
		}
		rope := applyRope
		if m.ggmlTheta != 0 {
			rope = applyRopeGGML
		}
		rope(q, c.Heads, c.HeadDim, cs, c.RopeStyle)
		rope(k, c.KVHeads, c.HeadDim, cs, c.RopeStyle)
	}
	m.storeKV(li, kv, seqs)
	m.attend(li, kv, seqs)
	m.matmul(s.proj[:total*E], l.wo, s.att[:total*Q], total, total)
	if l.postAttn != nil {
		for t := 0; t < total; t++ {
			kernels.RMSNorm(s.proj[t*E:(t+1)*E], s.proj[t*E:(t+1)*E], l.postAttn, c.NormEps)
		}
	}
	addTo(s.x[:total*E], s.proj[:total*E])

	for t := 0; t < total; t++ {
		kernels.RMSNorm(s.xn[t*E:(t+1)*E], s.x[t*E:(t+1)*E], l.ffnNorm, c.NormEps)
	}
	// llama.cpp runs its last layer's FFN only for the tokens whose logits
	// it returns (that count picks ggml's product path, matmul_ggml.go).
	nOp := total
	if li == len(m.layers)-1 {
		nOp = outputRows(seqs)
	}
	if l.moe != nil {
		m.moeFFN(l.moe, total, nOp)
		addTo(s.x[:total*E], s.proj[:total*E])
		return
	}
	F := c.FF
	m.matmul(s.gate[:total*F], l.wGate, s.xn[:total*E], total, nOp)
	m.matmul(s.up[:total*F], l.wUp, s.xn[:total*E], total, nOp)
	if c.Gemma {
		geglu(s.hidden[:total*F], s.gate[:total*F], s.up[:total*F])
	} else {
		m.swiglu(s.hidden[:total*F], s.gate[:total*F], s.up[:total*F], F)
	}
	m.matmul(s.proj[:total*E], l.wDown, s.hidden[:total*F], total, nOp)
	if l.postFFN != nil {
		for t := 0; t < total; t++ {
			kernels.RMSNorm(s.proj[t*E:(t+1)*E], s.proj[t*E:(t+1)*E], l.postFFN, c.NormEps)
		}
	}
	addTo(s.x[:total*E], s.proj[:total*E])
}

// storeKV writes the new tokens' keys and values into their page slots.
func (m *Model) storeKV(li int, kv KVStore, seqs []Seq) {
	s := &m.s
	K := m.Config.KVDim()
	ps := kv.PageSize()
	f16 := kv.DType() == gguf.F16
	t := 0
	for _, sq := range seqs {
		for i := range sq.Tokens {
			p := sq.Pos + i
			page, off := int(sq.Pages[p/ps]), (p%ps)*K
			k, v := s.k[t*K:(t+1)*K], s.v[t*K:(t+1)*K]
			if f16 {
				kp, vp := kv.PageF16(li, page)
				kernels.F32ToF16Slice(kp[off:off+K], k)
				kernels.F32ToF16Slice(vp[off:off+K], v)
			} else {
				kp, vp := kv.PageF32(li, page)
				copy(kp[off:off+K], k)
				copy(vp[off:off+K], v)
			}
			t++
		}
	}
}

// logits applies the final norm and the output projection to the tokens
// whose logits were asked for.
func (m *Model) logits(seqs []Seq, total int) [][]float32 {
	c := &m.Config
	s := &m.s
	E, V := c.Embd, c.Vocab
	s.outRows = s.outRows[:0]
	t := 0
	for _, sq := range seqs {
		if sq.AllLogits {
			for i := range sq.Tokens {
				s.outRows = append(s.outRows, t+i)
			}
		} else {
			s.outRows = append(s.outRows, t+len(sq.Tokens)-1)
		}
		t += len(sq.Tokens)
	}
	n := len(s.outRows)
	s.xOut = grow(s.xOut, n*E)
	for i, r := range s.outRows {
		kernels.RMSNorm(s.xOut[i*E:(i+1)*E], s.x[r*E:(r+1)*E], m.outNorm, c.NormEps)
	}
	s.logits = grow(s.logits, n*V)
	m.matmul(s.logits, m.output, s.xOut, n, n)
	softcap(s.logits[:n*V], c.FinalSoftcap)
	s.result = grow(s.result, len(seqs))
	row := 0
	for i, sq := range seqs {
		k := 1
		if sq.AllLogits {
			k = len(sq.Tokens)
		}
		s.result[i] = s.logits[row*V : (row+k)*V : (row+k)*V]
		row += k
	}
	return s.result
}

// outputRows is the number of tokens of seqs whose logits are returned.
func outputRows(seqs []Seq) int {
	n := 0
	for _, sq := range seqs {
		if sq.AllLogits {
			n += len(sq.Tokens)
		} else {
			n++
		}
	}
	return n
}

func addTo(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}

// headNorm RMS-normalizes each head of x (heads of d values) in place with
// weight w, as qwen3 does to Q and K before rope.
func headNorm(x []float32, d int, w []float32, eps float32) {
	for h := 0; h+d <= len(x); h += d {
		kernels.RMSNorm(x[h:h+d], x[h:h+d], w, eps)
	}
}

// scaleBy multiplies x by a in place (gemma3's input embedding scale).
func scaleBy(x []float32, a float32) {
	for i := range x {
		x[i] *= a
	}
}
