package copymodel

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kernels"
)

// refModel is an independent float32 forward pass of a llama GGUF, written
// from the architecture's definition for cross-checking internal/model: it
// reads the hyper-parameters and tensors from the file, keeps the KV cache
// rounded to F16, and skips zero weights (the copy model is sparse).
type refModel struct {
	embd, heads, headDim, vocab int
	eps                         float32
	freqs                       []float64
	embed, output               *sparse
	outNorm                     []float32
	layers                      []refLayer
	// KV cache per layer: position-major rows of heads*headDim.
	k, v [][]float32
}

type refLayer struct {
	attnNorm, ffnNorm []float32
	q, k, v, o        *sparse
	gate, up, down    *sparse
}

// sparse is a row-major matrix keeping only non-zero entries.
type sparse struct {
	rows, cols int
	idx        [][]int32
	val        [][]float32
}

func (m *sparse) mul(out, x []float32) {
	for r := 0; r < m.rows; r++ {
		var s float32
		for i, c := range m.idx[r] {
			s += m.val[r][i] * x[c]
		}
		out[r] = s
	}
}

func (m *sparse) row(r int, out []float32) {
	clear(out)
	for i, c := range m.idx[r] {
		out[c] = m.val[r][i]
	}
}

func loadSparse(f *gguf.File, name string) (*sparse, error) {
	t, ok := f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("tensor %s missing", name)
	}
	cols, rows := int(t.Dims[0]), 1
	if len(t.Dims) > 1 {
		rows = int(t.Dims[1])
	}
	data := f.TensorData(t)
	m := &sparse{rows: rows, cols: cols, idx: make([][]int32, rows), val: make([][]float32, rows)}
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			var x float32
			switch t.Type {
			case gguf.F16:
				x = kernels.F16ToF32(binary.LittleEndian.Uint16(data[2*(r*cols+c):]))
			case gguf.F32:
				x = math.Float32frombits(binary.LittleEndian.Uint32(data[4*(r*cols+c):]))
			default:
				return nil, fmt.Errorf("tensor %s: type %s", name, t.Type)
			}
			if x != 0 {
				m.idx[r] = append(m.idx[r], int32(c))
				m.val[r] = append(m.val[r], x)
			}
		}
	}
	return m, nil
}

func loadVector(f *gguf.File, name string) ([]float32, error) {
	m, err := loadSparse(f, name)
	if err != nil {
		return nil, err
	}
	out := make([]float32, m.cols)
	m.row(0, out)
	return out, nil
}

func newRefModel(b []byte) (*refModel, error) {
	f, err := gguf.Parse(b)
	if err != nil {
		return nil, err
	}
	geti := func(k string) int { v, _ := f.Int("llama." + k); return int(v) }
	base, _ := f.Float("llama.rope.freq_base")
	eps, _ := f.Float("llama.attention.layer_norm_rms_epsilon")
	m := &refModel{embd: geti("embedding_length"), heads: geti("attention.head_count"), eps: float32(eps)}
	m.headDim = m.embd / m.heads
	for i := 0; i < m.headDim/2; i++ {
		m.freqs = append(m.freqs, math.Pow(base, -2*float64(i)/float64(m.headDim)))
	}
	if m.embed, err = loadSparse(f, "token_embd.weight"); err != nil {
		return nil, err
	}
	m.vocab = m.embed.rows
	if m.output, err = loadSparse(f, "output.weight"); err != nil {
		return nil, err
	}
	if m.outNorm, err = loadVector(f, "output_norm.weight"); err != nil {
		return nil, err
	}
	for i := 0; i < geti("block_count"); i++ {
		var l refLayer
		p := fmt.Sprintf("blk.%d.", i)
		for _, t := range []struct {
			name string
			dst  **sparse
		}{{"attn_q", &l.q}, {"attn_k", &l.k}, {"attn_v", &l.v}, {"attn_output", &l.o}, {"ffn_gate", &l.gate}, {"ffn_up", &l.up}, {"ffn_down", &l.down}} {
			if *t.dst, err = loadSparse(f, p+t.name+".weight"); err != nil {
				return nil, err
			}
		}
		if l.attnNorm, err = loadVector(f, p+"attn_norm.weight"); err != nil {
			return nil, err
		}
		if l.ffnNorm, err = loadVector(f, p+"ffn_norm.weight"); err != nil {
			return nil, err
		}
		m.layers = append(m.layers, l)
	}
	m.k = make([][]float32, len(m.layers))
	m.v = make([][]float32, len(m.layers))
	return m, nil
}

func (m *refModel) rmsNorm(out, x, w []float32) {
	var ss float32
	for _, v := range x {
		ss += v * v
	}
	s := float32(1 / math.Sqrt(float64(ss/float32(len(x))+m.eps)))
	for i := range x {
		out[i] = x[i] * s * w[i]
	}
}

func (m *refModel) rope(x []float32, pos int) {
	for h := 0; h < len(x)/m.headDim; h++ {
		v := x[h*m.headDim : (h+1)*m.headDim]
		for i, f := range m.freqs {
			sn, cs := math.Sincos(float64(pos) * f)
			c, s := float32(cs), float32(sn)
			a, b := v[2*i], v[2*i+1]
			v[2*i], v[2*i+1] = a*c-b*s, a*s+b*c
		}
	}
}

func roundF16(x []float32) {
	for i, v := range x {
		x[i] = kernels.F16ToF32(kernels.F32ToF16(v))
	}
}

// step runs one token at the next position and returns its logits.
func (m *refModel) step(tok int32) []float32 {
	pos := len(m.k[0]) / m.embd
	x := make([]float32, m.embd)
	m.embed.row(int(tok), x)
	xn := make([]float32, m.embd)
	q := make([]float32, m.embd)
	k := make([]float32, m.embd)
	v := make([]float32, m.embd)
	att := make([]float32, m.embd)
	out := make([]float32, m.embd)
	scale := float32(1 / math.Sqrt(float64(m.headDim)))
	for li, l := range m.layers {
		m.rmsNorm(xn, x, l.attnNorm)
		l.q.mul(q, xn)
		l.k.mul(k, xn)
		l.v.mul(v, xn)
		m.rope(q, pos)
		m.rope(k, pos)
		roundF16(k)
		roundF16(v)
		m.k[li] = append(m.k[li], k...)
		m.v[li] = append(m.v[li], v...)
		clear(att)
		scores := make([]float32, pos+1)
		for h := 0; h < m.heads; h++ {
			qh := q[h*m.headDim : (h+1)*m.headDim]
			mx := float32(math.Inf(-1))
			for j := 0; j <= pos; j++ {
				kh := m.k[li][j*m.embd+h*m.headDim:]
				var s float32
				for d, qv := range qh {
					s += qv * kh[d]
				}
				scores[j] = s * scale
				mx = max(mx, scores[j])
			}
			var sum float32
			for j := range scores {
				scores[j] = float32(math.Exp(float64(scores[j] - mx)))
				sum += scores[j]
			}
			ah := att[h*m.headDim : (h+1)*m.headDim]
			for j, p := range scores {
				vh := m.v[li][j*m.embd+h*m.headDim:]
				for d := range ah {
					ah[d] += p / sum * vh[d]
				}
			}
		}
		l.o.mul(out, att)
		for i := range x {
			x[i] += out[i]
		}
		m.rmsNorm(xn, x, l.ffnNorm)
		g := make([]float32, l.gate.rows)
		u := make([]float32, l.up.rows)
		l.gate.mul(g, xn)
		l.up.mul(u, xn)
		for i := range g {
			g[i] = g[i] / (1 + float32(math.Exp(float64(-g[i])))) * u[i]
		}
		l.down.mul(out, g)
		for i := range x {
			x[i] += out[i]
		}
	}
	m.rmsNorm(xn, x, m.outNorm)
	logits := make([]float32, m.vocab)
	m.output.mul(logits, xn)
	return logits
}

// argmax returns the best token and its lead over the runner-up.
func argmax(logits []float32) (int32, float32) {
	best, second := 0, -1
	for i := 1; i < len(logits); i++ {
		if logits[i] > logits[best] {
			best, second = i, best
		} else if second < 0 || logits[i] > logits[second] {
			second = i
		}
	}
	return int32(best), logits[best] - logits[second]
}
