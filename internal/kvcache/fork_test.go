package kvcache

import (
	"errors"
	"slices"
	"testing"
)

// TestForksShareFullPagesAndCannotReadEachOthersPages builds what the API
// does for n > 1: the first choice computes the prompt and seals its full
// pages into the prefix cache; two forks match them, recompute the partial
// page's tokens into pages of their own and diverge. Each fork reads the
// shared pages and its own, and the ownership check (I2) refuses a fork
// whose table names a sibling's page past the fork point, or a write into
// a shared page.
func TestForksShareFullPagesAndCannotReadEachOthersPages(t *testing.T) {
	const ps, salt = 4, "tenant-a"
	p := newTestPool(t, 16, ps)
	prompt := seq(10, 10) // two full pages and two tokens of a third

	first := p.NewTable()
	writeTokens(t, p, first, 0, prompt)
	p.Cache(first, salt, prompt)
	if first.Cached() != 2 {
		t.Fatalf("first choice sealed %d pages, want 2", first.Cached())
	}

	forks := make([]*PageTable, 2)
	for i := range forks {
		f := p.NewTable()
		n, err := p.MatchPrefix(f, salt, prompt)
		if err != nil || n != 8 {
			t.Fatalf("fork %d matched %d tokens (%v), want 8", i, n, err)
		}
		// the partial page's tokens, recomputed, then the fork's own token
		writeTokens(t, p, f, 8, append(slices.Clone(prompt[8:]), int32(100*(i+1))))
		forks[i] = f
	}
	a, b := forks[0], forks[1]
	for i := range 2 {
		if a.Entry(i) != first.Entry(i) || b.Entry(i) != first.Entry(i) {
			t.Fatalf("page %d is not shared by all three tables", i)
		}
	}
	if a.Entry(2) == b.Entry(2) || a.Entry(2) == first.Entry(2) {
		t.Fatalf("the partial page is shared: %v %v %v", first.Entry(2), a.Entry(2), b.Entry(2))
	}
	if got := readTokens(t, p, a, 11); !slices.Equal(got, append(slices.Clone(prompt), 100)) {
		t.Fatalf("fork a reads %v", got)
	}
	if got := readTokens(t, p, b, 11); !slices.Equal(got, append(slices.Clone(prompt), 200)) {
		t.Fatalf("fork b reads %v", got)
	}

	refuse := func(what string, want Violation, f func() error) {
		t.Helper()
		before := p.OwnershipFailures()
		err := f()
		var oe *OwnershipError
		if !errors.As(err, &oe) || oe.Reason != want {
			t.Fatalf("%s: got %v, want %v", what, err, want)
		}
		if p.OwnershipFailures() != before+1 {
			t.Fatalf("%s: failure not counted", what)
		}
	}
	// Fork b's table forged to name fork a's page past the fork point.
	own := b.entries[2]
	b.entries[2] = a.entries[2]
	refuse("fork reads a sibling's page", ViolationForeign, func() error {
		_, err := p.AppendStepPages(nil, b, 11, 1)
		return err
	})
	b.entries[2] = first.entries[2]
	refuse("fork reads the first choice's partial page", ViolationForeign, func() error {
		_, err := p.AppendStepPages(nil, b, 11, 1)
		return err
	})
	b.entries[2] = own
	refuse("fork writes into a shared prefix page", ViolationSharedWrite, func() error {
		_, err := p.AppendStepPages(nil, b, 6, 1)
		return err
	})
	if _, err := p.AppendStepPages(nil, b, 11, 1); err != nil {
		t.Fatalf("fork b's own table refused after the forgeries: %v", err)
	}

	for _, pt := range []*PageTable{first, a, b} {
		p.Free(pt)
	}
	mustDrain(t, p)
}
