package kvcache

import (
	"errors"
	"math"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// kvStore mirrors model.KVStore so the method set is checked here without
// importing the model package; the engine asserts the real interface.
type kvStore interface {
	PageSize() int
	DType() gguf.Type
	PageF16(layer, page int) (k, v []uint16)
	PageF32(layer, page int) (k, v []float32)
}

var _ kvStore = (*Pool)(nil)

func TestReserveNeverHandsOutSentinelOrDuplicates(t *testing.T) {
	p := newTestPool(t, 6, 4)
	seen := map[int32]bool{}
	for range 3 {
		pt := p.NewTable()
		if err := p.Reserve(pt, 8); err != nil {
			t.Fatal(err)
		}
		for i := range pt.Len() {
			n := pt.Entry(i).Page
			if n == 0 || seen[n] {
				t.Fatalf("page %d handed out (sentinel or twice)", n)
			}
			seen[n] = true
		}
	}
	extra := p.NewTable()
	if err := p.Reserve(extra, 1); !errors.Is(err, ErrOutOfPages) {
		t.Fatalf("Reserve on a full pool = %v, want ErrOutOfPages", err)
	}
	if extra.Len() != 0 {
		t.Fatalf("failed Reserve left %d pages in the table", extra.Len())
	}
}

func TestReserveIsAllOrNothing(t *testing.T) {
	p := newTestPool(t, 4, 4)
	a := p.NewTable()
	if err := p.Reserve(a, 12); err != nil {
		t.Fatal(err)
	}
	b := p.NewTable()
	if err := p.Reserve(b, 8); !errors.Is(err, ErrOutOfPages) {
		t.Fatalf("Reserve = %v, want ErrOutOfPages", err)
	}
	if b.Len() != 0 || p.FreePages() != 1 {
		t.Fatalf("partial allocation: table %d pages, %d free", b.Len(), p.FreePages())
	}
	p.Free(a)
	mustDrain(t, p)
}

func TestReallocationBumpsEpoch(t *testing.T) {
	p := newTestPool(t, 1, 4)
	a := p.NewTable()
	_ = p.Reserve(a, 1)
	first := a.Entry(0)
	p.Free(a)
	b := p.NewTable()
	_ = p.Reserve(b, 1)
	second := b.Entry(0)
	if first.Page != second.Page || second.Epoch <= first.Epoch {
		t.Fatalf("reallocated page %v after %v: want same page, newer epoch", second, first)
	}
	p.Free(b)
	mustDrain(t, p)
}

func TestPoisonFreedFillsPagesWithNaN(t *testing.T) {
	for _, dt := range []gguf.Type{gguf.F16, gguf.F32} {
		t.Run(dt.String(), func(t *testing.T) {
			p, err := New(Config{PageSize: 4, DType: dt, Layers: 2, KVDim: 3, Tokens: 8, PoisonFreed: true})
			if err != nil {
				t.Fatal(err)
			}
			pt := p.NewTable()
			_ = p.Reserve(pt, 4)
			n := int(pt.Entry(0).Page)
			p.Free(pt)
			for l := range 2 {
				if dt == gguf.F16 {
					k, v := p.PageF16(l, n)
					if k[0]&0x7c00 != 0x7c00 || k[0]&0x3ff == 0 || v[len(v)-1] != k[0] {
						t.Fatalf("layer %d: freed F16 page holds %#x, want NaN", l, k[0])
					}
				} else {
					k, v := p.PageF32(l, n)
					if !math.IsNaN(float64(k[0])) || !math.IsNaN(float64(v[len(v)-1])) {
						t.Fatalf("layer %d: freed F32 page holds %v, want NaN", l, k[0])
					}
				}
			}
		})
	}
}

func TestPageViewsAreDisjoint(t *testing.T) {
	p := newTestPool(t, 3, 4)
	k1, v1 := p.PageF32(0, 1)
	k2, _ := p.PageF32(0, 2)
	if len(k1) != 4*2 || cap(k1) != len(k1) {
		t.Fatalf("page view len %d cap %d, want 8 and 8", len(k1), cap(k1))
	}
	for i := range k1 {
		k1[i], v1[i] = 7, 9
	}
	for _, x := range k2 {
		if x != 0 {
			t.Fatal("writing page 1 changed page 2")
		}
	}
}
