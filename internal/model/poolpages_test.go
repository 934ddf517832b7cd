package model

import (
	"errors"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
)

// TestForwardRefusesPageOutsideProductionPool runs the page-range check on
// the store the engine really uses, kvcache.Pool: a page id at or past the
// pool's end is ErrBadBatch, not an index panic inside the store.
func TestForwardRefusesPageOutsideProductionPool(t *testing.T) {
	m := buildModel(t, testShape(), gguf.F32, 3, 1)
	pool, err := kvcache.New(kvcache.Config{PageSize: 4, DType: gguf.F32, Layers: m.Config.Layers,
		KVDim: m.Config.KVHeads * m.Config.HeadDim, Tokens: 16})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := any(pool).(pageCounter); !ok {
		t.Fatal("kvcache.Pool does not say how many pages it holds: Forward's range check cannot run")
	}
	last := int32(pool.Pages() - 1)
	if _, err := m.Forward(pool, []Seq{{Tokens: []int32{1}, Pos: 0, Pages: []int32{last}}}); err != nil {
		t.Fatalf("last page %d refused: %v", last, err)
	}
	_, err = m.Forward(pool, []Seq{{Tokens: []int32{1}, Pos: 0, Pages: []int32{last + 1}}})
	if !errors.Is(err, ErrBadBatch) {
		t.Fatalf("page %d past a %d-page pool: err %v, want ErrBadBatch", last+1, pool.Pages(), err)
	}
}
