package grammar

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/sample"
	"github.com/bulkhead-llm/bulkhead/internal/tokenizer"
)

// benchSchema is a typical tool-call-like schema.
const benchSchema = `{"type":"object","additionalProperties":false,"required":["name","args"],"properties":{
 "name":{"type":"string"},"args":{"type":"object","additionalProperties":false,"required":["city","days","units"],"properties":{
  "city":{"type":"string","maxLength":40},"days":{"type":"integer"},"units":{"enum":["metric","imperial"]},
  "tags":{"type":"array","items":{"type":"string"},"maxItems":4}}}}}`

// BenchmarkSample compares, in one run, a sampler step (temperature 1 over
// random logits) with and without a JSON-schema constraint on GPT-2's
// 50257-token byte-level vocabulary (the 135M model's vocabulary is the
// same kind, 49152 tokens). The constrained sequence restarts whenever
// its grammar ends it.
func BenchmarkSample(b *testing.B) {
	path := filepath.Join("..", "..", "..", "shared", "testdata", "vocab", "ggml-vocab-gpt-2.gguf")
	if _, err := os.Stat(path); err != nil {
		b.Skipf("vocabulary %s absent (the shared test data is not mounted): %v", path, err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		b.Fatal(err)
	}
	n := tok.VocabSize()
	pieces := make([][]byte, n)
	var eog []int32
	for id := range int32(n) {
		switch {
		case tok.IsEOG(id):
			eog = append(eog, id)
		case !tok.IsControl(id):
			pieces[id] = tok.Piece(id)
		}
	}
	v := NewVocab(pieces)
	g, _, err := CompileSchema([]byte(benchSchema), true)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	logits := make([][]float32, 64)
	for i := range logits {
		logits[i] = make([]float32, n)
		for j := range logits[i] {
			logits[i][j] = float32(rng.NormFloat64() * 3)
		}
	}
	run := func(b *testing.B, constrained bool) {
		newSampler := func() (*sample.Sampler, *Constraint) {
			p := sample.Params{Temperature: 1, Seed: 7}
			var c *Constraint
			if constrained {
				c = NewConstraint(g, v, func(id int32) []byte { return pieces[id] }, eog)
				p.Constraint = c
			}
			s, err := sample.New(p)
			if err != nil {
				b.Fatal(err)
			}
			return s, c
		}
		s, c := newSampler()
		i, restarts := 0, 0
		for b.Loop() {
			t := s.Sample(logits[i%len(logits)])
			i++
			if c != nil && (tok.IsEOG(t) || c.m.Done()) {
				s, c = newSampler()
				restarts++
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		if constrained {
			b.ReportMetric(float64(restarts), "documents")
		}
	}
	b.Run("unconstrained", func(b *testing.B) { run(b, false) })
	b.Run("json_schema", func(b *testing.B) { run(b, true) })
}
