package model

import (
	"fmt"
	"math"

	"github.com/bulkhead-llm/bulkhead/internal/kernels"
)

// moe is a mixture-of-experts FFN (qwen3moe): a router picks the top
// ExpertsUsed experts per token from a softmax, their weights are
// renormalized to sum to 1 (llama.cpp hard-wires this for qwen3moe), and
// the token's FFN output is the weighted sum of those experts' SwiGLU FFNs.
//
// Expert matrices are row views of the mapped 3-D tensors (no copy). Tokens
// are grouped by expert so that each expert runs one batched matmul; the
// kernels' per-(row, token) results do not depend on the batch (I8), and
// each token sums its experts in rank order, so a token's output does not
// depend on which other tokens share the step.
type moe struct {
	router         *kernels.Matrix // [experts rows × embd]
	gate, up, down []*kernels.Matrix

	// Step buffers, grown only (the model serialises Forward).
	logits, w []float32
	p         []float32 // one token's router probabilities
	sel       []int
	xe, ge    []float32
	ue, he    []float32
	ye, res   []float32
	rows      []int
}

// experts loads a [cols, rows, n] tensor as n matrices of rows × cols.
func (ld *loader) experts(name string, cols, rows, n int) []*kernels.Matrix {
	t := ld.tensor(name, cols, rows, n)
	if t == nil {
		return nil
	}
	all, err := kernels.NewMatrix(t.Type, rows*n, cols, ld.f.TensorData(t))
	if err != nil {
		ld.err = fmt.Errorf("%w: tensor %q (%s): %v", ErrUnsupported, name, t.Type, err)
		return nil
	}
	rb, _ := t.Type.RowBytes(cols)
	out := make([]*kernels.Matrix, n)
	for e := range out {
		out[e], _ = kernels.NewMatrix(t.Type, rows, cols, all.Data[e*rows*rb:(e+1)*rows*rb])
	}
	return out
}

func (ld *loader) moe(p string, c *Config) *moe {
	return &moe{
		router: ld.matrix(p+"ffn_gate_inp.weight", c.Embd, c.Experts),
		gate:   ld.experts(p+"ffn_gate_exps.weight", c.Embd, c.ExpertFF, c.Experts),
		up:     ld.experts(p+"ffn_up_exps.weight", c.Embd, c.ExpertFF, c.Experts),
		down:   ld.experts(p+"ffn_down_exps.weight", c.ExpertFF, c.Embd, c.Experts),
	}
}

// route fills x.sel and x.w (total×k) from the router logits. With ggml
// set (Options.GGMLFloatMatMul) the softmax and the weight sum round as
// ggml's CPU ops do: the exponentials summed in float64 and multiplied by
// float32(1/sum) (ggml_compute_forward_soft_max_f32), the selected weights
// summed in float64 (ggml_vec_sum_f32) before the division; otherwise a
// float32 sum divides.
func (x *moe) route(c *Config, total int, ggml bool) {
	X, k := c.Experts, c.ExpertsUsed
	x.sel = grow(x.sel, total*k)
	x.w = grow(x.w, total*k)
	for t := 0; t < total; t++ {
		l := x.logits[t*X : (t+1)*X]
		mx := l[0]
		for _, v := range l {
			mx = max(mx, v)
		}
		var sum float32
		var sum64 float64
		x.p = grow(x.p, X)
		p := x.p
		for i, v := range l {
			p[i] = float32(math.Exp(float64(v - mx)))
			sum += p[i]
			sum64 += float64(p[i])
		}
		inv := float32(1 / sum64)
		for i := range p {
			if ggml {
				p[i] *= inv
			} else {
				p[i] /= sum
			}
		}
		var wsum float32
		var wsum64 float64
		for j := 0; j < k; j++ {
			best := -1
			for i := range p {
				if p[i] >= 0 && (best < 0 || p[i] > p[best]) {
					best = i
				}
			}
			x.sel[t*k+j], x.w[t*k+j] = best, p[best]
			wsum += p[best]
			wsum64 += float64(p[best])
			p[best] = -1
		}
		if ggml {
			wsum = float32(wsum64)
		}
		for j := 0; j < k; j++ {
			x.w[t*k+j] /= wsum
		}
	}
}

// moeFFN computes the expert FFN of the normalized activations s.xn into s.proj.
// nOp is the token count of llama.cpp's router product (matmul_ggml.go).
func (m *Model) moeFFN(x *moe, total, nOp int) {
	c := &m.Config
	s := &m.s
	E, F, k := c.Embd, c.ExpertFF, c.ExpertsUsed
	x.logits = grow(x.logits, total*c.Experts)
	m.matmul(x.logits, x.router, s.xn[:total*E], total, nOp)
	x.route(c, total, m.ggmlMM)
	x.res = grow(x.res, total*k*E)
	for e := 0; e < c.Experts; e++ {
		x.rows = x.rows[:0]
		for i, se := range x.sel[:total*k] {
			if se == e {
				x.rows = append(x.rows, i)
			}
		}
		n := len(x.rows)
		if n == 0 {
			continue
		}
		x.xe = grow(x.xe, n*E)
		for j, i := range x.rows {
			t := i / k
			copy(x.xe[j*E:(j+1)*E], s.xn[t*E:(t+1)*E])
		}
		x.ge, x.ue, x.he = grow(x.ge, n*F), grow(x.ue, n*F), grow(x.he, n*F)
		x.ye = grow(x.ye, n*E)
		// ggml's mul_mat_id takes vec_dot for every token: nOp 1.
		m.matmul(x.ge, x.gate[e], x.xe, n, 1)
		m.matmul(x.ue, x.up[e], x.xe, n, 1)
		m.swiglu(x.he, x.ge, x.ue, F)
		m.matmul(x.ye, x.down[e], x.he, n, 1)
		for j, i := range x.rows {
			copy(x.res[i*E:(i+1)*E], x.ye[j*E:(j+1)*E])
		}
	}
	out := s.proj[:total*E]
	for t := 0; t < total; t++ {
		o := out[t*E : (t+1)*E]
		for d := range o {
			o[d] = 0
		}
		for j := 0; j < k; j++ {
			w, r := x.w[t*k+j], x.res[(t*k+j)*E:(t*k+j+1)*E]
			for d := range o {
				o[d] += float32(w * r[d])
			}
		}
	}
}
