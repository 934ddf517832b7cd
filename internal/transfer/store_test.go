package transfer

import (
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// fakeStore is a tiny pool: physical pages of K and V per layer.
type fakeStore struct {
	l        Layout
	k16, v16 [][]uint16 // [layer*pages+page]
	k32, v32 [][]float32
	pages    int
}

func newFakeStore(l Layout, pages int) *fakeStore {
	s := &fakeStore{l: l, pages: pages}
	n := l.PageSize * l.KVDim
	for range l.Layers * pages {
		s.k16, s.v16 = append(s.k16, make([]uint16, n)), append(s.v16, make([]uint16, n))
		s.k32, s.v32 = append(s.k32, make([]float32, n)), append(s.v32, make([]float32, n))
	}
	return s
}

func (s *fakeStore) PageF16(layer, page int) (k, v []uint16) {
	return s.k16[layer*s.pages+page], s.v16[layer*s.pages+page]
}

func (s *fakeStore) PageF32(layer, page int) (k, v []float32) {
	return s.k32[layer*s.pages+page], s.v32[layer*s.pages+page]
}

// The adapters move a request's prompt slots from its physical pages on one
// pool to different physical pages on another, and leave the tail of a
// partial page alone.
func TestStoreAdaptersMovePromptSlotsBetweenPools(t *testing.T) {
	for _, dt := range []gguf.Type{gguf.F16, gguf.F32} {
		t.Run(dt.String(), func(t *testing.T) {
			l := Layout{PageSize: 4, DType: dt, Layers: 2, KVDim: 3}
			tokens := 6 // page 1 holds 2 of 4 slots
			prefill, decode := newFakeStore(l, 5), newFakeStore(l, 5)
			srcPages, dstPages := []int32{3, 1}, []int32{2, 4}
			for layer := range l.Layers {
				for i, pg := range srcPages {
					k16, v16 := prefill.PageF16(layer, int(pg))
					k32, v32 := prefill.PageF32(layer, int(pg))
					for j := range k16 {
						x := layer*1000 + i*100 + j
						k16[j], v16[j], k32[j], v32[j] = uint16(x), uint16(x+50), float32(x)+0.5, -float32(x)
					}
				}
				for _, pg := range dstPages {
					k16, _ := decode.PageF16(layer, int(pg))
					k32, _ := decode.PageF32(layer, int(pg))
					for j := range k16 {
						k16[j], k32[j] = 7777, 7777 // another tenant's leftovers
					}
				}
			}
			src := StoreSource{Store: prefill, DType: dt, KVDim: l.KVDim, Pages: srcPages}
			sink := StoreSink{Store: decode, DType: dt, KVDim: l.KVDim, Pages: dstPages}
			for layer := range l.Layers {
				for page := range srcPages {
					slots := l.slots(tokens, page)
					b, err := src.AppendKV(nil, layer, page, slots)
					if err != nil {
						t.Fatal(err)
					}
					if len(b) != l.blockBytes(slots) {
						t.Fatalf("source gave %d bytes, want %d", len(b), l.blockBytes(slots))
					}
					if err := sink.WriteKV(layer, page, slots, b); err != nil {
						t.Fatal(err)
					}
				}
			}
			for layer := range l.Layers {
				for i := range srcPages {
					n := l.slots(tokens, i) * l.KVDim
					sk16, sv16 := prefill.PageF16(layer, int(srcPages[i]))
					dk16, dv16 := decode.PageF16(layer, int(dstPages[i]))
					sk32, sv32 := prefill.PageF32(layer, int(srcPages[i]))
					dk32, dv32 := decode.PageF32(layer, int(dstPages[i]))
					for j := range dk16 {
						if j < n {
							if dt == gguf.F16 && (dk16[j] != sk16[j] || dv16[j] != sv16[j]) {
								t.Fatalf("layer %d page %d elem %d: F16 differs", layer, i, j)
							}
							if dt == gguf.F32 && (dk32[j] != sk32[j] || dv32[j] != sv32[j]) {
								t.Fatalf("layer %d page %d elem %d: F32 differs", layer, i, j)
							}
						} else if dk16[j] != 7777 || dk32[j] != 7777 {
							t.Fatalf("layer %d page %d elem %d past the prompt was overwritten", layer, i, j)
						}
					}
				}
			}
			if _, err := src.AppendKV(nil, 0, 2, 4); err == nil {
				t.Fatal("source read a page outside its table")
			}
			if err := sink.WriteKV(0, 0, 4, make([]byte, 3)); err == nil {
				t.Fatal("sink accepted a short block")
			}
		})
	}
}
