package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// readRecorder is a KVStore that records which pages each layer reads.
type readRecorder struct {
	KVStore
	mu    sync.Mutex    // the attention gathers KV heads on several threads
	reads map[int][]int // layer → pages read, in order
}

func (r *readRecorder) PageF16(layer, page int) (k, v []uint16) {
	r.mu.Lock()
	r.reads[layer] = append(r.reads[layer], page)
	r.mu.Unlock()
	return r.KVStore.PageF16(layer, page)
}

func (r *readRecorder) PageF32(layer, page int) (k, v []float32) {
	r.mu.Lock()
	r.reads[layer] = append(r.reads[layer], page)
	r.mu.Unlock()
	return r.KVStore.PageF32(layer, page)
}

// TestSlidingWindowLayersReadOnlyTheirWindow runs llama.cpp's gemma3 zoo
// file (window 128; layers 0 and 1 local, layer 2 global) past its window:
// a decode step's local layers must not read the pages wholly before the
// window, the global layer reads them all, and every logit of prefill and
// decode keeps its bits compared with reading every page.
func TestSlidingWindowLayersReadOnlyTheirWindow(t *testing.T) {
	m, _ := loadZooFile(t, "random-gemma3-F16.gguf", "sliding-window read test")
	if m.Config.SlidingWindow != 128 || !m.Config.Local(0) || !m.Config.Local(1) || m.Config.Local(2) {
		t.Fatalf("zoo gemma3 is not the README's shape: window %d, local 0/1/2 = %v/%v/%v",
			m.Config.SlidingWindow, m.Config.Local(0), m.Config.Local(1), m.Config.Local(2))
	}
	const ps, n = 16, 200 // 200 tokens of prompt: 13 pages, the window starts in page 4
	rng := rand.New(rand.NewPCG(3, 4))
	tokens := randomTokens(rng, n+1, m.Config.Vocab)
	pages := pagesFor(rng, map[int32]bool{}, 13, 40)

	run := func(windowed bool) ([][]float32, map[int][]int) {
		windowedGather = windowed
		defer func() { windowedGather = true }()
		kv, err := NewSimpleKV(&m.Config, 40, ps, gguf.F16)
		if err != nil {
			t.Fatal(err)
		}
		got := runPrompt(t, m, kv, pages, tokens[:n], 64)
		rec := &readRecorder{KVStore: kv, reads: map[int][]int{}}
		out, err := m.Forward(rec, []Seq{{Tokens: tokens[n : n+1], Pos: n, Pages: pages}})
		if err != nil {
			t.Fatal(err)
		}
		return append(got, slices.Clone(out[0])), rec.reads
	}
	full, fullReads := run(false)
	windowed, reads := run(true)

	// The decode query at position 200 sees keys 73..200: pages 4..12.
	firstSeen := (n - 128 + 1) / ps
	for layer := 0; layer < 3; layer++ {
		want := pages
		if m.Config.Local(layer) {
			want = pages[firstSeen:]
		}
		// Each KV head gathers on its own, and the new token's slot is
		// written through the same accessor: compare the pages touched.
		if !slices.Equal(distinct(reads[layer]), distinct32(want)) {
			t.Errorf("layer %d (local %v) read pages %v, want %v", layer, m.Config.Local(layer), reads[layer], want)
		}
		if !slices.Equal(distinct(fullReads[layer]), distinct32(pages)) {
			t.Errorf("reading every page: layer %d read %v, want %v", layer, fullReads[layer], pages)
		}
	}
	for i := range full {
		for j := range full[i] {
			if math.Float32bits(full[i][j]) != math.Float32bits(windowed[i][j]) {
				t.Fatalf("token %d logit %d: %g reading the window only, %g reading every page", i, j, windowed[i][j], full[i][j])
			}
		}
	}
}

func distinct(x []int) []int {
	out := slices.Clone(x)
	slices.Sort(out)
	return slices.Compact(out)
}

func distinct32(x []int32) []int {
	out := make([]int, len(x))
	for i, v := range x {
		out[i] = int(v)
	}
	return distinct(out)
}
