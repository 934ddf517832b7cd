package model

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kernels"
)

// Shape describes a random-weight model to write: the hyper-parameters of a
// known model (or of a small test model) without its trained weights.
type Shape struct {
	Name               string
	Arch               string // llama, mistral or qwen2 (qwen2 gets Q/K/V biases)
	Embd, Layers       int
	Heads, KVHeads     int
	FF, Vocab, Context int
	RopeBase           float64
	Tied               bool // no output.weight: the output reuses token_embd
	NormEps            float32
	RopeScaling        string // "", "linear" or "llama3"
	RopeScalingFactor  float64
	OmitOptionalKeys   bool // leave out head_count_kv, rope base, eps: exercise the defaults
	WeightStd          float64
	NormJitter         float64 // norm weights are 1 + N(0, NormJitter)
}

// Shapes are the shapes mkmodel knows by name.
var Shapes = map[string]Shape{
	"smollm2-135m": {Name: "smollm2-135m", Arch: "llama", Embd: 576, Layers: 30, Heads: 9, KVHeads: 3, FF: 1536,
		Vocab: 49152, Context: 2048, RopeBase: 100000, Tied: true, NormEps: 1e-5},
	"llama-1b": {Name: "llama-1b", Arch: "llama", Embd: 2048, Layers: 16, Heads: 32, KVHeads: 8, FF: 8192,
		Vocab: 128256, Context: 2048, RopeBase: 500000, Tied: true, NormEps: 1e-5},
	"tiny": {Name: "tiny", Arch: "llama", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FF: 128,
		Context: 512, RopeBase: 10000, NormEps: 1e-5},
	// tiny256 is tiny with 256-wide rows: whole K-quant and IQ4_XS blocks.
	"tiny256": {Name: "tiny256", Arch: "llama", Embd: 256, Layers: 2, Heads: 4, KVHeads: 2, FF: 512,
		Context: 512, RopeBase: 10000, NormEps: 1e-5},
}

// A Mix chooses each weight matrix's type, as llama.cpp's quantizer does for
// its mixed file types, where the tensors a model is most sensitive to get
// more bits.
type Mix struct {
	Name     string
	FileType uint32 // general.file_type
	// Type is the type of matrix role ("attn_v", "ffn_down", "token_embd",
	// "output", …) in layer i of n (i is -1 outside the layers); tied
	// reports that token_embd is also the output matrix.
	Type func(role string, i, n int, tied bool) gguf.Type
}

// Uniform is the mix of one type for every matrix.
func Uniform(t gguf.Type) Mix {
	return Mix{Name: t.String(), FileType: uint32(t), Type: func(string, int, int, bool) gguf.Type { return t }}
}

// Q4KM is llama.cpp's Q4_K_M recipe, what most people download: Q4_K
// everywhere but Q6_K for the output matrix (token_embd when tied) and for
// attn_v and ffn_down in the first and last eighth of the layers and every
// third layer between (llama_tensor_get_type's use_more_bits).
var Q4KM = Mix{Name: "Q4_K_M", FileType: 15, Type: func(role string, i, n int, tied bool) gguf.Type {
	moreBits := i >= 0 && (i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2)
	switch {
	case role == "output", role == "token_embd" && tied:
		return gguf.Q6_K
	case (role == "attn_v" || role == "ffn_down") && moreBits:
		return gguf.Q6_K
	}
	return gguf.Q4_K
}}

// Mixes are the mixed types mkmodel knows by name.
var Mixes = map[string]Mix{"q4_k_m": Q4KM}

// WriteRandom adds sh's metadata and tensors to w, with weights drawn from
// N(0, WeightStd) (0.02 if unset) by a PRNG seeded with seed. Matrices are
// encoded as typ where their rows are a whole number of typ's blocks, else
// as Q8_0 or F16; norms and biases are F32. note, which may be nil, is told
// about each such fallback and about progress after every layer.
func WriteRandom(w *gguf.Writer, sh Shape, typ gguf.Type, seed uint64, note func(string)) error {
	return WriteRandomMix(w, sh, Uniform(typ), seed, note)
}

// WriteRandomMix is WriteRandom with each matrix's type chosen by mix.
func WriteRandomMix(w *gguf.Writer, sh Shape, mix Mix, seed uint64, note func(string)) error {
	if note == nil {
		note = func(string) {}
	}
	std := sh.WeightStd
	if std == 0 {
		std = 0.02
	}
	rng := rand.New(rand.NewPCG(seed, 0x62756c6b68656164))
	a := sh.Arch
	set := func(k string, v any) error { return w.Set(k, v) }
	meta := []struct {
		k string
		v any
	}{
		{"general.architecture", a},
		{"general.name", "random " + sh.Name},
		{"general.file_type", mix.FileType},
		{a + ".embedding_length", uint32(sh.Embd)},
		{a + ".block_count", uint32(sh.Layers)},
		{a + ".attention.head_count", uint32(sh.Heads)},
		{a + ".feed_forward_length", uint32(sh.FF)},
		{a + ".context_length", uint32(sh.Context)},
	}
	if !sh.OmitOptionalKeys {
		meta = append(meta, []struct {
			k string
			v any
		}{
			{a + ".attention.head_count_kv", uint32(sh.KVHeads)},
			{a + ".rope.freq_base", float32(sh.RopeBase)},
			{a + ".attention.layer_norm_rms_epsilon", sh.NormEps},
			{a + ".rope.dimension_count", uint32(sh.Embd / sh.Heads)},
			{a + ".vocab_size", uint32(sh.Vocab)},
		}...)
	}
	if sh.RopeScaling != "" {
		meta = append(meta, []struct {
			k string
			v any
		}{{a + ".rope.scaling.type", sh.RopeScaling}, {a + ".rope.scaling.factor", float32(sh.RopeScalingFactor)}}...)
	}
	for _, kv := range meta {
		if err := set(kv.k, kv.v); err != nil {
			return err
		}
	}
	hd := sh.Embd / sh.Heads
	kvDim := sh.KVHeads * hd
	normal := func(n int, mean, sd float64) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(mean + sd*rng.NormFloat64())
		}
		return out
	}
	fallback := map[string]bool{}
	add := func(name string, cols, rows int, t gguf.Type, data []float32) error {
		dims := []uint64{uint64(cols)}
		if rows > 0 {
			dims = append(dims, uint64(rows))
		}
		if t.BlockElems() > 1 && int(dims[0])%t.BlockElems() != 0 {
			alt := gguf.Q8_0
			if int(dims[0])%32 != 0 {
				alt = gguf.F16
			}
			key := fmt.Sprintf("%s→%s", t, alt)
			if !fallback[key] {
				note(fmt.Sprintf("rows of %d elements are not whole %s blocks: writing such tensors (first: %s) as %s", dims[0], t, name, alt))
				fallback[key] = true
			}
			t = alt
		}
		enc, err := kernels.Quantize(t, data)
		if err != nil {
			return fmt.Errorf("model: encoding %s: %w", name, err)
		}
		return w.AddTensor(name, t, dims, enc)
	}
	mat := func(name string, cols, rows int) error {
		layer, role := -1, strings.TrimSuffix(name, ".weight")
		if rest, ok := strings.CutPrefix(role, "blk."); ok {
			n, r, _ := strings.Cut(rest, ".")
			layer, _ = strconv.Atoi(n)
			role = r
		}
		t := mix.Type(role, layer, sh.Layers, sh.Tied)
		return add(name, cols, rows, t, normal(cols*rows, 0, std))
	}
	vec := func(name string, n int, mean, sd float64) error {
		return add(name, n, 0, gguf.F32, normal(n, mean, sd))
	}
	if err := mat("token_embd.weight", sh.Embd, sh.Vocab); err != nil {
		return err
	}
	for i := 0; i < sh.Layers; i++ {
		p := fmt.Sprintf("blk.%d.", i)
		steps := []func() error{
			func() error { return vec(p+"attn_norm.weight", sh.Embd, 1, sh.NormJitter) },
			func() error { return mat(p+"attn_q.weight", sh.Embd, sh.Heads*hd) },
			func() error { return mat(p+"attn_k.weight", sh.Embd, kvDim) },
			func() error { return mat(p+"attn_v.weight", sh.Embd, kvDim) },
			func() error { return mat(p+"attn_output.weight", sh.Heads*hd, sh.Embd) },
			func() error { return vec(p+"ffn_norm.weight", sh.Embd, 1, sh.NormJitter) },
			func() error { return mat(p+"ffn_gate.weight", sh.Embd, sh.FF) },
			func() error { return mat(p+"ffn_up.weight", sh.Embd, sh.FF) },
			func() error { return mat(p+"ffn_down.weight", sh.FF, sh.Embd) },
		}
		if sh.Arch == "qwen2" {
			steps = append(steps,
				func() error { return vec(p+"attn_q.bias", sh.Heads*hd, 0, 0.5) },
				func() error { return vec(p+"attn_k.bias", kvDim, 0, 0.5) },
				func() error { return vec(p+"attn_v.bias", kvDim, 0, 0.5) },
			)
		}
		for _, st := range steps {
			if err := st(); err != nil {
				return err
			}
		}
		note(fmt.Sprintf("layer %d/%d", i+1, sh.Layers))
	}
	if err := vec("output_norm.weight", sh.Embd, 1, sh.NormJitter); err != nil {
		return err
	}
	if !sh.Tied {
		if err := mat("output.weight", sh.Embd, sh.Vocab); err != nil {
			return err
		}
	}
	return nil
}

// LoadRandom writes a random-weight model of shape sh in memory (as
// WriteRandom) and loads it: the one-liner tests and benchmarks need.
func LoadRandom(sh Shape, typ gguf.Type, seed uint64, opts Options) (*Model, error) {
	w := gguf.NewWriter()
	if err := WriteRandom(w, sh, typ, seed, nil); err != nil {
		return nil, err
	}
	b, err := w.Bytes()
	if err != nil {
		return nil, err
	}
	f, err := gguf.Parse(b)
	if err != nil {
		return nil, err
	}
	return Load(f, opts)
}
