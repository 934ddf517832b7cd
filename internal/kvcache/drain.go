package kvcache

import (
	"errors"
	"fmt"
)

// CheckDrained asserts accounting (DESIGN I7) for a pool no request holds:
// every page is on the free list exactly once or is an unreferenced,
// unleased cache page awaiting eviction; no reference or lease remains; page
// 0 was never handed out. It reports every violation it finds.
func (p *Pool) CheckDrained() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	if p.pages[0].state != stateSentinel {
		errs = append(errs, errors.New("sentinel page 0 was handed out"))
	}
	onList := make([]bool, len(p.pages))
	for _, n := range p.free {
		switch {
		case n <= 0 || int(n) >= len(p.pages):
			errs = append(errs, fmt.Errorf("free list holds page %d", n))
			continue
		case onList[n]:
			errs = append(errs, fmt.Errorf("page %d is on the free list twice", n))
		case p.pages[n].state != stateFree:
			errs = append(errs, fmt.Errorf("page %d is on the free list in state %d", n, p.pages[n].state))
		}
		onList[n] = true
	}
	evictable := 0
	for n := 1; n < len(p.pages); n++ {
		pg := &p.pages[n]
		if r := pg.refs(); r != 0 || pg.leases != 0 {
			errs = append(errs, fmt.Errorf("page %d: refcount %d, leases %d", n, r, pg.leases))
		}
		switch pg.state {
		case stateFree:
			if !onList[n] {
				errs = append(errs, fmt.Errorf("free page %d is missing from the free list", n))
			}
		case stateShared:
			if pg.entry == nil || !pg.entry.inLRU {
				errs = append(errs, fmt.Errorf("cached page %d is not evictable", n))
			}
			evictable++
		default:
			errs = append(errs, fmt.Errorf("page %d still in state %d", n, pg.state))
		}
	}
	if evictable != p.cache.evictable {
		errs = append(errs, fmt.Errorf("evictable count %d, found %d", p.cache.evictable, evictable))
	}
	if len(errs) > 0 {
		return fmt.Errorf("kvcache: pool not drained: %w", errors.Join(errs...))
	}
	return nil
}

// FreePages is the length of the free list (cached pages excluded).
func (p *Pool) FreePages() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free)
}

// CachedPages is the number of pages held by the prefix cache, referenced or
// not.
func (p *Pool) CachedPages() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.cache.entries)
}
