package grammar

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
	"github.com/bulkhead-llm/bulkhead/internal/model"
	"github.com/bulkhead-llm/bulkhead/internal/tokenizer"
)

// boundedSchema bounds its strings (maxLength), so no state inside them
// recurs and nearly every step misses the mask memo: the worst case.
const boundedSchema = `{"type":"object","additionalProperties":false,"required":["name","notes"],"properties":{
 "name":{"type":"string","maxLength":40},"notes":{"type":"array","items":{"type":"string","maxLength":80},"maxItems":8},
 "units":{"enum":["metric","imperial"]}}}`

var (
	decodeOnce  sync.Once
	decodeModel *model.Model
	decodeTok   *tokenizer.Tokenizer
	decodeErr   error
)

// decodeSetup builds the smollm2-135m shape with random Q8_0 weights over
// GPT-2's 50257-token vocabulary (the 135M model's own is the same kind,
// 49152 tokens), as "bulkhead mkmodel --shape smollm2-135m" would.
func decodeSetup(b *testing.B) (*model.Model, *tokenizer.Tokenizer) {
	path := filepath.Join("..", "..", "..", "shared", "testdata", "vocab", "ggml-vocab-gpt-2.gguf")
	if _, err := os.Stat(path); err != nil {
		b.Skipf("vocabulary %s absent (the shared test data is not mounted): %v", path, err)
	}
	decodeOnce.Do(func() {
		f, err := gguf.Open(path)
		if err != nil {
			decodeErr = err
			return
		}
		defer f.Close()
		if decodeTok, decodeErr = tokenizer.FromGGUF(f); decodeErr != nil {
			return
		}
		sh := model.Shapes["smollm2-135m"]
		sh.Vocab = decodeTok.VocabSize()
		decodeModel, decodeErr = model.LoadRandom(sh, gguf.Q8_0, 1, model.Options{Threads: 2})
	})
	if decodeErr != nil {
		b.Fatal(decodeErr)
	}
	return decodeModel, decodeTok
}

// BenchmarkConstrainedDecode compares, in one run, whole requests through
// the engine (4-token prompt, at most 64 generated tokens, one at a time)
// with and without a JSON-schema constraint on the 135M shape: the
// tool-call-like benchSchema (mostly unbounded strings, whose interior
// masks are memoised) and boundedSchema (every string bounded). Random
// weights make the output arbitrary, so the unconstrained request ignores
// EOS and always runs 64 tokens, and the constrained one runs until its
// document is complete; the figure to compare is tokens/s (generated
// tokens over wall time).
func BenchmarkConstrainedDecode(b *testing.B) {
	m, tok := decodeSetup(b)
	var eog []int32
	for id := range int32(tok.VocabSize()) {
		if tok.IsEOG(id) {
			eog = append(eog, id)
		}
	}
	pool, err := kvcache.New(kvcache.Config{PageSize: 16, DType: gguf.F16, Layers: m.Config.Layers,
		KVDim: m.Config.KVDim(), Tokens: 1024})
	if err != nil {
		b.Fatal(err)
	}
	eng, err := engine.New(engine.Config{MaxContext: 512, MaxRunning: 1, EOG: eog, VocabSize: m.Config.Vocab}, m, pool)
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	tv := NewTokenVocab(tok)
	typical, err := Spec{Kind: KindJSONSchema, Source: benchSchema, Strict: true}.Compile()
	if err != nil {
		b.Fatal(err)
	}
	bounded, err := Spec{Kind: KindJSONSchema, Source: boundedSchema}.Compile()
	if err != nil {
		b.Fatal(err)
	}
	prompt := tok.Encode("Write the record:", false, false)[:4]
	// One request of each kind per iteration, timed apart, so that the
	// machine's load (other processes) falls on all kinds alike and the
	// ratios are same-run figures.
	kinds := []struct {
		name    string
		g       *Grammar
		tokens  int
		elapsed time.Duration
	}{{"unconstrained", nil, 0, 0}, {"json_schema", typical, 0, 0}, {"json_schema_bounded", bounded, 0, 0}}
	seed := uint64(0)
	for b.Loop() {
		for k := range kinds {
			kd := &kinds[k]
			seed++
			req := engine.Request{Prompt: prompt, MaxTokens: 64, IgnoreEOS: kd.g == nil,
				Sampling: engine.Sampling{Temperature: 1, Seed: seed}}
			if kd.g != nil {
				req.Sampling.Constraint = tv.Constraint(kd.g)
			}
			start := time.Now()
			ch, err := eng.Submit(context.Background(), req)
			if err != nil {
				b.Fatal(err)
			}
			for ev := range ch {
				switch {
				case ev.Err != nil:
					b.Fatal(ev.Err)
				case ev.Finish == nil:
					kd.tokens++
				}
			}
			kd.elapsed += time.Since(start)
		}
	}
	free := float64(kinds[0].tokens) / kinds[0].elapsed.Seconds()
	for _, kd := range kinds {
		rate := float64(kd.tokens) / kd.elapsed.Seconds()
		b.ReportMetric(rate, kd.name+"_tokens/s")
		b.ReportMetric(float64(kd.tokens)/float64(b.N), kd.name+"_tokens/op")
		if kd.g != nil {
			b.ReportMetric(rate/free, kd.name+"_ratio")
		}
	}
}
