package model

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// ForwardLayers reports every layer once, in order, with the layer's KV
// already in the pages, and computes exactly what Forward computes.
func TestForwardLayersReportsEachLayerWithItsKVWritten(t *testing.T) {
	sh := Shapes["tiny"]
	sh.Vocab = 300
	m := buildModel(t, sh, gguf.F32, 3, 1)
	tokens := randomTokens(rand.New(rand.NewPCG(4, 4)), 40, sh.Vocab)
	pages := seqIndexes32(3)
	kvA, _ := NewSimpleKV(&m.Config, 3, 16, gguf.F32)
	kvB, _ := NewSimpleKV(&m.Config, 3, 16, gguf.F32)
	want, err := m.Forward(kvA, []Seq{{Tokens: tokens, Pages: pages}})
	if err != nil {
		t.Fatal(err)
	}
	want0 := slices.Clone(want[0])
	var seen []int
	got, err := m.ForwardLayers(kvB, []Seq{{Tokens: tokens, Pages: pages}}, func(n int) {
		seen = append(seen, n)
		// Layer n-1 is final now: it equals the reference store's.
		for p := range 3 {
			a, _ := kvA.PageF32(n-1, p)
			b, _ := kvB.PageF32(n-1, p)
			if !slices.Equal(a, b) {
				t.Errorf("after layer %d, page %d of that layer differs from Forward's", n, p)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []int{1, 2}) || !slices.Equal(got[0], want0) {
		t.Fatalf("layers reported %v; logits equal %v", seen, slices.Equal(got[0], want0))
	}
}
