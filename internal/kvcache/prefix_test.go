package kvcache

import (
	"slices"
	"testing"
)

// cachedSeq writes tokens for a new table, caches them under salt
// and frees the table, leaving the full blocks in the cache.
func cachedSeq(t *testing.T, p *Pool, salt string, toks []int32) {
	t.Helper()
	a := p.NewTable()
	writeTokens(t, p, a, 0, toks)
	p.Cache(a, salt, toks)
	p.Free(a)
}

func match(t *testing.T, p *Pool, salt string, toks []int32) (*PageTable, int) {
	t.Helper()
	b := p.NewTable()
	n, err := p.MatchPrefix(b, salt, toks)
	if err != nil {
		t.Fatal(err)
	}
	return b, n
}

func TestPrefixCacheSameSaltHits(t *testing.T) {
	p := newTestPool(t, 8, 4)
	cachedSeq(t, p, "tenant-a", seq(10, 10))
	b, n := match(t, p, "tenant-a", seq(10, 11))
	if n != 8 {
		t.Fatalf("matched %d tokens, want 8 (two whole blocks)", n)
	}
	if got := readTokens(t, p, b, 8); !slices.Equal(got, seq(10, 8)) {
		t.Fatalf("shared pages hold %v, want %v", got, seq(10, 8))
	}
	c, n2 := match(t, p, "tenant-a", seq(10, 11))
	if n2 != 8 || c.Entry(0) != b.Entry(0) {
		t.Fatalf("second hit matched %d tokens on %v, want the same pages", n2, c.Entry(0))
	}
	p.Free(b)
	p.Free(c)
	mustDrain(t, p)
}

func TestPrefixCacheOtherSaltMisses(t *testing.T) {
	p := newTestPool(t, 8, 4)
	cachedSeq(t, p, "tenant-a", seq(10, 10))
	b, n := match(t, p, "tenant-b", seq(10, 11))
	if n != 0 || b.Len() != 0 {
		t.Fatalf("tenant-b matched %d tokens of tenant-a's prefix", n)
	}
	mustDrain(t, p)
}

func TestPrefixCacheComparesTokensOnEveryHit(t *testing.T) {
	p := newTestPool(t, 8, 4)
	p.cache.hashHook = func([32]byte) [32]byte { return [32]byte{42} } // every key collides
	cachedSeq(t, p, "a", seq(10, 4))
	for _, tc := range []struct {
		name string
		salt string
		toks []int32
	}{
		{"other tokens", "a", seq(20, 5)},
		{"other salt", "b", seq(10, 5)},
		{"one token differs", "a", append(append(seq(10, 3), 99), 0)},
	} {
		if b, n := match(t, p, tc.salt, tc.toks); n != 0 {
			t.Fatalf("%s: forced collision matched %d tokens", tc.name, n)
		} else {
			p.Free(b)
		}
	}
	b, n := match(t, p, "a", seq(10, 5))
	if n != 4 {
		t.Fatalf("the genuine prefix matched %d tokens, want 4", n)
	}
	p.Free(b)
	mustDrain(t, p)
}

func TestPrefixCacheForcedCollisionOnLaterBlockMisses(t *testing.T) {
	p := newTestPool(t, 8, 4)
	p.cache.hashHook = func(k [32]byte) [32]byte { return [32]byte{} }
	// Same second block after a different first block: only the parent differs.
	cachedSeq(t, p, "a", append(seq(10, 4), seq(50, 4)...))
	b, n := match(t, p, "a", append(append(seq(30, 4), seq(50, 4)...), 1))
	if n != 0 {
		t.Fatalf("matched %d tokens through a colliding parent", n)
	}
	p.Free(b)
	mustDrain(t, p)
}

func TestPrefixCachePublicPrefixShared(t *testing.T) {
	p := newTestPool(t, 8, 4)
	system := seq(100, 8)
	if err := p.MarkPublic(system); err != nil {
		t.Fatal(err)
	}
	cachedSeq(t, p, "tenant-a", append(slices.Clone(system), seq(1, 4)...))
	b, n := match(t, p, "tenant-b", append(slices.Clone(system), seq(1, 5)...))
	if n != 8 {
		t.Fatalf("tenant-b matched %d tokens, want the 8 public ones only", n)
	}
	if got := readTokens(t, p, b, 8); !slices.Equal(got, system) {
		t.Fatalf("public pages hold %v", got)
	}
	p.Free(b)
	c, n := match(t, p, "tenant-a", append(slices.Clone(system), seq(1, 5)...))
	if n != 12 {
		t.Fatalf("tenant-a matched %d tokens, want its own 12", n)
	}
	p.Free(c)
	mustDrain(t, p)
}

func TestPrefixCacheEvictsLeastRecentlyUsed(t *testing.T) {
	p := newTestPool(t, 4, 4)
	for _, s := range []int{10, 20, 30} { // released in order 10, 20, 30
		cachedSeq(t, p, "a", seq(s, 4))
	}
	hot, _ := match(t, p, "a", seq(10, 5)) // touch 10: now 20 is the oldest
	p.Free(hot)
	x := p.NewTable()
	if err := p.Reserve(x, 8); err != nil { // one free page plus one eviction
		t.Fatal(err)
	}
	for _, tc := range []struct {
		start, want int
	}{{10, 4}, {20, 0}, {30, 4}} {
		b, n := match(t, p, "a", seq(tc.start, 5))
		if n != tc.want {
			t.Fatalf("prefix %d matched %d tokens, want %d", tc.start, n, tc.want)
		}
		p.Free(b)
	}
	p.Free(x)
	mustDrain(t, p)
}

func TestMatchPrefixLeavesTheLastTokenToRun(t *testing.T) {
	p := newTestPool(t, 4, 4)
	cachedSeq(t, p, "a", seq(10, 8))
	b, n := match(t, p, "a", seq(10, 8))
	if n != 4 {
		t.Fatalf("an 8-token prompt matched %d cached tokens, want 4", n)
	}
	p.Free(b)
	mustDrain(t, p)
}
