package copymodel

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kernels"
)

// Name is the model id the copy model is served under.
const Name = "bulkhead-copy"

// Defaults of Options' zero value.
const (
	DefaultVocab   = 2048
	DefaultContext = 2048
)

// MaxContext is the longest context Build accepts: the longest the tests
// verify (BULKHEAD_LONG=1). The induction head is designed for matches up to
// 32768 positions apart, but copying at that distance is not tested here.
const MaxContext = 8192

// Options select a variant of the copy model. The zero value is the default.
type Options struct {
	// Vocab is the vocabulary size, at least 512 (default 2048).
	Vocab int
	// Context is the maximum context written as llama.context_length,
	// 2..8192 (default 2048).
	Context int
	// F32Weights stores the matrices as F32 instead of F16. Norm weights
	// are F32 either way.
	F32Weights bool
}

// withDefaults fills zero fields.
func (o Options) withDefaults() Options {
	if o.Vocab == 0 {
		o.Vocab = DefaultVocab
	}
	if o.Context == 0 {
		o.Context = DefaultContext
	}
	return o
}

// Build writes the copy model as GGUF bytes. The same options always give
// the same bytes.
func Build(opts Options) ([]byte, error) {
	gw, err := writer(opts)
	if err != nil {
		return nil, err
	}
	b, err := gw.Bytes()
	if err != nil {
		return nil, fmt.Errorf("copymodel: %w", err)
	}
	return b, nil
}

// WriteFile writes the copy model to path (through a temporary file and a
// rename, so a crash never leaves half a model).
func WriteFile(path string, opts Options) error {
	gw, err := writer(opts)
	if err != nil {
		return err
	}
	if err := gw.WriteFile(path); err != nil {
		return fmt.Errorf("copymodel: %w", err)
	}
	return nil
}

// writer constructs the model for opts into a GGUF writer.
func writer(opts Options) (*gguf.Writer, error) {
	o := opts.withDefaults()
	if o.Context < 2 || o.Context > MaxContext {
		return nil, fmt.Errorf("copymodel: context %d out of range [2, %d]", o.Context, MaxContext)
	}
	wt, fileType := gguf.F16, uint32(1) // llama.cpp's MOSTLY_F16
	if o.F32Weights {
		wt, fileType = gguf.F32, 0 // ALL_F32
	}
	v, err := newVocab(o.Vocab)
	if err != nil {
		return nil, err
	}
	gw := gguf.NewWriter()
	if err := setMetadata(gw, v, o.Context, fileType); err != nil {
		return nil, err
	}
	if err := addTensors(gw, construct(v, o.Context), wt); err != nil {
		return nil, err
	}
	return gw, nil
}

var defaultModel = sync.OnceValues(func() ([]byte, error) { return Build(Options{}) })

// Default returns the built-in default model (built once, then cached). The
// caller must not modify the returned bytes.
func Default() ([]byte, error) { return defaultModel() }

func setMetadata(gw *gguf.Writer, v *vocab, context int, fileType uint32) error {
	tokens, err := gguf.NewArray(v.pieces)
	if err != nil {
		return err
	}
	scores, err := gguf.NewArray(v.scores)
	if err != nil {
		return err
	}
	types, err := gguf.NewArray(v.types)
	if err != nil {
		return err
	}
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: "llama"},
		{Key: "general.name", Value: Name},
		{Key: "general.description", Value: "bulkhead's constructed induction copy model: given … KEY c1 … cN … KEY it emits c1 … cN"},
		{Key: "general.file_type", Value: fileType},
		{Key: "llama.context_length", Value: uint32(context)},
		{Key: "llama.embedding_length", Value: uint32(embd)},
		{Key: "llama.block_count", Value: uint32(nLayers)},
		{Key: "llama.feed_forward_length", Value: uint32(ffnWidth)},
		{Key: "llama.attention.head_count", Value: uint32(nHeads)},
		{Key: "llama.attention.head_count_kv", Value: uint32(nHeads)},
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: float32(normEps)},
		{Key: "llama.rope.freq_base", Value: float32(ropeBase)},
		{Key: "llama.rope.dimension_count", Value: uint32(headDim)},
		{Key: "llama.vocab_size", Value: uint32(len(v.pieces))},
		{Key: "tokenizer.ggml.model", Value: "llama"},
		{Key: "tokenizer.ggml.tokens", Value: tokens},
		{Key: "tokenizer.ggml.scores", Value: scores},
		{Key: "tokenizer.ggml.token_type", Value: types},
		{Key: "tokenizer.ggml.unknown_token_id", Value: uint32(unkID)},
		{Key: "tokenizer.ggml.bos_token_id", Value: uint32(bosID)},
		{Key: "tokenizer.ggml.eos_token_id", Value: uint32(eosID)},
		{Key: "tokenizer.ggml.add_bos_token", Value: true},
		{Key: "tokenizer.ggml.add_eos_token", Value: false},
		// Text is words each preceded by a space; no extra space is invented
		// before the first one.
		{Key: "tokenizer.ggml.add_space_prefix", Value: false},
	}
	for _, kv := range kvs {
		if err := gw.Set(kv.Key, kv.Value); err != nil {
			return fmt.Errorf("copymodel: %w", err)
		}
	}
	return nil
}

func addTensors(gw *gguf.Writer, w *weights, wt gguf.Type) error {
	ones := make([]float32, embd)
	for i := range ones {
		ones[i] = 1
	}
	add := func(name string, t gguf.Type, cols, rows int, data []float32) error {
		dims := []uint64{uint64(cols)}
		if rows > 0 {
			dims = append(dims, uint64(rows))
		}
		if err := gw.AddTensor(name, t, dims, encode(t, data)); err != nil {
			return fmt.Errorf("copymodel: %w", err)
		}
		return nil
	}
	mat := func(name string, m *matrix) error { return add(name, wt, m.cols, m.rows, m.w) }
	if err := mat("token_embd.weight", w.embed); err != nil {
		return err
	}
	for i, l := range w.layers {
		p := fmt.Sprintf("blk.%d.", i)
		zero := make([]float32, embd*ffnWidth)
		for _, err := range []error{
			add(p+"attn_norm.weight", gguf.F32, embd, 0, ones),
			mat(p+"attn_q.weight", l.q),
			mat(p+"attn_k.weight", l.k),
			mat(p+"attn_v.weight", l.v),
			mat(p+"attn_output.weight", l.o),
			add(p+"ffn_norm.weight", gguf.F32, embd, 0, ones),
			add(p+"ffn_gate.weight", wt, embd, ffnWidth, zero),
			add(p+"ffn_up.weight", wt, embd, ffnWidth, zero),
			add(p+"ffn_down.weight", wt, ffnWidth, embd, zero),
		} {
			if err != nil {
				return err
			}
		}
	}
	if err := add("output_norm.weight", gguf.F32, embd, 0, ones); err != nil {
		return err
	}
	return mat("output.weight", w.output)
}

// encode stores float32 values as little-endian F16 or F32.
func encode(t gguf.Type, x []float32) []byte {
	if t == gguf.F16 {
		b := make([]byte, 2*len(x))
		for i, f := range x {
			binary.LittleEndian.PutUint16(b[2*i:], kernels.F32ToF16(f))
		}
		return b
	}
	b := make([]byte, 4*len(x))
	for i, f := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}
