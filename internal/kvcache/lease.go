package kvcache

import (
	"errors"
	"fmt"
)

// ErrLease is returned for a lease that cannot be taken or released.
var ErrLease = errors.New("kvcache: bad lease")

// Lease pins one page while a transfer reads or writes it: the page does not
// return to the free list, and is not evicted, until the lease is released,
// even if its page table is freed first.
type Lease struct {
	Entry Entry
}

// Lease pins entry i of t, which must currently be valid for t.
func (p *Pool) Lease(t *PageTable, i int) (Lease, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i < 0 || i >= len(t.entries) {
		return Lease{}, fmt.Errorf("kvcache: lease entry %d of %d: %w", i, len(t.entries), ErrLease)
	}
	e := t.entries[i]
	if e.Page <= 0 || int(e.Page) >= len(p.pages) {
		return Lease{}, fmt.Errorf("kvcache: lease page %d: %w", e.Page, ErrLease)
	}
	pg := &p.pages[e.Page]
	held := pg.state == stateOwned && pg.owner == t.owner
	if pg.state == stateShared {
		held = pg.holders.has(t.owner)
	}
	if pg.epoch != e.Epoch || !held {
		return Lease{}, fmt.Errorf("kvcache: lease page %d epoch %d not held by owner %d: %w", e.Page, e.Epoch, t.owner, ErrLease)
	}
	pg.leases++
	return Lease{Entry: e}, nil
}

// Release ends a lease. The page returns to the free list (or becomes an
// evictable cache page) if nothing else references it.
func (p *Pool) Release(l Lease) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := l.Entry.Page
	if n <= 0 || int(n) >= len(p.pages) || p.pages[n].epoch != l.Entry.Epoch || p.pages[n].leases == 0 {
		return fmt.Errorf("kvcache: release page %d epoch %d: no such lease: %w", n, l.Entry.Epoch, ErrLease)
	}
	pg := &p.pages[n]
	pg.leases--
	if pg.leases > 0 {
		return nil
	}
	switch pg.state {
	case stateOrphan:
		p.pushFreeLocked(n)
	case stateShared:
		p.maybeEvictableLocked(n)
	}
	return nil
}
