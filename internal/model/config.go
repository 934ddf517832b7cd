package model

import (
	"errors"
	"fmt"
	"math"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// ErrUnsupported is wrapped by errors for models this package cannot run
// (an unknown architecture, a tensor type without kernels).
var ErrUnsupported = errors.New("model: unsupported")

// ErrMalformed is wrapped by errors for files whose metadata or tensors
// contradict each other (a missing tensor, a wrong shape, a bad value).
var ErrMalformed = errors.New("model: malformed")

// RopeStyle says which dimensions RoPE rotates together.
type RopeStyle int

const (
	// RopeNormal rotates adjacent pairs (2i, 2i+1): llama and mistral GGUF
	// files, whose Q and K rows were permuted at conversion.
	RopeNormal RopeStyle = iota
	// RopeNeoX rotates pairs (i, i+n/2): qwen2.
	RopeNeoX
)

func (s RopeStyle) String() string {
	if s == RopeNeoX {
		return "neox"
	}
	return "normal"
}

// RopeScaling selects how rotary frequencies are stretched for contexts
// longer than the training one.
type RopeScaling struct {
	// Type is "none", "linear" or "llama3".
	Type string
	// Factor divides frequencies (linear) or the low ones (llama3).
	Factor float64
	// Llama 3 parameters.
	LowFreqFactor, HighFreqFactor float64
	OrigContext                   int
}

// Config holds a model's hyper-parameters.
type Config struct {
	Arch      string
	Embd      int // n_embd, the width of the residual stream
	Layers    int
	Heads     int
	KVHeads   int
	HeadDim   int
	FF        int // feed-forward hidden width
	Vocab     int
	Context   int // training context length
	NormEps   float32
	RopeBase  float64
	RopeDim   int // leading dimensions of each head that RoPE rotates
	RopeStyle RopeStyle
	RopeScale RopeScaling
	QKVBias   bool // qwen2: Q, K and V projections carry biases
	QKNorm    bool // qwen3: per-head RMS norm of Q and K before rope
	Fused     bool // phi3: one attn_qkv matrix, ffn_up holding gate then up rows
	// Mixture of experts (qwen3moe): Experts FFNs of ExpertFF, ExpertsUsed per token.
	Experts, ExpertsUsed, ExpertFF int
	// Gemma 3: sliding-window layers (see Local) with their own rope base.
	Gemma         bool
	SlidingWindow int
	SWAPattern    int
	RopeBaseSWA   float64
	// Logit soft-capping (Gemma): x → cap·tanh(x/cap) on attention scores
	// and on the output logits; 0 means off.
	AttnSoftcap, FinalSoftcap float32
	TiedOutput                bool // the output projection reuses token_embd.weight
}

// KVDim is the width of one slot's key (or value) row: KVHeads × HeadDim.
func (c *Config) KVDim() int { return c.KVHeads * c.HeadDim }

// QDim is the width of the query row: Heads × HeadDim.
func (c *Config) QDim() int { return c.Heads * c.HeadDim }

// KVBytesPerToken is the KV-cache memory one token takes over all layers
// (keys and values) with elements of type t (F16 or F32): what a page pool
// is sized by.
func (c *Config) KVBytesPerToken(t gguf.Type) int {
	elem := 2
	if t == gguf.F32 {
		elem = 4
	}
	return 2 * c.Layers * c.KVDim() * elem
}

// archInfo lists what differs between the supported architectures.
type archInfo struct {
	rope    RopeStyle
	qkvBias bool
	qkNorm  bool
	fused   bool // phi3: attn_qkv and a gate+up ffn_up
	moe     bool // qwen3moe: routed expert FFNs
	gemma   bool // gemma3: see gemma.go
}

var archs = map[string]archInfo{
	"llama":    {RopeNormal, false, false, false, false, false},
	"mistral":  {RopeNormal, false, false, false, false, false},
	"qwen2":    {RopeNeoX, true, false, false, false, false},
	"qwen3":    {RopeNeoX, false, true, false, false, false},
	"phi3":     {RopeNeoX, false, false, true, false, false},
	"qwen3moe": {RopeNeoX, false, true, false, true, false},
	"gemma3":   {RopeNeoX, false, true, false, false, true},
}

// metaReader reads {arch}.* keys with defaults, remembering the first error.
type metaReader struct {
	f    *gguf.File
	arch string
	err  error
}

func (r *metaReader) int(key string, def int, required bool) int {
	full := r.arch + "." + key
	v, err := r.f.Int(full)
	if errors.Is(err, gguf.ErrNoKey) {
		if required && r.err == nil {
			r.err = fmt.Errorf("%w: metadata key %s is missing", ErrMalformed, full)
		}
		return def
	}
	if err == nil && (v <= 0 || v > math.MaxInt32) {
		err = fmt.Errorf("%s = %d out of range", full, v)
	}
	if err != nil {
		if r.err == nil {
			r.err = fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		return def
	}
	return int(v)
}

func (r *metaReader) float(key string, def float64) float64 {
	full := r.arch + "." + key
	v, err := r.f.Float(full)
	if errors.Is(err, gguf.ErrNoKey) {
		return def
	}
	if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
		err = fmt.Errorf("%s = %v is not finite", full, v)
	}
	if err != nil {
		if r.err == nil {
			r.err = fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		return def
	}
	return v
}

func (r *metaReader) str(key, def string) string {
	full := r.arch + "." + key
	v, err := r.f.String(full)
	if errors.Is(err, gguf.ErrNoKey) {
		return def
	}
	if err != nil {
		if r.err == nil {
			r.err = fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		return def
	}
	return v
}

// ConfigFromGGUF reads the hyper-parameters of f, filling absent optional
// keys with llama.cpp's defaults. The vocabulary size comes from
// {arch}.vocab_size, else tokenizer.ggml.tokens, else token_embd.weight.
func ConfigFromGGUF(f *gguf.File) (*Config, error) {
	arch, err := f.Architecture()
	if err != nil {
		return nil, fmt.Errorf("%w: general.architecture: %v", ErrMalformed, err)
	}
	info, ok := archs[arch]
	if !ok {
		return nil, fmt.Errorf("%w: architecture %q (supported: llama, mistral, qwen2, qwen3, phi3, qwen3moe, gemma3)", ErrUnsupported, arch)
	}
	r := &metaReader{f: f, arch: arch}
	c := &Config{Arch: arch, RopeStyle: info.rope, QKVBias: info.qkvBias, QKNorm: info.qkNorm, Fused: info.fused}
	c.Embd = r.int("embedding_length", 0, true)
	c.Layers = r.int("block_count", 0, true)
	c.Heads = r.int("attention.head_count", 0, true)
	c.FF = r.int("feed_forward_length", 0, true)
	c.Context = r.int("context_length", 2048, false)
	if r.err != nil {
		return nil, r.err
	}
	c.KVHeads = r.int("attention.head_count_kv", c.Heads, false)
	c.HeadDim = r.int("attention.key_length", c.Embd/c.Heads, false)
	vdim := r.int("attention.value_length", c.HeadDim, false)
	c.RopeDim = r.int("rope.dimension_count", c.HeadDim, false)
	c.NormEps = float32(r.float("attention.layer_norm_rms_epsilon", 1e-5))
	c.RopeBase = r.float("rope.freq_base", 10000)
	c.RopeScale = readRopeScaling(r, c.Context)
	c.Vocab = r.int("vocab_size", 0, false)
	if info.gemma {
		c.Gemma = true
		c.SlidingWindow = r.int("attention.sliding_window", 0, false)
		c.SWAPattern = r.int("attention.sliding_window_pattern", 6, false)
		c.RopeBaseSWA = r.float("rope.freq_base_swa", 10000)
		c.FinalSoftcap = float32(r.float("final_logit_softcapping", 0))
		c.AttnSoftcap = float32(r.float("attn_logit_softcapping", 0))
		if c.FinalSoftcap < 0 || c.AttnSoftcap < 0 {
			return nil, fmt.Errorf("%w: %s: negative logit soft-capping (final %g, attention %g)", ErrMalformed, arch, c.FinalSoftcap, c.AttnSoftcap)
		}
	}
	if info.moe {
		c.Experts = r.int("expert_count", 0, true)
		c.ExpertsUsed = r.int("expert_used_count", 0, true)
		c.ExpertFF = r.int("expert_feed_forward_length", c.FF, false)
		if r.err == nil && (c.Experts <= 0 || c.ExpertsUsed <= 0 || c.ExpertsUsed > c.Experts || c.ExpertFF <= 0) {
			return nil, fmt.Errorf("%w: %s: %d experts, %d used, expert FF %d", ErrMalformed, arch, c.Experts, c.ExpertsUsed, c.ExpertFF)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if c.Vocab == 0 {
		if toks, err := f.Strings("tokenizer.ggml.tokens"); err == nil && len(toks) > 0 {
			c.Vocab = len(toks)
		} else if t, ok := f.Tensor("token_embd.weight"); ok && len(t.Dims) == 2 && t.Dims[1] <= math.MaxInt32 {
			c.Vocab = int(t.Dims[1])
		}
	}
	_, hasOutput := f.Tensor("output.weight")
	c.TiedOutput = !hasOutput
	if vdim != c.HeadDim {
		return nil, fmt.Errorf("%w: %s.attention.value_length %d differs from key_length %d", ErrUnsupported, arch, vdim, c.HeadDim)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func readRopeScaling(r *metaReader, ctx int) RopeScaling {
	s := RopeScaling{Type: r.str("rope.scaling.type", "none"), Factor: 1}
	s.Factor = r.float("rope.scaling.factor", 1)
	if lin := r.float("rope.scale_linear", 0); lin != 0 && s.Type == "none" {
		s.Type, s.Factor = "linear", lin
	}
	s.LowFreqFactor = r.float("rope.scaling.low_freq_factor", 1)
	s.HighFreqFactor = r.float("rope.scaling.high_freq_factor", 4)
	s.OrigContext = r.int("rope.scaling.original_context_length", ctx, false)
	return s
}

// Validate checks the hyper-parameters are consistent and in range.
func (c *Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Embd <= 0 || c.Layers <= 0 || c.Heads <= 0 || c.FF <= 0:
		return bad("embedding_length %d, block_count %d, head_count %d and feed_forward_length %d must be positive", c.Embd, c.Layers, c.Heads, c.FF)
	case c.KVHeads <= 0 || c.Heads%c.KVHeads != 0:
		return bad("head_count %d is not a multiple of head_count_kv %d", c.Heads, c.KVHeads)
	case c.HeadDim <= 0:
		return bad("head dimension %d must be positive", c.HeadDim)
	case c.RopeDim <= 0 || c.RopeDim > c.HeadDim || c.RopeDim%2 != 0:
		return bad("rope.dimension_count %d must be even and in (0, %d]", c.RopeDim, c.HeadDim)
	case c.Vocab <= 0:
		return bad("vocabulary size unknown (no vocab_size, tokenizer.ggml.tokens or token_embd.weight)")
	case c.Context <= 0:
		return bad("context_length %d must be positive", c.Context)
	case !(c.NormEps > 0) || c.NormEps > 1:
		return bad("layer_norm_rms_epsilon %g must be in (0, 1]", c.NormEps)
	case !(c.RopeBase > 0):
		return bad("rope.freq_base %g must be positive", c.RopeBase)
	}
	switch c.RopeScale.Type {
	case "none", "":
	case "linear", "llama3":
		if !(c.RopeScale.Factor > 0) {
			return bad("rope.scaling.factor %g must be positive", c.RopeScale.Factor)
		}
		if c.RopeScale.Type == "llama3" && !(c.RopeScale.HighFreqFactor > c.RopeScale.LowFreqFactor && c.RopeScale.LowFreqFactor > 0) {
			return bad("llama3 rope scaling needs 0 < low_freq_factor %g < high_freq_factor %g", c.RopeScale.LowFreqFactor, c.RopeScale.HighFreqFactor)
		}
	default:
		return fmt.Errorf("%w: rope.scaling.type %q (want none, linear or llama3)", ErrUnsupported, c.RopeScale.Type)
	}
	return nil
}
