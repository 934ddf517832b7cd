package model

import (
	"fmt"
	"math"
	"sync"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kernels"
)

// Options tune a loaded model.
type Options struct {
	// Threads is the number of worker threads for matmuls and attention;
	// 0 or less means one.
	Threads int
	// GGMLFlashAttention makes steps of fewer than 64 tokens on an F16 KV
	// cache attend as ggml's CPU flash attention does (attention_ggml.go):
	// slower, for comparing with llama.cpp's default references.
	GGMLFlashAttention bool
	// GGMLRope computes rope angles and rotations with ggml's float32
	// rounding (ggmlRopeAngles, applyRopeGGML) instead of float64 angles,
	// for test comparisons with llama.cpp. Ignored for files with rope
	// scaling or per-pair frequency factors.
	GGMLRope bool
	// GGMLFloatMatMul computes products with F32 and F16 weights as
	// ggml's CPU backend does (matmul_ggml.go: F16-rounded activations,
	// tinyBLAS or vec_dot order by the operation's token count), for test
	// comparisons with llama.cpp. Slow; quantized matrices are unaffected.
	GGMLFloatMatMul bool
	// GGMLRepack computes products with Q4_0, IQ4_NL, Q4_K and Q2_K weights
	// in the order of the kernels llama.cpp's CPU backend repacks them for
	// on an AVX-512 x86 machine (kernels.MatMulGGMLRepack: GEMM for the
	// first n − n%4 tokens of an operation, GEMV for the rest and for MoE
	// experts), for test comparisons with llama.cpp. Slow.
	GGMLRepack bool
}

// layer holds one transformer block's weights.
type layer struct {
	attnNorm, ffnNorm []float32
	wq, wk, wv, wo    *kernels.Matrix
	bq, bk, bv        []float32 // nil unless Config.QKVBias
	qNorm, kNorm      []float32 // per-head norm weights [HeadDim]; nil unless Config.QKNorm
	postAttn, postFFN []float32 // gemma3's norms of the attention and FFN outputs
	moe               *moe      // non-nil for mixture-of-experts layers (no wGate/wUp/wDown)
	wGate, wUp, wDown *kernels.Matrix
}

// Model is a loaded transformer. Its weights are views over the GGUF file,
// which must stay open (mapped) while the model is used.
//
// Forward calls are serialised by an internal lock: the model owns the
// scratch buffers of one step.
type Model struct {
	Config Config

	embd      *kernels.Matrix
	outNorm   []float32
	output    *kernels.Matrix
	layers    []layer
	ropeFreqs []float64
	ropeSWA   []float64 // local layers' frequencies (gemma3)
	attnScale float32
	ggmlFA    bool // Options.GGMLFlashAttention
	ggmlMM    bool // Options.GGMLFloatMatMul
	ggmlRP    bool // Options.GGMLRepack
	// ggmlTheta, ggmlThetaSWA: the float32 angle ratios of Options.GGMLRope
	// (0 when off).
	ggmlTheta, ggmlThetaSWA float32
	weightSize              int64 // bytes of the matrices one decode token reads

	pool   *kernels.Pool
	serial *kernels.Pool // one thread, for matmuls inside a pool task
	mu     sync.Mutex

	gatherFn, attendFn func(i int) // see bindAttention
	gatherAttendFn     func(i int)
	s                  scratch
}

// Load builds a model over f, checking every tensor's presence, type and
// shape against the metadata.
func Load(f *gguf.File, opts Options) (*Model, error) {
	cfg, err := ConfigFromGGUF(f)
	if err != nil {
		return nil, err
	}
	c := *cfg
	m := &Model{Config: c, attnScale: float32(1 / math.Sqrt(float64(c.HeadDim)))}
	ld := &loader{f: f}
	m.embd = ld.matrix("token_embd.weight", c.Embd, c.Vocab)
	m.outNorm = ld.vector("output_norm.weight", c.Embd)
	if c.TiedOutput {
		m.output = m.embd
	} else {
		m.output = ld.matrix("output.weight", c.Embd, c.Vocab)
	}
	var factors []float32
	if _, ok := f.Tensor("rope_freqs.weight"); ok {
		factors = ld.vector("rope_freqs.weight", c.RopeDim/2)
		for i, x := range factors {
			if !(x > 0) && ld.err == nil {
				ld.err = fmt.Errorf("%w: tensor \"rope_freqs.weight\"[%d] = %g, want a positive factor", ErrMalformed, i, x)
			}
		}
	}
	if c.Layers > len(f.Tensors) {
		return nil, fmt.Errorf("%w: %s.block_count %d but the file has only %d tensors", ErrMalformed, c.Arch, c.Layers, len(f.Tensors))
	}
	m.layers = make([]layer, c.Layers)
	for i := range m.layers {
		l := &m.layers[i]
		p := fmt.Sprintf("blk.%d.", i)
		l.attnNorm = ld.vector(p+"attn_norm.weight", c.Embd)
		if c.Fused {
			qkv := ld.fused(p+"attn_qkv.weight", c.Embd, c.QDim(), c.KVDim(), c.KVDim())
			l.wq, l.wk, l.wv = qkv[0], qkv[1], qkv[2]
		} else {
			l.wq = ld.matrix(p+"attn_q.weight", c.Embd, c.QDim())
			l.wk = ld.matrix(p+"attn_k.weight", c.Embd, c.KVDim())
			l.wv = ld.matrix(p+"attn_v.weight", c.Embd, c.KVDim())
		}
		if c.QKVBias {
			l.bq = ld.vector(p+"attn_q.bias", c.QDim())
			l.bk = ld.vector(p+"attn_k.bias", c.KVDim())
			l.bv = ld.vector(p+"attn_v.bias", c.KVDim())
		}
		if c.QKNorm {
			l.qNorm = ld.vector(p+"attn_q_norm.weight", c.HeadDim)
			l.kNorm = ld.vector(p+"attn_k_norm.weight", c.HeadDim)
		}
		l.wo = ld.matrix(p+"attn_output.weight", c.QDim(), c.Embd)
		l.ffnNorm = ld.vector(p+"ffn_norm.weight", c.Embd)
		if c.Gemma {
			l.postAttn = ld.vector(p+"post_attention_norm.weight", c.Embd)
			l.postFFN = ld.vector(p+"post_ffw_norm.weight", c.Embd)
		}
		if c.Experts > 0 {
			l.moe = ld.moe(p, &c)
		} else if c.Fused {
			gu := ld.fused(p+"ffn_up.weight", c.Embd, c.FF, c.FF)
			l.wGate, l.wUp = gu[0], gu[1]
		} else {
			l.wGate = ld.matrix(p+"ffn_gate.weight", c.Embd, c.FF)
			l.wUp = ld.matrix(p+"ffn_up.weight", c.Embd, c.FF)
		}
		if l.moe == nil {
			l.wDown = ld.matrix(p+"ffn_down.weight", c.FF, c.Embd)
		}
		if ld.err != nil {
			break
		}
	}
	if ld.err != nil {
		return nil, ld.err
	}
	m.ropeFreqs = ropeFreqs(&m.Config, factors)
	if c.SlidingWindow > 0 {
		swa := m.Config
		swa.RopeBase = c.RopeBaseSWA
		m.ropeSWA = ropeFreqs(&swa, factors)
	}
	if opts.GGMLRope && factors == nil && (c.RopeScale.Type == "" || c.RopeScale.Type == "none") {
		m.ggmlTheta = ggmlThetaScale(c.RopeBase, c.RopeDim)
		if m.ropeSWA != nil {
			m.ggmlThetaSWA = ggmlThetaScale(c.RopeBaseSWA, c.RopeDim)
		}
	}
	for _, l := range m.layers {
		for _, w := range []*kernels.Matrix{l.wq, l.wk, l.wv, l.wo, l.wGate, l.wUp, l.wDown} {
			if w != nil {
				m.weightSize += int64(len(w.Data))
			}
		}
		if l.moe != nil && len(l.moe.gate) > 0 {
			// A decode token reads the router and ExpertsUsed experts.
			m.weightSize += int64(len(l.moe.router.Data)) + int64(c.ExpertsUsed)*
				int64(len(l.moe.gate[0].Data)+len(l.moe.up[0].Data)+len(l.moe.down[0].Data))
		}
	}
	m.weightSize += int64(len(m.output.Data))
	m.pool = kernels.NewPool(max(opts.Threads, 1))
	m.ggmlFA = opts.GGMLFlashAttention
	m.ggmlMM = opts.GGMLFloatMatMul
	m.ggmlRP = opts.GGMLRepack
	m.serial = kernels.NewPool(1)
	m.bindAttention()
	return m, nil
}

// WeightBytes is the size of the weight matrices one decode step reads for
// each token (every layer's projections and the output projection), the
// numerator of the memory bandwidth a decode achieves.
func (m *Model) WeightBytes() int64 { return m.weightSize }

// Close stops the model's worker threads. The model must not be used
// afterwards; the GGUF file stays open (the caller closes it).
func (m *Model) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pool.Close()
	m.serial.Close()
}

// Threads is the number of worker threads.
func (m *Model) Threads() int { return m.pool.Threads() }

// loader fetches tensors by name, remembering the first error.
type loader struct {
	f   *gguf.File
	err error
}

// tensor finds name and checks its dims are exactly dims (GGML order).
func (ld *loader) tensor(name string, dims ...int) *gguf.TensorInfo {
	if ld.err != nil {
		return nil
	}
	t, ok := ld.f.Tensor(name)
	if !ok {
		ld.err = fmt.Errorf("%w: tensor %q is missing", ErrMalformed, name)
		return nil
	}
	same := len(t.Dims) == len(dims)
	for i := 0; same && i < len(dims); i++ {
		same = t.Dims[i] == uint64(dims[i])
	}
	if !same {
		ld.err = fmt.Errorf("%w: tensor %q has shape %v, want %v", ErrMalformed, name, t.Dims, dims)
		return nil
	}
	return t
}

func (ld *loader) matrix(name string, cols, rows int) *kernels.Matrix {
	t := ld.tensor(name, cols, rows)
	if t == nil {
		return nil
	}
	m, err := kernels.NewMatrix(t.Type, rows, cols, ld.f.TensorData(t))
	if err != nil {
		ld.err = fmt.Errorf("%w: tensor %q (%s): %v", ErrUnsupported, name, t.Type, err)
		return nil
	}
	return m
}

// vector reads a 1-D tensor of n elements into a float32 copy (norm
// weights and biases are small and read on every token).
func (ld *loader) vector(name string, n int) []float32 {
	t := ld.tensor(name, n)
	if t == nil {
		return nil
	}
	m, err := kernels.NewMatrix(t.Type, 1, n, ld.f.TensorData(t))
	if err != nil {
		ld.err = fmt.Errorf("%w: tensor %q (%s): %v", ErrUnsupported, name, t.Type, err)
		return nil
	}
	out := make([]float32, n)
	m.DequantizeRow(out, 0)
	return out
}
