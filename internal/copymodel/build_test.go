package copymodel

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kernels"
	"github.com/bulkhead-llm/bulkhead/internal/model"
)

func TestBuildIsDeterministic(t *testing.T) {
	options := []Options{{Vocab: 600, Context: 300, F32Weights: true}, {}}
	if shortRun() {
		options = options[:1]
	}
	for _, o := range options {
		a, err := Build(o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Build(o)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("Build(%+v) twice gave different bytes", o)
		}
	}
}

func TestDefaultIsTheCachedDefaultBuild(t *testing.T) {
	d, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	d2, _ := Default()
	b := load(t, Options{}).bytes // Build(Options{})
	if !bytes.Equal(d, b) || &d[0] != &d2[0] {
		t.Error("Default() is not the cached Build(Options{})")
	}
}

// TestBuildWritesLlamaMetadata reads the file back through gguf and
// internal/model's config reader.
func TestBuildWritesLlamaMetadata(t *testing.T) {
	vocab := 4096
	if shortRun() {
		vocab = MinVocab
	}
	start := time.Now()
	b, err := Build(Options{Vocab: vocab, Context: 8192})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("vocab %d context 8192: built %d bytes in %v", vocab, len(b), time.Since(start))
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	c, err := model.ConfigFromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	want := model.Config{Arch: "llama", Embd: 512, Layers: 2, Heads: 4, KVHeads: 4, HeadDim: 128, FF: 32,
		Vocab: vocab, Context: 8192, NormEps: 1e-5, RopeBase: 500000, RopeDim: 128, RopeStyle: model.RopeNormal,
		RopeScale: model.RopeScaling{Type: "none", Factor: 1, LowFreqFactor: 1, HighFreqFactor: 4, OrigContext: 8192}}
	if *c != want {
		t.Errorf("config\n got %+v\nwant %+v", *c, want)
	}
	if name, _ := f.String("general.name"); name != Name {
		t.Errorf("general.name = %q, want %q", name, Name)
	}
	if add, _ := f.Bool("tokenizer.ggml.add_bos_token"); !add {
		t.Error("tokenizer.ggml.add_bos_token is not true")
	}
	// Count the non-zero weights: the construction is sparse.
	nz := 0
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		data := f.TensorData(ti)
		for j := 0; j < len(data); j += 2 {
			if ti.Type == gguf.F16 && kernels.F16ToF32(binary.LittleEndian.Uint16(data[j:])) != 0 {
				nz++
			}
		}
	}
	t.Logf("non-zero F16 weights: %d", nz)
}

func TestWriteFileWritesTheBuiltBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "copy.gguf")
	o := Options{Vocab: MinVocab, Context: 256}
	if err := WriteFile(path, o); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Build(o)
	if !bytes.Equal(got, want) {
		t.Error("WriteFile wrote other bytes than Build returns")
	}
	if err := WriteFile(filepath.Join(t.TempDir(), "no", "such", "dir", "x.gguf"), o); err == nil {
		t.Error("WriteFile into a missing directory succeeded")
	}
}

func TestBuildRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{{Vocab: 100}, {Vocab: MinVocab - 1}, {Context: 1}, {Context: MaxContext + 1}, {Vocab: -5}} {
		if _, err := Build(o); err == nil {
			t.Errorf("Build(%+v) succeeded", o)
		}
	}
}

// TestF32WeightsCopyToo runs one audit prompt on the F32 variant with the
// smallest vocabulary.
func TestF32WeightsCopyToo(t *testing.T) {
	r := load(t, Options{Vocab: MinVocab, Context: 1024, F32Weights: true})
	var s copyStats
	auditTrial(t, r, &s, 600, 300, 7)
	if s.exact != 1 {
		t.Fatal("F32 variant did not copy")
	}
}

// TestRuntimeMatchesReference cross-checks internal/model against this
// package's independent float32 forward pass on one audit prompt: same
// greedy tokens, logits within a small tolerance.
func TestRuntimeMatchesReference(t *testing.T) {
	r := load(t, Options{})
	rng := splitMix(3)
	canary := pickDistinct(&rng, r.words.Canary, 8)
	length := 160
	if shortRun() {
		length = 48
	}
	text, err := Prompt(canary, 20, length, 3)
	if err != nil {
		t.Fatal(err)
	}
	ids := r.tok.Encode(text, true, false)
	ref, err := newRefModel(r.bytes)
	if err != nil {
		t.Fatal(err)
	}
	var want []float32
	for _, id := range ids {
		want = ref.step(id)
	}
	n := pagesFor(len(ids))
	got, err := r.model.Forward(r.kvFor(t, n), []model.Seq{{Tokens: ids, Pages: pagesFrom(0, n)}})
	if err != nil {
		t.Fatal(err)
	}
	worst := float32(0)
	for i := range want {
		worst = max(worst, abs(got[0][i]-want[i]))
	}
	gt, _ := argmax(got[0])
	wt, _ := argmax(want)
	if gt != wt || worst > 1 {
		t.Errorf("runtime argmax %d, reference %d; largest logit difference %g", gt, wt, worst)
	}
	if first := r.encodeWords(canary[:1], false)[0]; wt != first {
		t.Errorf("reference emits %d, want the canary's first token %d", wt, first)
	}
	t.Logf("largest logit difference runtime vs reference: %g (logits span ±%g)", worst, slices.Max(want))
}

func abs(x float32) float32 { return max(x, -x) }

func BenchmarkBuildDefault(b *testing.B) {
	var size int
	for b.Loop() {
		m, err := Build(Options{})
		if err != nil {
			b.Fatal(err)
		}
		size = len(m)
	}
	b.ReportMetric(float64(size), "file-bytes")
}
