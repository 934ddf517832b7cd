package kvcache

import (
	"testing"
)

// TestSteadyDecodeAllocatesNothing pins that a decode step's pool work —
// Reserve, the ownership check (AppendStepPages), Commit, and sealing a full
// page into the prefix cache — allocates nothing once the table has room.
func TestSteadyDecodeAllocatesNothing(t *testing.T) {
	const ps, total = 16, 256
	p := newTestPool(t, total/ps+1, ps)
	pt := p.NewTable()
	p.GrowTable(pt, total)
	toks := seq(1, total)
	writeTokens(t, p, pt, 0, toks[:8])
	pos := 8
	buf := make([]int32, 0, total/ps)
	step := func() {
		if err := p.Reserve(pt, pos+1); err != nil {
			t.Fatal(err)
		}
		var err error
		if buf, err = p.AppendStepPages(buf[:0], pt, pos, 1); err != nil {
			t.Fatal(err)
		}
		if err := p.Commit(pt, pos, 1); err != nil {
			t.Fatal(err)
		}
		pos++
		p.Cache(pt, "salt", toks[:pos])
	}
	const runs = 4
	allocs := testing.AllocsPerRun(runs, func() { // a page's worth of steps: one page sealed, one taken
		for range ps {
			step()
		}
	})
	if want := pos / ps; pt.Cached() != want || pt.Len() != want+1 {
		t.Fatalf("after %d tokens the table has %d pages, %d cached; want %d, %d", pos, pt.Len(), pt.Cached(), want+1, want)
	}
	if allocs != 0 {
		t.Fatalf("a page's worth of decode steps allocated %v times, want 0", allocs)
	}
	p.Free(pt)
	mustDrain(t, p)
}

// TestReusedParentSlotDoesNotMatch: a cached block's entry records its
// parent's generation. When the parent's page is evicted and sealed again
// for another block, its entry slot is reused; even a hash collision that
// leads the lookup to the old child must not hand it out, since its KV
// was computed after the old parent's tokens.
func TestReusedParentSlotDoesNotMatch(t *testing.T) {
	const ps = 4
	p := newTestPool(t, 3, ps)
	parent, child, other := seq(10, ps), seq(50, ps), seq(90, ps)
	cachedSeq(t, p, "a", append(append([]int32{}, parent...), child...))
	p.mu.Lock()
	old := p.cache.lruHead // the parent, freed first
	if old == nil || !old.matches(nil, false, "a", parent) {
		p.mu.Unlock()
		t.Fatal("the parent block is not at the head of the LRU list")
	}
	p.evictLocked(old)
	p.mu.Unlock()
	cachedSeq(t, p, "a", other) // takes the parent's page, and its slot
	p.mu.Lock()
	reused := p.cache.entries[p.cache.key(nil, false, "a", other)]
	if reused != old {
		p.mu.Unlock()
		t.Fatal("the new block did not take the evicted parent's slot; the test needs it to")
	}
	// Collide the key of (other, child) with the old child's key.
	want := p.cache.key(reused, false, "a", child)
	var childKey [32]byte
	for k, e := range p.cache.entries {
		if e != reused {
			childKey = k
		}
	}
	p.cache.hashHook = func(k [32]byte) [32]byte {
		if k == want {
			return childKey
		}
		return k
	}
	p.mu.Unlock()
	b, n := match(t, p, "a", append(append(append([]int32{}, other...), child...), 1))
	if n != ps {
		t.Fatalf("matched %d tokens, want %d: the old child was reached through a reused parent slot", n, ps)
	}
	p.Free(b)
	mustDrain(t, p)
}
