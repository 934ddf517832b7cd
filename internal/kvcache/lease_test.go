package kvcache

import (
	"errors"
	"testing"
)

func TestLeasedPageNotFreedUntilLeaseReleased(t *testing.T) {
	p := newTestPool(t, 2, 4)
	a := p.NewTable()
	writeTokens(t, p, a, 0, seq(1, 8))
	l, err := p.Lease(a, 1)
	if err != nil {
		t.Fatal(err)
	}
	p.Free(a)
	if p.FreePages() != 1 {
		t.Fatalf("%d pages free while one is leased, want 1", p.FreePages())
	}
	if err := p.CheckDrained(); err == nil {
		t.Fatal("CheckDrained passed with a lease outstanding")
	}
	b := p.NewTable()
	if err := p.Reserve(b, 8); !errors.Is(err, ErrOutOfPages) {
		t.Fatalf("Reserve took the leased page: %v", err)
	}
	if err := p.Release(l); err != nil {
		t.Fatal(err)
	}
	if err := p.Release(l); !errors.Is(err, ErrLease) {
		t.Fatalf("second Release = %v, want ErrLease", err)
	}
	mustDrain(t, p)
}

func TestLeasedCachePageIsNotEvicted(t *testing.T) {
	p := newTestPool(t, 2, 4)
	a := p.NewTable()
	writeTokens(t, p, a, 0, seq(1, 4))
	p.Cache(a, "s", seq(1, 4))
	l, err := p.Lease(a, 0)
	if err != nil {
		t.Fatal(err)
	}
	p.Free(a)
	b := p.NewTable()
	if err := p.Reserve(b, 8); !errors.Is(err, ErrOutOfPages) {
		t.Fatalf("Reserve evicted a leased cache page: %v", err)
	}
	_ = p.Release(l)
	if err := p.Reserve(b, 8); err != nil {
		t.Fatalf("after release the cache page should be evictable: %v", err)
	}
	p.Free(b)
	mustDrain(t, p)
}

func TestLeaseRequiresAHeldPage(t *testing.T) {
	p := newTestPool(t, 2, 4)
	a := p.NewTable()
	_ = p.Reserve(a, 4)
	thief := p.NewTable()
	thief.entries = []Entry{a.Entry(0)}
	if _, err := p.Lease(thief, 0); !errors.Is(err, ErrLease) {
		t.Fatalf("lease on a foreign page = %v, want ErrLease", err)
	}
	p.Free(a)
	mustDrain(t, p)
}
