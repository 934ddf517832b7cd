package copymodel

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/model"
	"github.com/bulkhead-llm/bulkhead/internal/tokenizer"
)

// pageSize is the KV page size the tests run with.
const pageSize = 16

// runtime is a built copy model loaded by the real runtime.
type runtime struct {
	opts  Options
	bytes []byte
	file  *gguf.File
	model *model.Model
	tok   *tokenizer.Tokenizer
	words Words
}

var runtimes sync.Map // Options → *runtime

// load builds the model for opts and loads it with internal/model and
// internal/tokenizer, once per options.
func load(t testing.TB, opts Options) *runtime {
	t.Helper()
	if r, ok := runtimes.Load(opts); ok {
		return r.(*runtime)
	}
	b, err := Build(opts)
	if err != nil {
		t.Fatalf("Build(%+v): %v", opts, err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatalf("parsing the built model: %v", err)
	}
	m, err := model.Load(f, model.Options{Threads: 2})
	if err != nil {
		t.Fatalf("model.Load: %v", err)
	}
	tk, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatalf("tokenizer.FromGGUF: %v", err)
	}
	r := &runtime{opts: opts, bytes: b, file: f, model: m, tok: tk, words: AuditWords()}
	runtimes.Store(opts, r)
	return r
}

// kvFor returns a fresh F16 store with room for pages pages.
func (r *runtime) kvFor(t testing.TB, pages int) *model.SimpleKV {
	t.Helper()
	kv, err := model.NewSimpleKV(&r.model.Config, pages, pageSize, gguf.F16)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// pagesFrom returns n consecutive page ids starting at first.
func pagesFrom(first, n int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(first + i)
	}
	return p
}

func pagesFor(tokens int) int { return (tokens + pageSize - 1) / pageSize }

// generation is the result of greedy decoding.
type generation struct {
	tokens    []int32
	minMargin float32 // smallest lead of the chosen token over the runner-up
}

// generate prefills tokens at position pos over pages and decodes n tokens
// greedily (argmax), each written at the next position.
func (r *runtime) generate(kv model.KVStore, pages []int32, tokens []int32, pos, n int) (generation, error) {
	g := generation{minMargin: float32(1e30)}
	logits, err := r.model.Forward(kv, []model.Seq{{Tokens: tokens, Pos: pos, Pages: pages}})
	if err != nil {
		return g, fmt.Errorf("prefill: %w", err)
	}
	pos += len(tokens)
	for i := 0; i < n; i++ {
		tok, margin := argmax(logits[0])
		g.tokens = append(g.tokens, tok)
		g.minMargin = min(g.minMargin, margin)
		if i == n-1 {
			break
		}
		logits, err = r.model.Forward(kv, []model.Seq{{Tokens: []int32{tok}, Pos: pos, Pages: pages}})
		if err != nil {
			return g, fmt.Errorf("decode at %d: %w", pos, err)
		}
		pos++
	}
	return g, nil
}

// encodeWords tokenizes space-joined words as the audit does: " w1 w2 …".
func (r *runtime) encodeWords(words []string, bos bool) []int32 {
	return r.tok.Encode(" "+strings.Join(words, " "), bos, false)
}
