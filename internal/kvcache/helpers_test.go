package kvcache

import (
	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// tb is what the helpers need from *testing.T, *testing.B and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// newTestPool makes an F32 pool of n pages of ps slots, one layer, KVDim 2.
func newTestPool(t tb, n, ps int) *Pool {
	t.Helper()
	p, err := New(Config{PageSize: ps, DType: gguf.F32, Layers: 1, KVDim: 2, Tokens: n * ps})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// writeTokens runs a fake step: it verifies t for positions [pos,
// pos+len(toks)), stores each token as the first key element of its slot and
// commits the step.
func writeTokens(t tb, p *Pool, pt *PageTable, pos int, toks []int32) {
	t.Helper()
	if err := p.Reserve(pt, pos+len(toks)); err != nil {
		t.Fatal(err)
	}
	pages, err := p.AppendStepPages(nil, pt, pos, len(toks))
	if err != nil {
		t.Fatal(err)
	}
	for i, tok := range toks {
		at := pos + i
		k, _ := p.PageF32(0, int(pages[at/p.PageSize()]))
		k[(at%p.PageSize())*2] = float32(tok)
	}
	if err := p.Commit(pt, pos, len(toks)); err != nil {
		t.Fatal(err)
	}
}

// readTokens returns the first key element of positions [0, n) through a
// verified read.
func readTokens(t tb, p *Pool, pt *PageTable, n int) []int32 {
	t.Helper()
	pages, err := p.AppendStepPages(nil, pt, n, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int32, n)
	for i := range out {
		k, _ := p.PageF32(0, int(pages[i/p.PageSize()]))
		out[i] = int32(k[(i%p.PageSize())*2])
	}
	return out
}

func seq(from, n int) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = int32(from + i)
	}
	return s
}

func mustDrain(t tb, p *Pool) {
	t.Helper()
	if err := p.CheckDrained(); err != nil {
		t.Fatal(err)
	}
	p.DropCache()
	if err := p.CheckDrained(); err != nil {
		t.Fatal(err)
	}
	if got := p.FreePages(); got != p.UsablePages() {
		t.Fatalf("after drain and DropCache %d of %d pages free", got, p.UsablePages())
	}
}
