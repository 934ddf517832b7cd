package model

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// rewrite copies f into a new file, replacing metadata values by edits
// (a nil value removes the key; keys not in f are added).
func rewrite(t testing.TB, f *gguf.File, edits map[string]any) *gguf.File {
	return rewriteAll(t, f, edits, "", "")
}

// rewriteAll is rewrite that also leaves out the tensor named drop and
// widens the rows of the tensor named widen by one element (zero data).
func rewriteAll(t testing.TB, f *gguf.File, edits map[string]any, drop, widen string) *gguf.File {
	t.Helper()
	w := gguf.NewWriter()
	seen := map[string]bool{}
	for _, kv := range f.KV {
		v := kv.Value
		if e, ok := edits[kv.Key]; ok {
			seen[kv.Key] = true
			if e == nil {
				continue
			}
			v = e
		}
		if err := w.Set(kv.Key, v); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range edits {
		if !seen[k] && v != nil {
			if err := w.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		dims, data := ti.Dims, f.TensorData(ti)
		switch ti.Name {
		case drop:
			continue
		case widen:
			dims = append([]uint64{dims[0] + 1}, dims[1:]...)
			n := int(ti.Elems()/ti.Dims[0]) * int(dims[0])
			data = make([]byte, n*4)
			if ti.Type != gguf.F32 {
				t.Fatalf("widen %s: only F32 tensors", ti.Name)
			}
		}
		if err := w.AddTensor(ti.Name, ti.Type, dims, data); err != nil {
			t.Fatal(err)
		}
	}
	b, err := w.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	out, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLoadRejectsMalformedModels(t *testing.T) {
	good := buildFile(t, testShape(), gguf.F16, 1)
	good32 := buildFile(t, testShape(), gguf.F32, 1)
	qwen := testShape()
	qwen.Arch = "qwen2"
	goodQwen := buildFile(t, qwen, gguf.F16, 1)
	drop := func(f *gguf.File, name string) *gguf.File { return rewriteAll(t, f, nil, name, "") }
	widen := func(name string) *gguf.File { return rewriteAll(t, good32, nil, "", name) }
	cases := []struct {
		name     string
		file     *gguf.File
		sentinel error
		mention  string
	}{
		{"missing_tensor", drop(good, "blk.1.ffn_up.weight"), ErrMalformed, `"blk.1.ffn_up.weight" is missing`},
		{"missing_output_norm", drop(good, "output_norm.weight"), ErrMalformed, "output_norm.weight"},
		{"wrong_matrix_shape", widen("blk.0.attn_k.weight"), ErrMalformed, `"blk.0.attn_k.weight" has shape [65 32], want [64 32]`},
		{"wrong_norm_shape", widen("blk.0.attn_norm.weight"), ErrMalformed, `"blk.0.attn_norm.weight" has shape [65], want [64]`},
		{"qwen2_without_bias", drop(goodQwen, "blk.0.attn_v.bias"), ErrMalformed, "blk.0.attn_v.bias"},
		{"missing_embeddings", drop(good, "token_embd.weight"), ErrMalformed, "token_embd.weight"},
		{"unsupported_architecture", rewrite(t, good, map[string]any{"general.architecture": "gpt2"}), ErrUnsupported, `architecture "gpt2"`},
		{"no_architecture", rewrite(t, good, map[string]any{"general.architecture": nil}), ErrMalformed, "general.architecture"},
		{"missing_block_count", rewrite(t, good, map[string]any{"llama.block_count": nil}), ErrMalformed, "llama.block_count is missing"},
		{"more_layers_than_tensors", rewrite(t, good, map[string]any{"llama.block_count": uint32(3)}), ErrMalformed, `"blk.2.attn_norm.weight" is missing`},
		{"heads_not_multiple_of_kv_heads", rewrite(t, good, map[string]any{"llama.attention.head_count_kv": uint32(3)}), ErrMalformed, "head_count_kv 3"},
		{"zero_heads", rewrite(t, good, map[string]any{"llama.attention.head_count": uint32(0)}), ErrMalformed, "head_count"},
		{"string_where_int", rewrite(t, good, map[string]any{"llama.embedding_length": "wide"}), ErrMalformed, "llama.embedding_length"},
		{"odd_rope_dims", rewrite(t, good, map[string]any{"llama.rope.dimension_count": uint32(15)}), ErrMalformed, "rope.dimension_count 15"},
		{"unsupported_rope_scaling", rewrite(t, good, map[string]any{"llama.rope.scaling.type": "yarn"}), ErrUnsupported, `"yarn"`},
		{"vocab_size_disagrees_with_embeddings", rewrite(t, good, map[string]any{"llama.vocab_size": uint32(51)}), ErrMalformed, "token_embd.weight"},
		{"negative_eps", rewrite(t, good, map[string]any{"llama.attention.layer_norm_rms_epsilon": float32(-1)}), ErrMalformed, "epsilon"},
		{"value_length_differs", rewrite(t, good, map[string]any{"llama.attention.value_length": uint32(8)}), ErrUnsupported, "value_length 8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.file, Options{})
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if !errors.Is(err, tc.sentinel) {
				t.Errorf("error %q does not wrap %v", err, tc.sentinel)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
}

// TestLoadRejectsUnsupportedTensorType patches a tensor's type to Q8_1, a
// valid GGML type (the file still parses) that bulkhead has no weight
// kernels for: loading must fail as unsupported, naming the tensor and the
// supported types, never as malformed.
func TestLoadRejectsUnsupportedTensorType(t *testing.T) {
	w := gguf.NewWriter()
	if err := WriteRandom(w, testShape(), gguf.F32, 1, nil); err != nil {
		t.Fatal(err)
	}
	b, _ := w.Bytes()
	name := "blk.0.attn_q.weight"
	var key bytes.Buffer
	binary.Write(&key, binary.LittleEndian, uint64(len(name)))
	key.WriteString(name)
	i := bytes.Index(b, key.Bytes())
	if i < 0 {
		t.Fatal("tensor info not found")
	}
	typeAt := i + key.Len() + 4 + 2*8 // n_dims, two dims
	binary.LittleEndian.PutUint32(b[typeAt:], uint32(gguf.Q8_1))
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatalf("a file with a Q8_1 tensor is valid GGUF, Parse said %v", err)
	}
	_, err = Load(f, Options{})
	if err == nil || !errors.Is(err, ErrUnsupported) || errors.Is(err, ErrMalformed) || errors.Is(err, gguf.ErrFormat) ||
		!strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "supported: F32") {
		t.Fatalf("error %v: want one naming %s as unsupported with the supported list", err, name)
	}
}

func TestForwardRejectsBadBatches(t *testing.T) {
	m := buildModel(t, testShape(), gguf.F16, 1, 1)
	kv, _ := NewSimpleKV(&m.Config, 4, 4, gguf.F16)
	cases := []struct {
		name    string
		seqs    []Seq
		mention string
	}{
		{"no_sequences", nil, "no sequences"},
		{"empty_sequence", []Seq{{Pages: []int32{0}}}, "no tokens"},
		{"token_beyond_vocabulary", []Seq{{Tokens: []int32{50}, Pages: []int32{0}}}, "token 50 outside the vocabulary"},
		{"negative_token", []Seq{{Tokens: []int32{-1}, Pages: []int32{0}}}, "token -1"},
		{"negative_position", []Seq{{Tokens: []int32{1}, Pos: -1, Pages: []int32{0}}}, "position -1"},
		{"too_few_pages", []Seq{{Tokens: []int32{1, 2, 3, 4, 5}, Pages: []int32{0}}}, "needs 2 pages"},
		{"page_outside_store", []Seq{{Tokens: []int32{1}, Pages: []int32{4}}}, "page 4 outside"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Forward(kv, tc.seqs)
			if !errors.Is(err, ErrBadBatch) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("error %v: want ErrBadBatch mentioning %q", err, tc.mention)
			}
		})
	}
}

// FuzzLoad feeds arbitrary bytes through gguf.Parse and Load: a hostile
// model file must produce an error or a model that runs, never a panic.
func FuzzLoad(f *testing.F) {
	for _, arch := range []string{"llama", "qwen2"} {
		s := testShape()
		s.Arch, s.Layers, s.Vocab, s.Embd, s.Heads, s.KVHeads, s.FF = arch, 1, 4, 32, 2, 1, 32
		w := gguf.NewWriter()
		if err := WriteRandom(w, s, gguf.Q8_0, 1, nil); err != nil {
			f.Fatal(err)
		}
		b, _ := w.Bytes()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := gguf.Parse(b)
		if err != nil {
			return
		}
		m, err := Load(file, Options{})
		if err != nil {
			return
		}
		if m.Config.Embd*m.Config.Layers > 1<<16 || m.Config.Vocab > 1<<12 {
			return // too big to run quickly, but it loaded without panicking
		}
		kv, err := NewSimpleKV(&m.Config, 2, 2, gguf.F16)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Forward(kv, []Seq{{Tokens: []int32{0, int32(m.Config.Vocab - 1)}, Pages: []int32{1}}}); err != nil {
			t.Fatal(err)
		}
	})
}
