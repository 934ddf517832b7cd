package kvcache

import (
	"errors"
	"testing"
)

func TestOwnershipCheck(t *testing.T) {
	const ps = 4
	cases := []struct {
		name string
		// setup returns the table to check and the step's pos and n.
		setup func(t *testing.T, p *Pool) (pt *PageTable, pos, n int)
		want  Violation // 0: the check passes
	}{
		{"own written pages pass", func(t *testing.T, p *Pool) (*PageTable, int, int) {
			a := p.NewTable()
			writeTokens(t, p, a, 0, seq(1, 6))
			_ = p.Reserve(a, 7)
			return a, 6, 1
		}, 0},
		{"stale epoch fails", func(t *testing.T, p *Pool) (*PageTable, int, int) {
			a := p.NewTable()
			writeTokens(t, p, a, 0, seq(1, 4))
			stale := &PageTable{owner: a.owner, entries: []Entry{a.Entry(0)}} // a kept copy
			p.Free(a)
			b := p.NewTable() // the page is reallocated
			writeTokens(t, p, b, 0, seq(1, 4))
			return stale, 4, 0
		}, ViolationStaleEpoch},
		{"slot beyond written fails", func(t *testing.T, p *Pool) (*PageTable, int, int) {
			a := p.NewTable()
			writeTokens(t, p, a, 0, seq(1, 5)) // page 1 has one written slot
			_ = p.Reserve(a, 8)
			return a, 7, 1 // claims positions 5 and 6 hold KV
		}, ViolationUnwritten},
		{"foreign page fails", func(t *testing.T, p *Pool) (*PageTable, int, int) {
			a := p.NewTable()
			writeTokens(t, p, a, 0, seq(1, 4))
			thief := p.NewTable()
			thief.entries = []Entry{a.Entry(0)}
			return thief, 4, 0
		}, ViolationForeign},
		{"sentinel page 0 fails", func(t *testing.T, p *Pool) (*PageTable, int, int) {
			pt := p.NewTable()
			pt.entries = []Entry{{Page: 0, Epoch: 0}}
			return pt, 0, 1
		}, ViolationSentinel},
		{"page beyond pool fails", func(t *testing.T, p *Pool) (*PageTable, int, int) {
			pt := p.NewTable()
			pt.entries = []Entry{{Page: 99, Epoch: 1}}
			return pt, 0, 1
		}, ViolationRange},
		{"freed page fails", func(t *testing.T, p *Pool) (*PageTable, int, int) {
			a := p.NewTable()
			writeTokens(t, p, a, 0, seq(1, 4))
			kept := &PageTable{owner: a.owner, entries: []Entry{a.Entry(0)}}
			p.Free(a)
			return kept, 4, 0
		}, ViolationFreed},
		{"write into shared page fails", func(t *testing.T, p *Pool) (*PageTable, int, int) {
			a := p.NewTable()
			writeTokens(t, p, a, 0, seq(1, 4))
			p.Cache(a, "s", seq(1, 4))
			return a, 3, 1
		}, ViolationSharedWrite},
		{"shared page read without a reference fails", func(t *testing.T, p *Pool) (*PageTable, int, int) {
			a := p.NewTable()
			writeTokens(t, p, a, 0, seq(1, 4))
			p.Cache(a, "s", seq(1, 4))
			other := p.NewTable()
			other.entries = []Entry{a.Entry(0)}
			return other, 4, 0
		}, ViolationForeign},
		{"shared page read by a holder passes", func(t *testing.T, p *Pool) (*PageTable, int, int) {
			a := p.NewTable()
			writeTokens(t, p, a, 0, seq(1, 8))
			p.Cache(a, "s", seq(1, 8))
			b := p.NewTable()
			if got, _ := p.MatchPrefix(b, "s", seq(1, 9)); got != 8 {
				t.Fatalf("matched %d tokens, want 8", got)
			}
			_ = p.Reserve(b, 9)
			return b, 8, 1
		}, 0},
		{"step beyond reserved pages fails", func(t *testing.T, p *Pool) (*PageTable, int, int) {
			a := p.NewTable()
			writeTokens(t, p, a, 0, seq(1, 4))
			return a, 4, 1
		}, ViolationNotReserved},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPool(t, 8, ps)
			pt, pos, n := tc.setup(t, p)
			before := p.OwnershipFailures()
			pages, err := p.AppendStepPages(nil, pt, pos, n)
			failed := p.OwnershipFailures() - before
			if tc.want == 0 {
				if err != nil || failed != 0 || len(pages) != p.PagesFor(pos+n) {
					t.Fatalf("check = %v (%d failures, %d pages), want pass", err, failed, len(pages))
				}
				return
			}
			var oe *OwnershipError
			if !errors.As(err, &oe) || !errors.Is(err, ErrOwnership) || oe.Reason != tc.want {
				t.Fatalf("check = %v, want %s", err, tc.want)
			}
			if failed != 1 || pages != nil {
				t.Fatalf("failure counted %d times, pages %v; want 1 and none", failed, pages)
			}
		})
	}
}

func TestCommitMakesSlotsReadable(t *testing.T) {
	p := newTestPool(t, 4, 4)
	a := p.NewTable()
	_ = p.Reserve(a, 6)
	if _, err := p.AppendStepPages(nil, a, 6, 0); !errors.Is(err, ErrOwnership) {
		t.Fatalf("reading uncommitted slots = %v, want ErrOwnership", err)
	}
	if err := p.Commit(a, 0, 6); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendStepPages(nil, a, 6, 0); err != nil {
		t.Fatalf("reading committed slots = %v", err)
	}
	p.Free(a)
	mustDrain(t, p)
}

func TestStaleTableCannotFreeAnotherOwnersPage(t *testing.T) {
	p := newTestPool(t, 1, 4)
	a := p.NewTable()
	_ = p.Reserve(a, 4)
	stale := &PageTable{owner: a.owner, entries: []Entry{a.Entry(0)}} // a kept copy
	p.Free(a)
	b := p.NewTable()
	writeTokens(t, p, b, 0, seq(5, 4))
	p.Free(stale)
	if got := readTokens(t, p, b, 4); got[0] != 5 || p.FreePages() != 0 {
		t.Fatalf("stale Free released a live page (free %d)", p.FreePages())
	}
	p.Free(b)
	mustDrain(t, p)
}
