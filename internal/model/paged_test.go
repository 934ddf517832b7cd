package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// TestPagedMatchesContiguous runs the same prompt and decode with the KV
// in one contiguous run of slots and scattered over shuffled pages of 1,
// 16 and 256 slots: the logits must be identical.
func TestPagedMatchesContiguous(t *testing.T) {
	m := buildModel(t, testShape(), gguf.F16, 5, 2)
	rng := rand.New(rand.NewPCG(9, 9))
	tokens := randomTokens(rng, 70, m.Config.Vocab)
	run := func(pageSize, pages int, table []int32) [][]float32 {
		kv, err := NewSimpleKV(&m.Config, pages, pageSize, gguf.F32)
		if err != nil {
			t.Fatal(err)
		}
		out := runPrompt(t, m, kv, table, tokens[:50], 50)
		decoded := runPromptFrom(t, m, kv, table, tokens, 50)
		return append(out, decoded...)
	}
	want := run(len(tokens), 1, []int32{0})
	for _, ps := range []int{1, 16, 256} {
		n := (len(tokens) + ps - 1) / ps
		table := pagesFor(rng, map[int32]bool{}, n, 3*n)
		got := run(ps, 3*n, table)
		for i := range want {
			if k, ok := sameBits(want[i], got[i]); !ok {
				t.Fatalf("page size %d, token %d: logit %d is %v, contiguous %v", ps, i, k, got[i][k], want[i][k])
			}
		}
	}
}

// runPromptFrom decodes tokens[from:] one at a time after a prefill of
// tokens[:from], returning each step's logits.
func runPromptFrom(t *testing.T, m *Model, kv KVStore, pages []int32, tokens []int32, from int) [][]float32 {
	t.Helper()
	var out [][]float32
	for i := from; i < len(tokens); i++ {
		res, err := m.Forward(kv, []Seq{{Tokens: tokens[i : i+1], Pos: i, Pages: pages}})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, append([]float32(nil), res[0]...))
	}
	return out
}

// TestKVPageLayout checks where Forward writes: position i's key row must
// be in Pages[i/PageSize] at slot i%PageSize, and no other page changes.
func TestKVPageLayout(t *testing.T) {
	m := buildModel(t, testShape(), gguf.F32, 5, 1)
	kv, _ := NewSimpleKV(&m.Config, 6, 4, gguf.F32)
	table := []int32{4, 1, 3}
	if _, err := m.Forward(kv, []Seq{{Tokens: []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, Pages: table}}); err != nil {
		t.Fatal(err)
	}
	K := m.Config.KVDim()
	for l := 0; l < m.Config.Layers; l++ {
		for p := 0; p < 6; p++ {
			k, v := kv.PageF32(l, p)
			slots := 0
			switch p {
			case 4, 1:
				slots = 4
			case 3:
				slots = 2
			}
			for s := 0; s < 4; s++ {
				nonzero := false
				for _, x := range k[s*K : (s+1)*K] {
					nonzero = nonzero || x != 0
				}
				for _, x := range v[s*K : (s+1)*K] {
					nonzero = nonzero || x != 0
				}
				if nonzero != (s < slots) {
					t.Errorf("layer %d page %d slot %d: written=%v, want %v", l, p, s, nonzero, s < slots)
				}
			}
		}
	}
}

// TestStalePageContentsAreNeverRead fills every slot of the store with NaN
// (what a previous owner's leftovers could be at worst) before a sequence
// uses it: the logits must equal those over a zeroed store, bit for bit,
// since pages are not cleared between requests.
func TestStalePageContentsAreNeverRead(t *testing.T) {
	m := buildModel(t, testShape(), gguf.Q8_0, 5, 2)
	rng := rand.New(rand.NewPCG(2, 2))
	tokens := randomTokens(rng, 45, m.Config.Vocab)
	for _, dt := range []gguf.Type{gguf.F16, gguf.F32} {
		clean, _ := NewSimpleKV(&m.Config, 8, 8, dt)
		dirty, _ := NewSimpleKV(&m.Config, 8, 8, dt)
		for l := 0; l < m.Config.Layers; l++ {
			for p := 0; p < 8; p++ {
				if dt == gguf.F16 {
					k, v := dirty.PageF16(l, p)
					for i := range k {
						k[i], v[i] = 0x7e00, 0x7e00 // NaN
					}
				} else {
					k, v := dirty.PageF32(l, p)
					for i := range k {
						k[i], v[i] = float32(math.NaN()), float32(math.NaN())
					}
				}
			}
		}
		pages := []int32{6, 2, 7, 0, 3, 5}
		want := runPrompt(t, m, clean, pages, tokens, 13)
		got := runPrompt(t, m, dirty, pages, tokens, 13)
		for i := range want {
			if k, ok := sameBits(want[i], got[i]); !ok {
				t.Fatalf("%s KV, token %d: logit %d is %v over stale pages, %v over clean ones", dt, i, k, got[i][k], want[i][k])
			}
		}
	}
}

// TestSimpleKVHoldsKVBytesPerToken checks the sizing helper against the
// store's real allocation: pages × page size × KVBytesPerToken.
func TestSimpleKVHoldsKVBytesPerToken(t *testing.T) {
	c := &Config{Layers: 3, KVHeads: 2, HeadDim: 8}
	for _, dt := range []gguf.Type{gguf.F16, gguf.F32} {
		kv, err := NewSimpleKV(c, 5, 4, dt)
		if err != nil {
			t.Fatal(err)
		}
		got := 2 * len(kv.f16)
		if dt == gguf.F32 {
			got = 4 * len(kv.f32)
		}
		if want := 5 * 4 * c.KVBytesPerToken(dt); got != want {
			t.Errorf("%s: store holds %d bytes, KVBytesPerToken says %d", dt, got, want)
		}
	}
	if _, err := NewSimpleKV(c, 5, 4, gguf.Q8_0); err == nil {
		t.Error("NewSimpleKV accepted a Q8_0 cache")
	}
}

// TestAttentionInSeveralPassesMatchesOnePass shrinks the attention scratch
// budget so every sequence of a batch is attended in its own pass: the
// logits must not change.
func TestAttentionInSeveralPassesMatchesOnePass(t *testing.T) {
	m := buildModel(t, testShape(), gguf.F16, 3, 2)
	rng := rand.New(rand.NewPCG(5, 5))
	var seqs []Seq
	used := map[int32]bool{}
	for i, n := range []int{7, 1, 30, 2} {
		seqs = append(seqs, Seq{Tokens: randomTokens(rng, n, m.Config.Vocab), Pages: pagesFor(rng, used, (n+3)/4, 40), AllLogits: i%2 == 0})
	}
	run := func() [][]float32 {
		kv, _ := NewSimpleKV(&m.Config, 40, 4, gguf.F16)
		out, err := m.Forward(kv, seqs)
		if err != nil {
			t.Fatal(err)
		}
		var cp [][]float32
		for _, o := range out {
			cp = append(cp, append([]float32(nil), o...))
		}
		return cp
	}
	want := run()
	saved := attnBudget
	attnBudget = 1
	defer func() { attnBudget = saved }()
	got := run()
	for i := range want {
		if k, ok := sameBits(want[i], got[i]); !ok {
			t.Fatalf("sequence %d: logit %d is %v in several passes, %v in one", i, k, got[i][k], want[i][k])
		}
	}
}
