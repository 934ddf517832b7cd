package model

import (
	"math"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kernels"
)

// naiveModel is a straightforward float64 transformer used as the
// reference: whole-sequence, no pages, no batching, weights dequantized.
type naiveModel struct {
	c      Config
	tensor map[string][][]float64 // rows
}

func naiveLoad(t *testing.T, f *gguf.File, c Config) *naiveModel {
	t.Helper()
	nm := &naiveModel{c: c, tensor: map[string][][]float64{}}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		cols, rows := int(ti.Dims[0]), 1
		if len(ti.Dims) == 2 {
			rows = int(ti.Dims[1])
		}
		m, err := kernels.NewMatrix(ti.Type, rows, cols, f.TensorData(ti))
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]float32, cols)
		out := make([][]float64, rows)
		for r := range out {
			m.DequantizeRow(buf, r)
			out[r] = make([]float64, cols)
			for j, v := range buf {
				out[r][j] = float64(v)
			}
		}
		nm.tensor[ti.Name] = out
	}
	return nm
}

func (nm *naiveModel) w(name string) [][]float64 { return nm.tensor[name] }

func matvec(w [][]float64, x []float64) []float64 {
	out := make([]float64, len(w))
	for r, row := range w {
		for c, v := range row {
			out[r] += v * x[c]
		}
	}
	return out
}

func rmsnorm(x []float64, w []float64, eps float64) []float64 {
	ss := 0.0
	for _, v := range x {
		ss += v * v
	}
	s := 1 / math.Sqrt(ss/float64(len(x))+eps)
	out := make([]float64, len(x))
	for i := range x {
		out[i] = x[i] * s * w[i]
	}
	return out
}

// naiveFreq is the rotary frequency of pair i, written from the
// definitions independently of rope.go.
func naiveFreq(c Config, i int) float64 {
	f := 1 / math.Pow(c.RopeBase, float64(2*i)/float64(c.RopeDim))
	s := c.RopeScale
	switch s.Type {
	case "linear":
		return f / s.Factor
	case "llama3":
		period := 2 * math.Pi / f
		if period*s.HighFreqFactor < float64(s.OrigContext) {
			return f
		}
		if period*s.LowFreqFactor > float64(s.OrigContext) {
			return f / s.Factor
		}
		mix := (float64(s.OrigContext)/period - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
		return mix*f + (1-mix)*f/s.Factor
	}
	return f
}

// naiveRope rotates one head as complex numbers (x[a] + i·x[b]) × e^{iθ}.
func naiveRope(c Config, head []float64, pos int) {
	n := c.RopeDim / 2
	for i := 0; i < n; i++ {
		a, b := 2*i, 2*i+1
		if c.RopeStyle == RopeNeoX {
			a, b = i, i+n
		}
		z := complex(head[a], head[b]) * complex(math.Cos(float64(pos)*naiveFreq(c, i)), math.Sin(float64(pos)*naiveFreq(c, i)))
		head[a], head[b] = real(z), imag(z)
	}
}

// logits returns the logits of every position of tokens.
func (nm *naiveModel) logits(tokens []int32) [][]float64 {
	c := nm.c
	n := len(tokens)
	x := make([][]float64, n)
	for i, tok := range tokens {
		x[i] = append([]float64(nil), nm.w("token_embd.weight")[tok]...)
	}
	hd := c.HeadDim
	group := c.Heads / c.KVHeads
	for l := 0; l < c.Layers; l++ {
		p := "blk." + itoa(l) + "."
		qs, ks, vs := make([][]float64, n), make([][]float64, n), make([][]float64, n)
		for i := range x {
			h := rmsnorm(x[i], nm.w(p + "attn_norm.weight")[0], float64(c.NormEps))
			qs[i], ks[i], vs[i] = matvec(nm.w(p+"attn_q.weight"), h), matvec(nm.w(p+"attn_k.weight"), h), matvec(nm.w(p+"attn_v.weight"), h)
			if c.QKVBias {
				for j := range qs[i] {
					qs[i][j] += nm.w(p + "attn_q.bias")[0][j]
				}
				for j := range ks[i] {
					ks[i][j] += nm.w(p + "attn_k.bias")[0][j]
					vs[i][j] += nm.w(p + "attn_v.bias")[0][j]
				}
			}
			for h := 0; h < c.Heads; h++ {
				naiveRope(c, qs[i][h*hd:(h+1)*hd], i)
			}
			for h := 0; h < c.KVHeads; h++ {
				naiveRope(c, ks[i][h*hd:(h+1)*hd], i)
			}
		}
		for i := range x {
			att := make([]float64, c.Heads*hd)
			for h := 0; h < c.Heads; h++ {
				g := h / group
				sc := make([]float64, i+1)
				mx := math.Inf(-1)
				for j := 0; j <= i; j++ {
					for d := 0; d < hd; d++ {
						sc[j] += qs[i][h*hd+d] * ks[j][g*hd+d]
					}
					sc[j] /= math.Sqrt(float64(hd))
					if c.AttnSoftcap > 0 {
						sc[j] = float64(c.AttnSoftcap) * math.Tanh(sc[j]/float64(c.AttnSoftcap))
					}
					mx = math.Max(mx, sc[j])
				}
				sum := 0.0
				for j := range sc {
					sc[j] = math.Exp(sc[j] - mx)
					sum += sc[j]
				}
				for j := range sc {
					for d := 0; d < hd; d++ {
						att[h*hd+d] += sc[j] / sum * vs[j][g*hd+d]
					}
				}
			}
			o := matvec(nm.w(p+"attn_output.weight"), att)
			for j := range x[i] {
				x[i][j] += o[j]
			}
			h := rmsnorm(x[i], nm.w(p + "ffn_norm.weight")[0], float64(c.NormEps))
			gate, up := matvec(nm.w(p+"ffn_gate.weight"), h), matvec(nm.w(p+"ffn_up.weight"), h)
			for j := range gate {
				gate[j] = gate[j] / (1 + math.Exp(-gate[j])) * up[j]
			}
			d := matvec(nm.w(p+"ffn_down.weight"), gate)
			for j := range x[i] {
				x[i][j] += d[j]
			}
		}
	}
	out := nm.w("output.weight")
	if out == nil {
		out = nm.w("token_embd.weight")
	}
	res := make([][]float64, n)
	for i := range x {
		res[i] = matvec(out, rmsnorm(x[i], nm.w("output_norm.weight")[0], float64(c.NormEps)))
		for j, v := range res[i] {
			if c.FinalSoftcap > 0 {
				res[i][j] = float64(c.FinalSoftcap) * math.Tanh(v/float64(c.FinalSoftcap))
			}
		}
	}
	return res
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + itoa(i%10)
}
